"""A cancelled ingest leaves no process behind: SIGKILL or SIGTERM (what a CI cancel sends) of `ingest --jobs 2`
and of a one-file ingest with its reading worker, at several points; its whole process tree (the command's own
session) is counted until it is empty."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpus import cases
from warehouse.capture.synthetic import KERNEL, scale_csv

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
              pytest.mark.slow]  # (the slow tier: killing ingests and their workers)


def _session(sid: int) -> list[int]:
    """The live (not zombie) processes of session ``sid``: the command started one of its own."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, session = fields[0], int(fields[3])
        if session == sid and state != "Z":
            out.append(int(d))
    return out


def _wait_until(cond, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Six distinct captures of about 10,000 ops each (several seconds of ingest for two workers)."""
    d = tmp_path_factory.mktemp("nightly")
    src = cases()["dlv3_same"]
    for k in range(6):
        def distinct(i: int, row: list[str], idx: dict[str, int], k: int = k) -> list[str]:
            cell = row[idx[KERNEL]]
            if cell:
                row[idx[KERNEL]] = str(int(float(cell)) + k)
            return row
        scale_csv(src, d / f"ops_perf_results_2026_03_0{k + 1}_02_00_00.csv", 10_000, distinct)
    return d


def _start(args: list[str], db: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "warehouse", "--db", str(db), *args], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _runs(db: Path) -> int:
    try:
        con = sqlite3.connect(db, timeout=30)
        try:
            return con.execute("SELECT COUNT(*) FROM run").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _kill_and_count(p: subprocess.Popen, sig: int) -> list[int]:
    """Send ``sig`` to the command alone (not its group: a CI runner signals the process it started), wait for
    it, then for its session to empty; the processes still alive after 20 s."""
    os.kill(p.pid, sig)
    p.wait(60)
    _wait_until(lambda: not _session(p.pid), 20)
    return _session(p.pid)


# when to kill: once the workers are up; once the first run is in (the main process merges while the workers
# parse); once most of the files are in
POINTS = {"workers up": lambda p, db: len(_session(p.pid)) >= 3,
          "first run stored": lambda p, db: _runs(db) >= 1,
          "three runs stored": lambda p, db: _runs(db) >= 3}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize("point", list(POINTS))
def test_a_cancelled_parallel_ingest_leaves_no_process(folder, tmp_path, sig, point):
    db = tmp_path / "w.db"
    p = _start(["ingest", str(folder), "--jobs", "2"], db)
    try:
        reached = _wait_until(lambda: p.poll() is None and POINTS[point](p, db), 120)
        if not reached:
            pytest.fail(f"the ingest ended before {point!r}: {p.stderr.read().decode() if p.stderr else ''}")
        seen = _session(p.pid)
        assert len(seen) >= 3, seen  # the command, its pool's workers (and the pool's resource tracker)
        left = _kill_and_count(p, sig)
        assert left == [], f"{len(left)} process(es) outlived the command: {left}"
        if sig == signal.SIGTERM:
            assert p.returncode == 143, p.stderr.read().decode() if p.stderr else ""
            # its scratch folder went with it
            assert not [e for e in os.listdir(tmp_path) if e.startswith(".warehouse-scratch-")]
        # what was stored is whole runs only
        con = sqlite3.connect(db)
        runs = dict(con.execute("SELECT id, op_count FROM run").fetchall())
        ops = dict(con.execute("SELECT run_id, COUNT(*) FROM op GROUP BY run_id").fetchall())
        con.close()
        assert runs == {k: ops.get(k, 0) for k in runs} and set(ops) <= set(runs)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        if p.stderr:
            p.stderr.close()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_cancelled_one_file_ingest_leaves_no_process(folder, tmp_path, sig):
    """One big file: its reading worker (forked) goes with the command too."""
    db = tmp_path / "w.db"
    big = sorted(folder.iterdir())[0]
    p = _start(["ingest", str(big)], db)
    try:
        assert _wait_until(lambda: p.poll() is None and len(_session(p.pid)) >= 2, 60), "no reading worker seen"
        left = _kill_and_count(p, sig)
        assert left == [], left
        assert _runs(db) == 0
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        if p.stderr:
            p.stderr.close()
