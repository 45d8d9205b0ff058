"""The end of an ingest on both cores (warehouse.workers.fork), and an ingest's inserts without SQLite's per-row
foreign-key checks (warehouse.store.db.write_tx(inserts_only=True)): the same stored run either way."""
from __future__ import annotations

import os
import sqlite3
import threading
import time

import pytest
from sqlalchemy import text

from corpus import cases
from warehouse.store import dialect
from warehouse.workers.fork import Aside
from warehouse.store.db import open_db, write_tx
from warehouse.errors import WarehouseError
from warehouse.runs.ingest import ingest_file


def test_aside_computes_in_a_forked_process():
    with Aside(os.getpid) as a:
        pid = a.result()
    assert pid is not None and pid != os.getpid()


def test_a_failing_child_gives_none_for_the_caller_to_compute():
    def boom() -> int:
        raise RuntimeError("no")
    with Aside(boom) as a:
        assert a.result() is None


def test_nothing_is_forked_from_a_process_that_runs_threads():
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        calls = []
        with Aside(lambda: calls.append(1)) as a:
            assert a.result() is None
        assert calls == []  # (not called here either: the caller computes)
    finally:
        stop.set()
        t.join()


def test_leaving_early_stops_the_child():
    t0 = time.monotonic()
    with Aside(lambda: time.sleep(60)) as a:
        assert a._child is not None
        pid = a._child.pid
    assert pid is not None and time.monotonic() - t0 < 30
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped


def test_ingest_inserts_without_per_row_key_checks_yet_every_key_holds(tmp_path, corpus_copy):
    """SQLite skips its foreign-key checks in an ingest's transaction only: the connection has them on again
    after it (also after a failed ingest), and every key of every corpus run points at a row."""
    eng = open_db(str(tmp_path / "w.db"))
    with write_tx(eng, inserts_only=True) as c:
        assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 0
    bad = tmp_path / "ops_perf_results_bad.csv"
    bad.write_text("OP CODE,DEVICE KERNEL DURATION [ns]\nA,1\nB,1,2\n")
    with pytest.raises(WarehouseError):
        ingest_file(eng, bad)
    for name in cases():
        ingest_file(eng, corpus_copy(name))
    with eng.connect() as c:
        assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert dialect.broken_foreign_keys(c) == []
        assert c.execute(text("SELECT COUNT(*) FROM op")).scalar() > 0
    # and the check sees a broken one (it is not a check that cannot fail)
    raw = sqlite3.connect(tmp_path / "w.db")  # (foreign keys off: the stdlib's default)
    raw.execute("UPDATE op SET op_code_id = 999999 WHERE id = (SELECT MIN(id) FROM op)")
    raw.commit()
    raw.close()
    with eng.connect() as c:
        assert len(dialect.broken_foreign_keys(c)) == 1
    eng.dispose()
