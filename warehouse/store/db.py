"""Engines, SQLite pragmas, transactions and the Alembic schema lifecycle.

``open_db`` is the only way the rest of the package gets an engine: it creates a new database at head, refuses
one that is behind (naming ``warehouse db upgrade``), and on SQLite turns on WAL and a busy timeout so that
concurrent nightly jobs wait for each other instead of failing.
"""
from __future__ import annotations

import contextlib
import os
import stat
import sys
import urllib.parse
from pathlib import Path
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

if TYPE_CHECKING:
    from alembic.config import Config

from warehouse.store import dialect
from warehouse.store.cells import register_sqlite_functions
from warehouse.errors import SchemaOutdated, UsageError, WarehouseError
from warehouse.store.lite import sqlite_path
from warehouse.store.revisions import DEFAULT_DB, head_revision_fast, known_revisions, migrations_dir
from warehouse.store.lite import STALE_VIEWS
from warehouse.store.schema import metadata
from warehouse.workers.fork import Aside, can_fork
from warehouse.store.views import create_views, drop_views, views_current
from warehouse.store.views import not_a_view

BUSY_TIMEOUT_MS = 120_000
_LOCK_ID = 0x77617265  # PostgreSQL advisory lock that serialises schema creation / upgrade


def resolve_url(db: str | URL | None) -> URL:
    """A SQLAlchemy URL for ``--db``: a URL as is, else a SQLite file path (default ``warehouse.store.db``).

    A path becomes a URL object, never a string to parse again: ``?``, ``#`` and ``%`` are legal in file names
    and must not turn into a query string, a fragment or an escape."""
    if isinstance(db, URL):
        return db
    db = db or os.environ.get("WAREHOUSE_DB") or DEFAULT_DB
    if "://" in db:
        try:
            return make_url(db)
        except (ArgumentError, ValueError) as e:
            raise UsageError(f"{db!r} is not a valid database URL: {e}", param="url") from None
    return URL.create("sqlite", database=str(sqlite_path(db)))


def display(url: URL) -> str:
    """A URL as a person reads it: a SQLite file as its path, other URLs without the password."""
    if url.get_backend_name() == "sqlite" and url.database and not url.database.startswith("file:"):
        return url.database
    return url.render_as_string(hide_password=True)


def alembic_config(url: str | URL, connection: Connection | None = None) -> Config:
    """An Alembic config for ``url`` (and an open connection to run on, when given)."""
    from alembic.config import Config

    if isinstance(url, URL):
        url = url.render_as_string(hide_password=False)
    cfg = Config(stdout=sys.stdout)  # the stream of now: Alembic binds its default at import time
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    """The newest revision this code knows, as Alembic sees it."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    if head is None:  # pragma: no cover - the package always ships its revisions
        raise WarehouseError("the Alembic migrations are missing from this installation; reinstall the package")
    return head


def check_revision_arg(revision: str, *, allow_base: bool = False) -> None:
    """Refuse a ``--revision`` this code does not know, naming the ones it does."""
    known = known_revisions()
    ok = known + ["head"] + (["base"] if allow_base else [])
    if revision not in ok:
        raise UsageError(f"{revision!r}: unknown revision; expected one of {', '.join(ok)}", param="revision")


def _sqlite_pragmas(dbapi_conn: Any, _record: object) -> None:
    # isolation_level None: the driver must not open transactions behind our back; we emit BEGIN ourselves.
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys = ON")
    try:
        cur.execute("PRAGMA journal_mode = WAL")
    except Exception:  # a read-only file cannot switch modes; reads work regardless
        pass
    cur.execute("PRAGMA synchronous = NORMAL")
    # 8 MiB: an ingest appends to its indexes in file order, which a small cache serves as fast (measured); a
    # larger one only added to the memory of a million-op ingest
    cur.execute("PRAGMA cache_size = -8192")
    cur.close()
    register_sqlite_functions(dbapi_conn)


def _sqlite_begin(conn: Connection) -> None:
    # A writer takes the write lock up front (BEGIN IMMEDIATE), so that two writers queue on busy_timeout
    # instead of one failing with "database is locked" when it upgrades a read lock.
    mode = "BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN"
    conn.exec_driver_sql(mode)


def _check_sqlite_path(path: str) -> None:
    """A SQLite warehouse is a regular file (or none yet) in an existing folder: never a FIFO, a device such as
    /dev/null, or a folder."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        if not p.parent.is_dir():
            raise UsageError(f"folder {p.parent} does not exist; create it or pass another --db") from None
        return
    except OSError as e:
        raise UsageError(f"{path}: cannot be read ({e.strerror})", param="url") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise UsageError(f"{path} is {kind}; pass the path of a warehouse file (or a new one)", param="url")


def sqlite_unwritable(path: str) -> bool:
    """Whether this process cannot write a SQLite warehouse file or its folder (a read-only share, a read-only
    mount, another user's folder): it can still be read, read-only."""
    p = Path(path)
    return p.exists() and (not os.access(p, os.W_OK) or not os.access(p.parent, os.W_OK))


