"""Crashes and upgrades lose nothing: SIGKILL during ingest, every earlier revision upgraded with data, check, rm."""
from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from corpus import cases
from warehouse.cli import cli
from warehouse.capture.synthetic import scale_csv

pytestmark = pytest.mark.slow  # (the slow tier: faults, kills and every revision's upgrade)


@pytest.fixture(scope="module")
def large_csv(tmp_path_factory):
    """A 30,000-op sectioned CSV: several insert chunks, a few seconds of ingest."""
    f = tmp_path_factory.mktemp("large") / "ops_perf_results_2026_02_01_02_00_00.csv"
    scale_csv(cases()["dlv3_same"], f, 30_000)
    return f


def _write_locked(db: Path) -> bool:
    """Whether a write transaction is open on ``db`` (a second writer cannot start one)."""
    probe = sqlite3.connect(db, timeout=0)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.rollback()
        return False
    except sqlite3.OperationalError as e:
        return "locked" in str(e)
    finally:
        probe.close()


def _read_bytes(pid: int) -> int:
    """Bytes the process and its children have read so far (Linux /proc/PID/io): ingest reads the file in a
    worker process (warehouse/capture/rowprep.py)."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        children = [int(c) for c in f.read().split()]
    total = 0
    for p in [pid, *children]:
        try:
            with open(f"/proc/{p}/io") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("rchar:"))
        except OSError:
            if p == pid:
                raise
    return total


def _state(pid: int) -> str:
    """A process's state letter (Z: exited, not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_sigkill_during_ingest(tmp_path, large_csv):
    """Ten SIGKILLs, each proven to land mid-ingest: the file is read twice by its reader process (scanned for
    line ends and quotes, then parsed, and hashed as it is, while the ingesting process inserts it in chunks of
    2,000 rows inside one transaction: no stored run has its size, so it is not hashed beforehand); each kill
    waits until the parse pass has read 55-85 % of the file (two chunks or more written) and the file's write
    transaction open. Nothing of it may remain."""
    db = tmp_path / "w.db"
    small = cases()["ttperfreport__bh20_oft_integral_image_trace"]
    assert CliRunner().invoke(cli, ["--db", str(db), "ingest", str(small)]).exit_code == 0
    size = large_csv.stat().st_size
    # what starting Python and importing the ingest code reads, measured: the kill point is past it
    start = int(subprocess.run([sys.executable, "-c", "import warehouse.cli, warehouse.runs.ingest, "
                                "sqlalchemy.dialects.sqlite; print(open('/proc/self/io').read().split()[1])"],
                               capture_output=True, text=True, check=True).stdout)
    rng = random.Random(11)
    landed = 0
    for _ in range(10):
        p = subprocess.Popen([sys.executable, "-m", "warehouse", "--db", str(db), "ingest", str(large_csv)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # of the parse pass: several 2,000-row batches inserted (the reader runs a batch or two ahead)
        frac = rng.uniform(0.55, 0.85)
        target = start + size + frac * size  # imports, the scan, then this far into the parse pass
        deadline = time.monotonic() + 120
        read = 0
        while p.poll() is None and time.monotonic() < deadline:
            try:
                read = _read_bytes(p.pid)
            except OSError:
                break
            # (and the file's transaction open: the reader may run ahead of it, forked before the writer's imports)
            if read >= target and _write_locked(db):
                break
            time.sleep(0.005)
        alive = p.poll() is None
        locked = alive and _write_locked(db)
        if alive:
            with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
                readers = [int(c) for c in f.read().split()]
            os.kill(p.pid, signal.SIGKILL)
            # the reading worker notices (its pipe breaks) and exits: no orphan left reading or waiting
            gone = time.monotonic() + 20
            while any(os.path.exists(f"/proc/{c}") and _state(c) != "Z" for c in readers) \
                    and time.monotonic() < gone:
                time.sleep(0.05)
            assert not [c for c in readers if os.path.exists(f"/proc/{c}") and _state(c) != "Z"], readers
        p.wait()
        con = sqlite3.connect(db)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        runs = con.execute("SELECT id, op_count FROM run").fetchall()
        ops = dict(con.execute("SELECT run_id, COUNT(*) FROM op GROUP BY run_id").fetchall())
        con.close()
        assert all(ops.get(rid, 0) == n for rid, n in runs), (runs, ops)  # no partial run
        assert set(ops) <= {rid for rid, _ in runs}
        if alive and locked and start + size * 1.5 < read < start + size * 1.95 and len(runs) == 1:
            landed += 1
        if len(runs) == 2:  # this attempt finished before the kill: start again from one run
            CliRunner().invoke(cli, ["--db", str(db), "rm", "--yes", str(runs[1][0])])
    print(f"\n{landed} of 10 kills landed mid-ingest")
    assert landed == 10
    r = CliRunner().invoke(cli, ["--db", str(db), "ingest", str(large_csv)])
    assert r.exit_code == 0 and "ops" in r.output
    assert CliRunner().invoke(cli, ["--db", str(db), "check"]).output.strip() == "warehouse ok"


def test_check_finds_problems(sqlite_db):
    def inv(*a):
        return CliRunner().invoke(cli, ["--db", sqlite_db, *map(str, a)])
    assert inv("ingest", cases()["dlv3_same"]).exit_code == 0
    assert inv("check").output.strip() == "warehouse ok"
    con = sqlite3.connect(sqlite_db)
    with con:
        con.execute("DELETE FROM op WHERE id IN (SELECT id FROM op LIMIT 3)")
        con.execute("UPDATE run SET signpost_count = 1")
        con.execute("INSERT INTO run_tag (run_id, key, value) VALUES (99, 'k', 'v')")
    con.close()
    r = inv("check")
    assert r.exit_code == 1
    assert "run 1: 771 op rows stored, the run says 774" in r.output
    assert "run 1: 84 signpost rows stored, the run says 1" in r.output
    assert "1 tags of missing runs" in r.output


def test_rm(db_url):
    def inv(*a, input=None):
        return CliRunner().invoke(cli, ["--db", db_url, *map(str, a)], input=input)
    inv("ingest", cases()["dlv3_same"])
    inv("ingest", cases()["segenc_notrace"])
    r = inv("rm", "1", input="n\n")  # CliRunner's stdin is not a terminal: refused, nothing deleted
    assert r.exit_code == 2 and "pass --yes" in r.output
    r = inv("rm", "7", "--yes")
    assert r.exit_code == 2 and r.output.startswith("Error: no run 7")
    r = inv("rm", "1", "--yes")
    assert r.exit_code == 0 and r.output.strip() == "deleted 1 run(s): 1"
    assert [x["id"] for x in json.loads(inv("runs", "--json").output)] == [2]
    from warehouse.store.db import open_db
    eng = open_db(db_url)
    with eng.connect() as c:
        from warehouse.store.schema import metadata
        for table in [n for n, tb in metadata.tables.items() if "run_id" in tb.c]:  # every table a run owns
            assert c.execute(text(f"SELECT COUNT(*) FROM {table} WHERE run_id = 1")).scalar() == 0, table
    eng.dispose()
    assert inv("check").exit_code == 0
    assert inv("report", "2", "-q").exit_code == 0


def test_rm_asks_on_a_terminal(sqlite_db, monkeypatch):
    CliRunner().invoke(cli, ["--db", sqlite_db, "ingest", str(cases()["dlv3_same"])])
    runner = CliRunner()
    monkeypatch.setattr("warehouse.cli.base._interactive", lambda: True)
    r = runner.invoke(cli, ["--db", sqlite_db, "rm", "1"], input="n\n")
    assert "Delete run(s) 1" in r.output and r.exit_code == 1  # aborted
    r = runner.invoke(cli, ["--db", sqlite_db, "rm", "1"], input="y\n")
    assert r.exit_code == 0 and "deleted 1 run(s)" in r.output


def test_ingest_memory_does_not_grow_with_the_file(tmp_path, large_csv):
    """Peak memory of a 4x larger file stays within a few MiB of the smaller one's (streaming, chunked)."""
    small = tmp_path / "ops_perf_results_2026_03_01_02_00_00.csv"
    scale_csv(cases()["dlv3_same"], small, 7_500)

    def peak_kib(f):
        p = subprocess.Popen([sys.executable, "-m", "warehouse", "--db", str(tmp_path / f"{f.stem}.db"), "ingest",
                              str(f)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)  # (reaped here: the Popen must know it ended)
        err = p.stderr.read() if p.stderr else b""
        if p.stderr:
            p.stderr.close()
        assert p.returncode == 0, err
        return usage.ru_maxrss
    a, b = peak_kib(small), peak_kib(large_csv)
    assert large_csv.stat().st_size > 3.5 * small.stat().st_size
    assert b - a < 16 * 1024, (a, b)  # KiB
