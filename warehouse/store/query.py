"""Read-only SQL over the warehouse, streamed with a time limit and a row cap, and the schema listing.

What a statement may do is decided by :mod:`warehouse.store.sqlguard` (read-only connection and an authorizer on
SQLite; PostgreSQL's parser, a read-only transaction and a SELECT-only role on PostgreSQL).
"""
from __future__ import annotations

import contextlib
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterator

from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import DBAPIError, ResourceClosedError, SQLAlchemyError

from warehouse.store import dialect, sqlguard
from warehouse.errors import UsageError
from warehouse.capture.packing import sqlar_uncompress
from warehouse.store.schema import TABLE_DOCS
from warehouse.store.views import VIEWS
from warehouse.store.roles import SANDBOX_ROLE, can_write
from warehouse.store.roles import ensure_sandbox
from warehouse.store.view_types import VIEW_TYPES

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_ROWS = 100_000
DEFAULT_MAX_VALUE_BYTES = 16 << 20     # one cell of a result (a chunk of cells is about 100 KiB)
DEFAULT_MAX_RESULT_BYTES = 512 << 20   # all cells of a result together
_FETCH = 1000
_FETCH_PG = 200  # rows per round trip of PostgreSQL's server-side cursor (bounds what one fetch can hold)


@dataclass
class SqlResult:
    """A statement's columns and its rows as they stream; ``truncated`` is set once the row cap stopped it."""

    columns: list[str]
    rows: Iterator[tuple]
    max_rows: int | None
    truncated: bool = field(default=False)


def _sql_error(e: BaseException, timeout_s: float | None, denied: str | None = None) -> UsageError:
    msg = " ".join(str(getattr(e, "orig", None) or e).split())
    low = msg.lower()
    if denied:  # the SQLite authorizer said no, and to what
        return sqlguard.refused(denied)
    if "interrupted" in low or "statement timeout" in low or "canceling statement" in low:
        return UsageError(f"the query ran longer than {timeout_s:g} s and was stopped; narrow it, or pass "
                          "--timeout")
    if isinstance(e, MemoryError):  # SQLite's heap bound (sqlguard.sqlite_heap_bound)
        return UsageError(f"the query needed more than the {sqlguard.HEAP_BUDGET >> 20} MiB of memory a statement "
                          "may use; aggregate less at once (fewer rows, or substr of large values)")
    if "user-defined function raised exception" in low:  # (sqlar_uncompress and printf are those that can)
        return UsageError("SQL error: a function was given a size over the value limit (sqlar_uncompress: data that "
                          "inflates past the size it was given, or a size over the limit; printf: a width or "
                          "precision over it); pass smaller sizes, or --max-value-bytes")
    if "too big" in low:  # SQLITE_LIMIT_LENGTH, set from max_value_bytes
        return UsageError(f"a value of the result is over the size limit ({msg}); select a part of it (substr) "
                          "or pass --max-value-bytes")
    if "not authorized" in low:
        return sqlguard.refused(msg)
    if "readonly" in low.replace(" ", "") or "read-only" in low:
        return UsageError(f"the warehouse is read-only through `warehouse sql` ({msg}); "
                          "use the warehouse commands to change it")
    if isinstance(e, DBAPIError) and dialect.sqlstate(e) == "42501":
        return UsageError(f"SQL error: {msg} (the role lacks this privilege)")
    return UsageError(f"SQL error: {msg}")


@contextlib.contextmanager
def _guarded(conn: Connection, timeout_s: float | None, auth: sqlguard.SqliteAuthorizer,
             max_value_bytes: int | None) -> Iterator[None]:
    """The back end's read-only guard, time limit and value bound around one statement."""
    deadline = time.monotonic() + timeout_s if timeout_s else None
    if dialect.name(conn) == "sqlite":
        raw: Any = conn.connection.dbapi_connection  # the sqlite3 connection
        raw.set_authorizer(auth)
        if deadline is not None:
            raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        # SQLite refuses to build a string or blob past this length (zeroblob(3e8) never takes 300 MB)
        old_length = raw.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
        if max_value_bytes:
            raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(max_value_bytes, 1 << 20))
        # the warehouse's own function is Python, which neither limit reaches: it inflates no further than the
        # same bound (nor past the size it is given)
        bound = raw.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
        raw.create_function("sqlar_uncompress", 2, lambda d, n: sqlar_uncompress(d, n, bound), deterministic=True)
        printf = sqlguard.bounded_printf(bound)
        for name in ("printf", "format"):
            raw.create_function(name, -1, printf, deterministic=True)
        try:
            with sqlguard.sqlite_heap_bound():
                yield
        finally:
            raw.set_authorizer(None)
            raw.set_progress_handler(None, 0)
            raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, old_length)
            # the bounded functions stay on this connection (SQLite cannot take an override back): it is closed
            # rather than returned to the pool, where the warehouse's own queries would meet them
            conn.invalidate()
        return
    # One snapshot, read-only from the first statement, with limits on time, locks and idling; then the rights
    # of a SELECT-only role, so that whatever the parser let through the server refuses.
    conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    ms = int(timeout_s * 1000) if timeout_s else 0
    conn.exec_driver_sql(f"SET LOCAL statement_timeout = {ms}")
    conn.exec_driver_sql(f"SET LOCAL lock_timeout = {min(ms, 10_000) if ms else 10_000}")
    conn.exec_driver_sql(f"SET LOCAL idle_in_transaction_session_timeout = {ms + 60_000 if ms else 600_000}")
    if can_write(conn):
        conn.exec_driver_sql(f"SET LOCAL ROLE {SANDBOX_ROLE}")
    yield


