"""Folder ingest on several cores (``warehouse ingest --jobs N``).

PostgreSQL takes concurrent writers: each worker process ingests its files straight into the warehouse (the
interning of :mod:`warehouse.runs.ingest` is built for that). SQLite has one writer at a time, and an ingest holds
the write lock for its whole parse, so there each worker ingests its file into a private *scratch* warehouse
(the same code: the same rows, attribution, rollups and warnings) and the main process moves each finished run
into the warehouse in one short transaction (:func:`merge_run`) while the workers parse the next files.

On SQLite runs get their ids in the order of the files, whatever order the workers finish in; on PostgreSQL in
the order the workers commit (history orders runs by capture time, not id). A file that fails is reported and
the others still go, and results are reported in file order, as in a sequential ingest.

The workers are a :func:`warehouse.workers.pool.worker_pool`.
"""
from __future__ import annotations

import contextlib

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Connection, Engine
from sqlalchemy.exc import DBAPIError

from warehouse.store import dialect
from warehouse.store import schema as t
from warehouse.errors import WarehouseError
from warehouse.runs.ingest import IngestResult
from warehouse.workers import threads
from warehouse.workers.pool import BrokenProcessPool, worker_pool
from warehouse.store.interning import Interner
from warehouse.runs.ingest import ingest_file
from warehouse.capture.rowprep import RowSource
from warehouse.store.db import open_db
from warehouse.store import runseries

# Parallel only pays off when there is real work to share: worker start-up costs about half a second.
AUTO_MIN_FILES = 2
AUTO_MIN_BYTES = 64 * 2**20

# How each table of the schema moves from a scratch warehouse into the warehouse. A new table must be added
# here (a test checks that every table is): run-owned rows are copied with the new run id, interned rows are
# matched by their natural key, and references are rewritten through the mappings built on the way.
_INTERNED = ("op_code", "perf_shape", "place", "text_value", "cell_tuple", "rollup_key")
_RUN_OWNED = ("run", "run_tag", "run_column", "run_warning", "section", "signpost", "op", "cell_chunk", "rollup_row",
              "run_report", "perf_tensor")
# derived from the merged rows with the warehouse's own key ids (the scratch one's are others): built again
_REBUILT = ("run_series",)
# written by people (`warehouse triage`) or once for the warehouse, never by an ingest: nothing to merge
_NOT_INGESTED = ("triage", "warehouse_meta")
MERGED_TABLES = frozenset(_INTERNED + _RUN_OWNED + _REBUILT + _NOT_INGESTED)


SCRATCH_PREFIX = ".warehouse-scratch-"
_STALE_S = 24 * 3600  # a scratch folder without a live owner's pid in its name is left this long


def clean_scratch(folder: str) -> list[str]:
    """Remove the scratch folders that a killed ``ingest --jobs`` left in ``folder``: those whose owner process
    (its pid is in the name) no longer runs, and nameless ones a day old. Returns what was removed."""
    import time

    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for e in entries:
        if not e.name.startswith(SCRATCH_PREFIX) or not e.is_dir(follow_symlinks=False):
            continue
        pid_s = e.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        if pid_s.isdigit():
            try:
                os.kill(int(pid_s), 0)
                continue  # its owner still runs
            except ProcessLookupError:
                pass
            except PermissionError:
                continue  # another user's live process
        else:
            try:
                if time.time() - e.stat(follow_symlinks=False).st_mtime < _STALE_S:
                    continue
            except OSError:
                continue
        shutil.rmtree(e.path, ignore_errors=True)
        removed.append(e.path)
    return removed


def auto_jobs(sizes: list[int]) -> int:
    """The default ``--jobs``: every core for a folder with several files and real work, else one."""
    if len(sizes) >= AUTO_MIN_FILES and sum(sizes) >= AUTO_MIN_BYTES:
        return max(1, min(threads.cores(), len(sizes)))
    return 1