def pg_options(u: URL, readonly: bool = False) -> str:
    """The PostgreSQL session options of the warehouse's connections, after any the URL gives (``?options=``).
    JIT is off: PostgreSQL compiles a query with LLVM once its estimated cost passes ``jit_above_cost``, and the
    warehouse's statements are wide (a lossless cell view has hundreds of expressions): once the planner's
    statistics said a capture was big, compiling cost 30x the query (a 3,141-op capture's family views read in
    99 s instead of 3; with JIT on every statement, its ingest took 168 s instead of 4). Server-side cursors are
    planned to be read whole (``cursor_tuple_fraction``): the warehouse reads every row it streams, and planned
    for their first tenth its reads took nested loops (the history series written at ingest: 0.13 s a 2,640-op
    capture instead of 0.04)."""
    given = u.query.get("options")
    opts = [given] if isinstance(given, str) else list(given or ())
    opts.append("-c jit=off -c cursor_tuple_fraction=1")
    if readonly:
        opts.append("-c default_transaction_read_only=on")
    return " ".join(opts)


def make_engine(url: str | URL | None, readonly: bool = False) -> Engine:
    """An engine for ``url``; SQLite gets WAL, a busy timeout and explicit BEGIN handling."""
    u = resolve_url(url)
    if u.get_backend_name() == "sqlite":
        path = u.database
        if path and path != ":memory:" and not path.startswith("file:"):
            _check_sqlite_path(path)
            if readonly:
                if not Path(path).exists():
                    raise UsageError(f"no warehouse at {path}: run `warehouse ingest` or `warehouse db upgrade`")
                # The read-only URI, with the path escaped: '?', '#' and '%' are legal in file names. In a folder
                # that cannot be written, WAL cannot make its -shm file: open it immutable (nobody can write it
                # there), unless a -wal file still holds pages that only WAL readers see.
                wal = Path(path + "-wal")
                immutable = (not os.access(Path(path).parent, os.W_OK)
                             and not (wal.exists() and wal.stat().st_size > 0))
                u = URL.create("sqlite", database=f"file:{urllib.parse.quote(path)}?mode=ro"
                               + ("&immutable=1" if immutable else ""), query={"uri": "true"})
        engine = create_engine(u)
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    kwargs = {}
    if u.get_backend_name() == "postgresql":
        kwargs["connect_args"] = {"options": pg_options(u, readonly)}
    try:
        return create_engine(u, pool_pre_ping=True, **kwargs)
    except (ModuleNotFoundError, NoSuchModuleError) as e:
        raise UsageError(f"no database driver for {u.drivername} ({e}); for PostgreSQL: "
                         "pip install 'tt-profile-warehouse[postgres]' and use postgresql+psycopg://") from None


@contextlib.contextmanager
def write_tx(engine: Engine, inserts_only: bool = False) -> Iterator[Connection]:
    """One write transaction: committed whole on success, rolled back whole on any error.

    ``inserts_only`` (ingest) says the transaction deletes nothing that other rows reference and writes only ids
    it found or made itself: SQLite then skips its foreign-key checks, a lookup in every parent table for every
    row inserted (0.3 s of a 100,000-op ingest). Nothing can cascade, and ``warehouse check`` still verifies
    every key (:func:`warehouse.store.dialect.broken_foreign_keys`); PostgreSQL keeps its constraints."""
    with engine.connect().execution_options(write=True) as conn:
        checks = dialect.foreign_keys_off(conn) if inserts_only else contextlib.nullcontext()
        with checks, conn.begin():
            yield conn


@contextlib.contextmanager
def read_snapshot(engine: Engine) -> Iterator[Connection]:
    """One consistent, read-only view of the warehouse for a read of many statements (export, copy, check,
    report): REPEATABLE READ on PostgreSQL (READ COMMITTED would let a concurrent ``rm`` cut a run in half between
    two chunk reads), one read transaction on SQLite (WAL keeps its snapshot until it ends)."""
    with engine.connect() as conn, dialect.snapshot(conn) as snap:
        yield snap


def current_revision(conn: Connection) -> str | None:
    """The database's Alembic revision (None for an empty database)."""
    if "alembic_version" not in inspect(conn).get_table_names():
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


@contextlib.contextmanager
def _migrating(engine: Engine) -> Iterator[Connection]:
    """A connection for migrations, one migrating process at a time; foreign keys are off while tables are
    rebuilt where the back end needs it (:func:`warehouse.store.dialect.foreign_keys_off`) and checked before the
    commit."""
    with engine.connect().execution_options(write=True) as conn, dialect.foreign_keys_off(conn), \
            dialect.schema_lock(conn, _LOCK_ID):
        yield conn
        bad = dialect.broken_foreign_keys(conn)
        if bad:
            conn.rollback()
            raise WarehouseError(f"the migration left {len(bad)} broken foreign keys (first: {bad[0]}); nothing "
                                 "was changed")
        conn.commit()