def _reset_pg(conn: Connection) -> None:
    """Before a connection that ran user SQL goes back to the pool: nothing of the session survives (settings,
    advisory locks, prepared statements, listeners); a connection that cannot be reset is closed instead."""
    try:
        raw: Any = conn.connection.dbapi_connection
        raw.rollback()
        raw.autocommit = True
        try:
            raw.execute("DISCARD ALL")
        finally:
            raw.autocommit = False
    except Exception:  # a broken connection: never reuse it
        conn.invalidate()


def _prepare_pg(engine: Engine) -> None:
    """A role that could write runs user SQL as the sandbox role; create it when it is missing (first use)."""

    with engine.connect() as conn:
        if not can_write(conn):
            return
    from sqlalchemy import create_engine
    writer = create_engine(engine.url)  # the read-only engine's connect options would refuse CREATE ROLE
    try:
        if not ensure_sandbox(writer):
            raise UsageError(
                "`warehouse sql` runs user SQL as a SELECT-only role, and this login may not create one: connect "
                "as a reader (`warehouse db create-reader ROLE`, run by the warehouse's owner), or run `warehouse "
                "db upgrade` once as a role with CREATEROLE")
    finally:
        writer.dispose()


def _check_size(v: Any, n: int, col: str, max_value_bytes: int | None) -> int:
    size = len(v) if isinstance(v, (str, bytes, bytearray, memoryview)) else 8
    if max_value_bytes and size > max_value_bytes:
        raise UsageError(f"row {n + 1}, column {col!r}: a value of {size:,} bytes, over the limit of "
                         f"{max_value_bytes:,}; select a part of it (substr) or pass --max-value-bytes")
    return size


@contextlib.contextmanager
def stream_sql(engine: Engine, sql: str, params: dict[str, Any] | None = None, *,
               timeout_s: float | None = DEFAULT_TIMEOUT_S, max_rows: int | None = DEFAULT_MAX_ROWS,
               max_value_bytes: int | None = DEFAULT_MAX_VALUE_BYTES,
               max_result_bytes: int | None = DEFAULT_MAX_RESULT_BYTES) -> Iterator[SqlResult]:
    """Run one read-only statement; yields its columns and a row iterator (fetched in batches, so memory does
    not follow the result's size). Stops after ``max_rows`` rows (``truncated``) or ``timeout_s`` seconds; a value
    over ``max_value_bytes`` or a result over ``max_result_bytes`` is a :class:`UsageError`."""
    if not sql.strip():
        raise UsageError("no SQL given (pass it as an argument or on standard input)")
    cursor = True
    pg = dialect.is_postgres(engine)
    if pg:
        cursor = sqlguard.check_postgres(sql)
        _prepare_pg(engine)
    auth = sqlguard.SqliteAuthorizer()
    fetch = _FETCH_PG if pg else _FETCH
    try:
        with engine.connect() as conn, _guarded(conn, timeout_s, auth, max_value_bytes):
            opts = conn.execution_options(stream_results=cursor, max_row_buffer=fetch)
            if params:
                result = opts.execute(text(sql), params)
            else:
                # the statement goes to the driver as written: no bind-parameter parsing, so ':stage1.block1' in
                # a string, ':x' in a comment and '%' are text (SQLAlchemy's text() would take ':word' for a
                # parameter wherever it stands)
                result = opts.execution_options(no_parameters=True).exec_driver_sql(sql)
            try:
                cols = list(result.keys())
            except ResourceClosedError:
                cols = []
            out = SqlResult(cols, iter(()), max_rows)

            def rows() -> Iterator[tuple]:
                if not cols:
                    return
                n = total = 0
                try:
                    for part in result.partitions(fetch):
                        for r in part:
                            if max_rows is not None and n >= max_rows:
                                out.truncated = True
                                return
                            total += sum(_check_size(v, n, c, max_value_bytes) for v, c in zip(r, cols))
                            if max_result_bytes and total > max_result_bytes:
                                raise UsageError(f"the result passed {max_result_bytes:,} bytes at row {n + 1}; "
                                                 "select fewer rows or columns, or pass --max-result-bytes")
                            n += 1
                            yield tuple(r)
                except (DBAPIError, MemoryError) as e:
                    raise _sql_error(e, timeout_s, auth.denied) from None
            out.rows = rows()
            try:
                yield out
            finally:
                result.close()
                conn.rollback()
                if pg:
                    _reset_pg(conn)
    except (DBAPIError, MemoryError) as e:
        raise _sql_error(e, timeout_s, auth.denied) from None
    except SQLAlchemyError as e:
        raise UsageError(f"SQL error: {e}") from None


def _type_name(t: Any) -> str:
    """A column's SQL type; SQLite declares none for view columns ('' rather than NULL)."""
    from sqlalchemy.types import NullType
    return "" if t is None or isinstance(t, NullType) else str(t)


def describe_schema(engine: Engine) -> list[dict[str, Any]]:
    """Tables and views with their columns: ``[{"name", "type": table|view, "doc", "columns": [...]}]``. A view's
    column types are the declared ones (:mod:`warehouse.store.view_types`), the same on both back ends."""

    docs = {name: doc for name, doc, _ in VIEWS}
    insp = inspect(engine)
    out = []
    for kind, names in (("table", insp.get_table_names()), ("view", insp.get_view_names())):
        for name in sorted(names):
            if name == "alembic_version":
                continue
            declared = ({"hash": "TEXT"} if name == "warehouse_views" else VIEW_TYPES.get(name, {})) \
                if kind == "view" else {}  # (warehouse_views: the views' version stamp)
            cols = [{"name": c["name"], "type": declared.get(c["name"]) or _type_name(c.get("type"))}
                    for c in insp.get_columns(name)]
            out.append({"name": name, "type": kind, "doc": docs.get(name, TABLE_DOCS.get(name, "")),
                        "columns": cols})
    return out