def _work(url: URL, scratch: str | None, path: str, label: str | None, tags: dict[str, str] | None,
          freq_mhz: float | None) -> tuple[str, Any, str | None]:
    """One file, in a worker process: ``("ok", IngestResult, scratch db)`` or ``("error", message, ...)``."""

    db: URL | str = url
    if scratch is not None:  # SQLite: a private copy of the empty scratch warehouse
        fd, path_ = tempfile.mkstemp(suffix=".db", dir=os.path.dirname(scratch))
        os.close(fd)
        shutil.copyfile(scratch, path_)
        db = path_
    try:
        engine = open_db(db)
        try:
            # (the worker processes already use every core: each reads its file itself)
            res = ingest_file(engine, Path(path), label=label, tags=tags, freq_mhz=freq_mhz, worker=False)
            return "ok", res, (str(db) if scratch is not None else None)
        finally:
            engine.dispose()
    except (WarehouseError, OSError) as e:  # OSError: the scratch copy (a full disk)
        return "error", str(e), (str(db) if scratch is not None else None)


def ingest_parallel(engine: Engine, files: list[Path], jobs: int, *, label: str | None = None,
                    tags: dict[str, str] | None = None,
                    freq_mhz: float | None = None) -> Iterator[tuple[Path, IngestResult | WarehouseError]]:
    """Ingest ``files`` with ``jobs`` worker processes; yields ``(file, result or error)`` in file order."""
    sqlite = not dialect.is_postgres(engine)
    # scratch warehouses beside the warehouse: the disk the user chose for it, not a small /tmp
    near = os.path.dirname(engine.url.database or "") if sqlite else None
    clean_scratch(near or tempfile.gettempdir())
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=near or None) as tmp:
        scratch = None
        if sqlite:
            scratch = os.path.join(tmp, "empty.db")
            open_db(scratch).dispose()  # the schema once; each file gets a copy
        with worker_pool(jobs) as pool:
            # A window of files in flight, not all of them: finished scratch warehouses wait on disk for their
            # turn to move in, and the window bounds how many do.
            futures: list[Future] = []

            def submit(upto: int) -> None:
                while len(futures) < min(upto, len(files)):
                    futures.append(pool.submit(_work, engine.url, scratch, str(files[len(futures)]), label, tags,
                                               freq_mhz))
            for k, f in enumerate(files):
                submit(k + 2 * jobs)
                try:
                    status, value, db = futures[k].result()
                except BrokenProcessPool:
                    # a worker died (killed, out of memory, or a main module that spawn cannot import): the
                    # files not done yet go in here, one after the other
                    sys.stderr.write("Warning: a worker process died; the remaining files are ingested one "
                                     "at a time\n")
                    yield from sequential(engine, files[k:], label, tags, freq_mhz)
                    return
                try:
                    if status == "error":
                        yield f, WarehouseError(value)
                    elif db is not None and not value.existing:
                        yield f, _merged(engine, Path(db), value)
                    else:
                        yield f, value
                finally:
                    if db is not None:
                        for p in (db, db + "-wal", db + "-shm"):
                            Path(p).unlink(missing_ok=True)


def _merged(engine: Engine, db: Path, value: IngestResult) -> IngestResult | WarehouseError:
    """A worker's finished run moved in from its scratch warehouse ``db``, or this file's error."""
    try:
        return merge_run(engine, db, value)
    except DBAPIError as e:  # locked past the busy timeout, disk full...: this file only
        return WarehouseError(f"{value.path}: {dialect.explain(e)}")
    except WarehouseError as e:
        return e
    except Exception as e:  # anything else is this file's failure, never the command's
        return WarehouseError(f"{value.path}: could not be moved into the warehouse "
                              f"({type(e).__name__}: {' '.join(str(e).split())[:300]}); nothing of it was stored")


def ingest_files(engine: Engine, files: list[Path], jobs: int, *, label: str | None = None,
                 tags: dict[str, str] | None = None, freq_mhz: float | None = None,
                 progress: Callable[[Path, int], None] | None = None, ahead: RowSource | None = None
                 ) -> Iterator[tuple[Path, IngestResult | WarehouseError]]:
    """``(file, IngestResult or WarehouseError)`` in file order: in ``jobs`` worker processes when there are
    several files, else one after the other in this process, calling ``progress(file, bytes read)`` as each
    streams (the CLI's bar and the API both come here). ``ahead``: a file's reader started already
    (:func:`warehouse.capture.rowprep.read_ahead`), used by its ingest."""
    if jobs > 1 and len(files) > 1:
        return ingest_parallel(engine, files, min(jobs, len(files)), label=label, tags=tags, freq_mhz=freq_mhz)
    return sequential(engine, files, label, tags, freq_mhz, progress, ahead)


