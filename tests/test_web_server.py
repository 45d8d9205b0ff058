"""The dashboard survives held connections: `warehouse serve` under a low file limit, with more connections opened
and left without their headers than it has descriptors; `/` still answers, and the log stays short."""
from __future__ import annotations

import resource
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from corpus import cases
from test_web_app import socket_free

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

FILE_LIMIT = 256


def _low_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


def _get(url: str, timeout: float = 5) -> int:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        r.read()
        return r.status


def test_held_connections_do_not_stop_the_dashboard(tmp_path):
    from warehouse import Warehouse
    db = str(tmp_path / "w.db")
    Warehouse(db).ingest(cases()["ttperfreport__bh20_oft_integral_image_trace"])
    with socket_free() as port:
        p = subprocess.Popen([sys.executable, "-m", "warehouse", "--db", db, "serve", "--port", str(port),
                              "--header-timeout", "3"], preexec_fn=_low_file_limit,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    held: list[socket.socket] = []
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                assert _get(base + "/") == 200
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        # more held connections than the server has descriptors, each with half a request line
        for _ in range(int(FILE_LIMIT * 1.5)):
            s = socket.socket()
            s.settimeout(5)
            try:
                s.connect(("127.0.0.1", port))
                s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # (never the blank line)
            except OSError:
                s.close()
                continue
            held.append(s)
        # the held ones are closed after the header timeout: `/` answers again while they are still held open
        answered = None
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:
            try:
                if _get(base + "/") == 200:
                    answered = time.monotonic() - t0
                    break
            except OSError:
                time.sleep(0.2)
        assert answered is not None, "the dashboard stopped answering"
        assert p.poll() is None
    finally:
        for s in held:
            s.close()
        p.terminate()
        try:
            _, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
    lines = err.decode(errors="replace").splitlines()
    assert len(lines) < 200, f"{len(lines)} log lines: {lines[:20]}"
    assert not any("Traceback" in ln for ln in lines[5:]), lines[:40]
