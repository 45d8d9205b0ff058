"""Two ingests that need the same new values (op codes, strings, cell tuples, places, shapes, rollup keys) never wait
on each other's file transaction on PostgreSQL: interned values are committed on a connection of their own
(:func:`warehouse.store.dialect.interns_apart`). Inside the file transactions they deadlocked: two ingests
inserting the same unique keys in other orders each waited on the other's. This is the mechanism, shown
deterministically; tests/test_concurrency.py's rounds look for any other race by chance."""
from __future__ import annotations

import threading
import time
from pathlib import Path

from sqlalchemy import Engine, text

from corpus import cases
from warehouse.runs.ingest import IngestResult, ingest_file
from warehouse.store.db import open_db


def _same_values_other_order(src: Path, folder: Path) -> tuple[Path, Path]:
    """The capture ``src`` and a copy with its rows reversed: the same new values, interned in the other order."""
    folder.mkdir(parents=True)
    lines = src.read_bytes().splitlines(keepends=True)
    first, second = folder / "ops_perf_results_first.csv", folder / "ops_perf_results_second.csv"
    first.write_bytes(b"".join(lines))
    second.write_bytes(lines[0] + b"".join(reversed(lines[1:])))
    return first, second


def _waits_on_a_lock(engine: Engine, thread: threading.Thread) -> bool:
    """Whether a session of this database waits on a lock (the server's own view, at once) before ``thread``
    ends; a thread alive after two minutes counts as waiting too."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        for _ in range(1200):
            if not thread.is_alive():
                return False
            if c.execute(text("SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "
                              "AND wait_event_type = 'Lock'")).scalar():
                return True
            time.sleep(0.1)
    return True


def test_an_open_ingest_never_holds_the_values_it_interned(pg_url, tmp_path):
    """The first ingest stops after its first batch, its file transaction open (its values interned); the
    second ingest, which needs every one of those values, runs to its end meanwhile."""
    first, second = _same_values_other_order(cases()["dlv3_same"], tmp_path / "files")
    engine = open_db(pg_url)
    inside, release = threading.Event(), threading.Event()
    done: dict[str, IngestResult | BaseException] = {}

    def hold(_bytes_read: int) -> None:  # (the first ingest's progress: called after each stored batch)
        if not inside.is_set():
            inside.set()
            release.wait(120)

    def ingest(name: str, path: Path, **kw) -> None:
        try:
            done[name] = ingest_file(engine, path, worker=False, **kw)
        except BaseException as e:  # (kept for the assertion below: a thread's error is otherwise lost)
            done[name] = e

    a = threading.Thread(target=ingest, args=("first", first), kwargs={"progress": hold})
    a.start()
    try:
        assert inside.wait(120), "the first ingest never stored a batch"
        b = threading.Thread(target=ingest, args=("second", second))
        b.start()
        waited = _waits_on_a_lock(engine, b)
    finally:
        release.set()
        a.join(120)
    b.join(120)
    engine.dispose()
    assert not waited, "the second ingest waited on the first one's open file transaction"
    assert isinstance(done["first"], IngestResult) and isinstance(done["second"], IngestResult), done
    assert done["first"].ops == done["second"].ops > 0