def sequential(engine: Engine, files: list[Path], label: str | None, tags: dict[str, str] | None,
               freq_mhz: float | None, progress: Callable[[Path, int], None] | None = None,
               ahead: RowSource | None = None) -> Iterator[tuple[Path, IngestResult | WarehouseError]]:
    """The same results as :func:`ingest_parallel`, one file after the other in this process."""

    for f in files:
        each = (lambda n, f=f: progress(f, n)) if progress else None
        source = ahead if ahead is not None and ahead.path == Path(f) else None
        try:
            yield f, ingest_file(engine, f, label=label, tags=tags, freq_mhz=freq_mhz, progress=each, worker=source)
        except WarehouseError as e:
            yield f, e


def merge_run(engine: Engine, src: Path, result: IngestResult) -> IngestResult:
    """Move the one run of the scratch warehouse ``src`` into the SQLite warehouse of ``engine``, whole or not
    at all; content already stored gives ``existing=True`` (two copies of a file in one folder)."""
    with engine.connect().execution_options(write=True) as conn:
        raw: Any = conn.connection.dbapi_connection
        raw.execute("ATTACH DATABASE ? AS src", (str(src),))  # outside the transaction, as SQLite requires
        try:
            with conn.begin():
                run_id, existing = _merge(conn)
        except BaseException:
            # (a signal inside the transaction may leave the connection closed: a failing DETACH must not replace
            # what is on its way up, or a SIGTERM would read as this file's error and the command go on)
            with contextlib.suppress(Exception):
                raw.execute("DETACH DATABASE src")
            raise
        raw.execute("DETACH DATABASE src")
    return IngestResult(result.path, run_id, ops=result.ops, signposts=result.signposts, sections=result.sections,
                        seconds=result.seconds, existing=existing, warnings=result.warnings)


def _cols(table: str, skip: tuple[str, ...] = ("id",)) -> list[str]:
    return [c.name for c in t.metadata.tables[table].columns if c.name not in skip]


