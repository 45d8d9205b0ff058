"""tt-perf-report 1.4.1 run on this machine (``$WAREHOUSE_TTPERF``, its venv's executable; .ci/run installs it),
for the tests that compare `warehouse perf` with it live (equal timestamps sort as this machine's numpy sorts them).

Every call goes to one process of its venv that stays for the test session (a pytest worker's): tt-perf-report's
``main()`` with the call's arguments, as its executable runs it. Its imports (pandas) take 2.5 s of a core, and the
suite asks for some seventy reports, so one process instead of seventy saves minutes. Its module state between
calls holds only constants and the set of op names it has warned about (cleared before each call); what the tests
read is the CSV files it writes.
"""
from __future__ import annotations

import atexit
import json
import os
import subprocess
from pathlib import Path

TTPERF = os.environ.get("WAREHOUSE_TTPERF")  # tt-perf-report 1.4.1's executable (.ci/run installs it)

# One line of JSON a call (its arguments), one line back (its exit status); the report it prints is dropped
_SERVE = r"""
import contextlib, io, json, sys, traceback
from tt_perf_report import perf_report
reply = sys.stdout
for line in sys.stdin:
    perf_report._UNCLASSIFIED_OPS_WARNED.clear()
    sys.argv = ["tt-perf-report", *json.loads(line)]
    status, err = 0, ""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            perf_report.main()
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 1
    except Exception:
        status, err = 1, traceback.format_exc()
    reply.write(json.dumps([status, err]) + "\n")
    reply.flush()
"""

_server: subprocess.Popen | None = None


def _started() -> subprocess.Popen:
    global _server
    if _server is None or _server.poll() is not None:
        assert TTPERF, "WAREHOUSE_TTPERF is not set"
        python = Path(TTPERF).parent / "python"
        _server = subprocess.Popen([str(python), "-c", _SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
        atexit.register(_server.kill)
    return _server


def run(*args: object) -> None:
    """tt-perf-report with these arguments (paths as they are given); raises when it fails."""
    server = _started()
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(json.dumps([str(a) for a in args]) + "\n")
    server.stdin.flush()
    line = server.stdout.readline()
    if not line:
        raise RuntimeError(f"tt-perf-report's process ended on {args}")
    status, err = json.loads(line)
    if status:
        raise RuntimeError(f"tt-perf-report {' '.join(map(str, args))} exited {status}\n{err}")