def _known_current(conn: Connection) -> str | None:
    rev = current_revision(conn)
    if rev is not None and rev not in known_revisions():
        raise SchemaOutdated(f"the warehouse is at revision {rev!r}, which this version does not know (it was "
                             "written by a newer warehouse, or the stamp is damaged): install the newer "
                             "tt-profile-warehouse, or restore the database")
    return rev


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Run the migrations up to ``revision`` (views are dropped before and recreated at head)."""
    from alembic import command

    check_revision_arg(revision)
    with _migrating(engine) as conn:
        current = _known_current(conn)
        if current is not None and revision != "head" and revision < current:
            raise UsageError(f"{revision}: the warehouse is already at {current}; "
                             "upgrade cannot go back", param="revision")
        command.upgrade(alembic_config(engine.url, conn), revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Run the migrations down to ``revision`` (``base`` empties the database)."""
    from alembic import command

    check_revision_arg(revision, allow_base=True)
    with _migrating(engine) as conn:
        _known_current(conn)
        command.downgrade(alembic_config(engine.url, conn), revision)


def open_db(db: str | URL | None, *, create: bool = True, readonly: bool = False) -> Engine:
    """The engine of a warehouse that is at head: a new database is created at head, one that is behind is
    refused with the command that upgrades it."""
    url = resolve_url(db)
    if not create and url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:" \
            and not Path(url.database).exists():
        # never create an empty file for a command that only reads
        raise UsageError(f"no warehouse at {url.database}: run `warehouse ingest` or `warehouse db upgrade`")
    if url.get_backend_name() == "sqlite" and url.database and sqlite_unwritable(url.database):
        readonly = True  # nothing could be written anyway: read it as it is (a writing command fails clearly)
    engine = make_engine(url, readonly=readonly)
    try:
        _ready(engine, url, create, readonly)
    except BaseException:
        engine.dispose()  # (its connection given back: a caller that reports the error may live on)
        raise
    return engine


def _ready(engine: Engine, url: URL, create: bool, readonly: bool) -> None:
    """Bring a new engine's warehouse to where :func:`open_db` promises it, or raise saying why it cannot be."""
    head = head_revision_fast()
    try:
        with engine.connect() as conn:
            empty = not inspect(conn).get_table_names()
            rev = None if empty else _known_current(conn)
    except DBAPIError as e:
        raise WarehouseError(f"cannot open the warehouse {display(url)}: {dialect.explain(e)}") from None
    if empty:
        if not create:
            raise UsageError(f"no warehouse at {display(url)}: run `warehouse ingest` or `warehouse db upgrade`")
        _create(engine, url)
    elif rev != head:
        raise SchemaOutdated(f"the warehouse {display(url)} is at revision {rev}, this "
                             f"version needs {head}: run `warehouse db upgrade`")
    if readonly:
        _warn_stale_views(engine)
    else:
        _refresh_views(engine)


def _create(engine: Engine, url: URL) -> None:
    """Create a new warehouse at head: in a forked child where one can run (a file or a server, not a database in
    this process's memory), so that this process never holds the migrations' libraries and modules (19 MiB of
    RSS, a tenth of an ingest's memory budget: see warehouse.capture.plan); here when nothing may be forked or the
    child failed (the error, if any, is then raised here)."""
    if _seen_by_a_new_connection(url) and can_fork():
        def create() -> bool:
            child_engine = make_engine(url)  # (a connection of its own: the parent's pool is never used here)
            try:
                upgrade(child_engine)
            finally:
                child_engine.dispose()
            return True
        if Aside(create).result():
            engine.dispose()  # (connections opened before the schema existed are not reused)
            return
    upgrade(engine)


def _seen_by_a_new_connection(url: URL) -> bool:
    """Whether a connection opened from ``url`` by another process reaches the same database: a server's, or a
    SQLite file named by its path (not ``:memory:``, not a ``file:`` URI, which may name memory)."""
    if url.get_backend_name() == "postgresql":
        return True
    db = url.database or ""
    return url.get_backend_name() == "sqlite" and db not in ("", ":memory:") and not db.startswith("file:")


def _warn_stale_views(engine: Engine) -> None:
    """A read-only opening never rewrites the views: say so when they are another version's."""

    with engine.connect() as conn:
        if not views_current(conn):
            sys.stderr.write(STALE_VIEWS)


def _refresh_views(engine: Engine) -> None:
    """Recreate the views when they are another version's (view changes need no migration)."""

    with engine.connect() as conn:
        if views_current(conn):
            return
    with engine.connect().execution_options(write=True) as conn:
        with dialect.schema_lock(conn, _LOCK_ID):
            with conn.begin():
                if not views_current(conn):
                    drop_views(conn)
                    create_views(conn)


def check_schema(engine: Engine) -> list[str]:
    """Differences between the tables and the models (``alembic check``), as a list of problems."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext


    with engine.connect() as conn:
        mc = MigrationContext.configure(conn, opts={"compare_type": True, "include_name": not_a_view,
                                                    "include_object": dialect.declared_for(conn.dialect.name)})
        diffs = compare_metadata(mc, metadata)
    return [str(d) for d in diffs]