def _merge(conn: Connection) -> tuple[int, bool]:
    unknown = set(t.metadata.tables) - MERGED_TABLES
    if unknown:  # pragma: no cover - a schema change must say how its table merges
        raise WarehouseError(f"parallel ingest does not know how to merge table(s) {sorted(unknown)}")
    ex = conn.exec_driver_sql
    (sha,) = ex("SELECT sha256 FROM src.run").one()
    found = ex("SELECT id FROM main.run WHERE sha256 = ?", (sha,)).scalar()
    if found is not None:
        return found, True
    cols = _cols("run")
    run_id = ex(f"INSERT INTO main.run ({', '.join(cols)}) SELECT {', '.join(cols)} FROM src.run RETURNING id"
                ).scalar_one()

    def mapping(name: str, table: str, on: str, params: tuple = ()) -> None:
        """Temp table ``name``: each ``src`` id of ``table`` -> its id in the warehouse, matched ``on``."""
        ex(f"CREATE TEMP TABLE {name} (old INTEGER PRIMARY KEY, new INTEGER)")
        ex(f"INSERT INTO {name} SELECT s.id, m.id FROM src.{table} s JOIN main.{table} m ON {on}", params)

    # interned rows: matched by their natural key, inserted when new
    for table in ("op_code", "perf_shape", "place", "rollup_key"):
        cols = _cols(table)
        ex(f"INSERT OR IGNORE INTO main.{table} ({', '.join(cols)}) SELECT {', '.join(cols)} FROM src.{table}")
    mapping("m_code", "op_code", "m.name = s.name")
    mapping("m_rkey", "rollup_key", "m.digest = s.digest")
    mapping("m_shape", "perf_shape", "m.digest = s.digest")
    mapping("m_place", "place", "m.digest = s.digest")
    tensor_cols = _cols("perf_tensor", ("perf_shape_id",))
    ex(f"INSERT OR IGNORE INTO main.perf_tensor (perf_shape_id, {', '.join(tensor_cols)}) "
       f"SELECT m.new, {', '.join('p.' + c for c in tensor_cols)} FROM src.perf_tensor p "
       "JOIN m_shape m ON m.old = p.perf_shape_id")
    _merge_cell_tuples(conn)

    # run-owned rows, with the new run id and the references rewritten
    def copy(table: str, exprs: dict[str, str], joins: str = "", order: str = "") -> None:
        cols = _cols(table)
        sel = [exprs.get(c, f"x.{c}") for c in cols]
        ex(f"INSERT INTO main.{table} ({', '.join(cols)}) SELECT {', '.join(sel)} FROM src.{table} x {joins} "
           f"{order}", (run_id,))

    new_run = {"run_id": "?"}
    for table in ("run_tag", "run_column", "run_report"):  # run_report names op codes, not ids
        copy(table, new_run)
    copy("rollup_row", {**new_run, "key_id": "mk.new"}, "JOIN m_rkey mk ON mk.old = x.key_id")
    for table in ("run_warning", "section", "signpost"):
        copy(table, new_run, order="ORDER BY x.id")
    mapping("m_section", "section", "m.run_id = ? AND m.kind = s.kind AND m.name = s.name AND m.ordinal = s.ordinal "
            "AND m.start_row = s.start_row", (run_id,))
    copy("op", {**new_run, "section_id": "ms.new", "op_code_id": "mc.new", "perf_shape_id": "mp.new",
                "place_id": "mpl.new", "hist_place_id": "mph.new"},
         "LEFT JOIN m_section ms ON ms.old = x.section_id JOIN m_code mc ON mc.old = x.op_code_id "
         "LEFT JOIN m_shape mp ON mp.old = x.perf_shape_id LEFT JOIN m_place mpl ON mpl.old = x.place_id "
         "LEFT JOIN m_place mph ON mph.old = x.hist_place_id", "ORDER BY x.id")
    _merge_chunks(conn, run_id)
    for m in ("m_code", "m_rkey", "m_shape", "m_place", "m_tuple", "m_section"):
        ex(f"DROP TABLE temp.{m}")
    runseries.build(conn, run_id)
    return run_id, False


def _merge_chunks(conn: Connection, run_id: int) -> None:
    """The cell chunks, with the new run id and each row's cell tuple id rewritten (the cells stay as packed)."""
    ex = conn.exec_driver_sql
    new: dict[int, int] = dict(ex("SELECT old, new FROM temp.m_tuple").all())
    cols = _cols("cell_chunk")
    rows = []
    for r in ex(f"SELECT {', '.join(cols)} FROM src.cell_chunk ORDER BY first_row").mappings():
        d = dict(r)
        d["run_id"] = run_id
        d["static_ids"] = json.dumps([new[i] for i in json.loads(d["static_ids"])], separators=(",", ":"))
        rows.append(tuple(d[c] for c in cols))
    if rows:
        ex(f"INSERT INTO main.cell_chunk ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", rows)


def _merge_cell_tuples(conn: Connection) -> None:
    """Static cell tuples name their long strings by ``text_value`` id, so their JSON and digest depend on the
    warehouse: each tuple is read back to its strings and interned again, as ingest interns it."""

    ex = conn.exec_driver_sql
    texts: dict[int, str] = {i: v for i, v in ex("SELECT id, value FROM src.text_value").all()}
    rows = ex("SELECT id, cells FROM src.cell_tuple ORDER BY id").all()
    ex("CREATE TEMP TABLE m_tuple (old INTEGER PRIMARY KEY, new INTEGER)")
    items = [(old, [texts[c] if isinstance(c, int) else c for c in json.loads(cells)]) for old, cells in rows]
    pairs = []
    if items:  # one run, one header: every tuple has the same cells
        interner = Interner(conn)
        toks = [(old, interner.add_key(tuple(key))) for old, key in items]
        interner.resolve_pending()
        pairs = [(old, interner.ids[tok]) for old, tok in toks]
    if pairs:
        conn.connection.dbapi_connection.executemany(  # type: ignore[union-attr]
            "INSERT INTO temp.m_tuple VALUES (?, ?)", pairs)
