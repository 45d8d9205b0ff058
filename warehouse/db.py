"""Engines, SQLite pragmas, transactions and the Alembic schema lifecycle.

``open_db`` is the only way the rest of the package gets an engine: it creates a new database at head, refuses
one that is behind (naming ``warehouse db upgrade``), and on SQLite turns on WAL and a busy timeout so that
concurrent nightly jobs wait for each other instead of failing.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

import re

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

from warehouse.errors import SchemaOutdated, UsageError, WarehouseError

DEFAULT_DB = "warehouse.db"
BUSY_TIMEOUT_MS = 120_000
_LOCK_ID = 0x77617265  # PostgreSQL advisory lock that serialises schema creation / upgrade


def resolve_url(db: str | None) -> str:
    """A SQLAlchemy URL for ``--db``: a URL as is, else a SQLite file path (default ``warehouse.db``)."""
    db = db or os.environ.get("WAREHOUSE_DB") or DEFAULT_DB
    if "://" in db:
        try:
            make_url(db)
        except ArgumentError as e:
            raise UsageError(f"--db {db!r} is not a valid database URL: {e}") from None
        return db
    return "sqlite:///" + str(Path(db).expanduser().resolve())


def migrations_dir() -> Path:
    """The Alembic script directory: inside the installed package, or ``migrations/`` of a source checkout."""
    here = Path(__file__).resolve().parent
    for cand in (here / "migrations", here.parent / "migrations"):
        if (cand / "env.py").exists():
            return cand
    raise WarehouseError("the Alembic migrations are missing from this installation; reinstall the package")


def alembic_config(url: str, connection: Connection | None = None):
    """An Alembic config for ``url`` (and an open connection to run on, when given)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    """The newest revision this code knows, as Alembic sees it."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


_REVISION_FILE = re.compile(r"^(\d{4})_\w+\.py$")


def head_revision_fast() -> str:
    """The head from the file names alone (revisions are linear and named ``NNNN_<slug>.py``, revision id
    ``NNNN``; a test holds this equal to :func:`head_revision`): every command checks the head, and importing
    Alembic to parse the revisions costs more than most commands."""
    names = [m.group(1) for p in (migrations_dir() / "versions").iterdir() if (m := _REVISION_FILE.match(p.name))]
    return max(names)


def _sqlite_pragmas(dbapi_conn, _record) -> None:
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
    cur.execute("PRAGMA cache_size = -32768")  # 32 MiB: the index pages of a large ingest stay in memory
    cur.close()


def _sqlite_begin(conn: Connection) -> None:
    # A writer takes the write lock up front (BEGIN IMMEDIATE), so that two writers queue on busy_timeout
    # instead of one failing with "database is locked" when it upgrades a read lock.
    mode = "BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN"
    conn.exec_driver_sql(mode)


def make_engine(url: str, readonly: bool = False) -> Engine:
    """An engine for ``url``; SQLite gets WAL, a busy timeout and explicit BEGIN handling."""
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        path = u.database
        if readonly and path and path != ":memory:":
            if not Path(path).exists():
                raise UsageError(f"no warehouse at {path}; ingest a CSV first")
            engine = create_engine(f"sqlite:///file:{path}?mode=ro&uri=true")
        else:
            if path and path != ":memory:":
                parent = Path(path).parent
                if not parent.exists():
                    raise UsageError(f"folder {parent} does not exist; create it or pass another --db")
            engine = create_engine(url)
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    kwargs = {}
    if readonly and u.get_backend_name() == "postgresql":
        kwargs["connect_args"] = {"options": "-c default_transaction_read_only=on"}
    try:
        return create_engine(url, pool_pre_ping=True, **kwargs)
    except (ModuleNotFoundError, NoSuchModuleError) as e:
        raise UsageError(f"no database driver for {u.drivername} ({e}); for PostgreSQL: "
                         "pip install 'tt-profile-warehouse[postgres]' and use postgresql+psycopg://") from None


@contextlib.contextmanager
def write_tx(engine: Engine) -> Iterator[Connection]:
    """One write transaction: committed whole on success, rolled back whole on any error."""
    with engine.connect().execution_options(write=True) as conn:
        with conn.begin():
            yield conn


def current_revision(conn: Connection) -> str | None:
    """The database's Alembic revision (None for an empty database)."""
    if "alembic_version" not in inspect(conn).get_table_names():
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


@contextlib.contextmanager
def _schema_lock(conn: Connection) -> Iterator[None]:
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _LOCK_ID})
        conn.commit()
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _LOCK_ID})
            conn.commit()
    else:
        yield


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Run the migrations up to ``revision`` (views are dropped before and recreated at head)."""
    from alembic import command

    url = engine.url.render_as_string(hide_password=False)
    with engine.connect().execution_options(write=True) as conn:
        with _schema_lock(conn):
            command.upgrade(alembic_config(url, conn), revision)
            conn.commit()


def downgrade(engine: Engine, revision: str) -> None:
    """Run the migrations down to ``revision`` (``base`` empties the database)."""
    from alembic import command

    url = engine.url.render_as_string(hide_password=False)
    with engine.connect().execution_options(write=True) as conn:
        with _schema_lock(conn):
            command.downgrade(alembic_config(url, conn), revision)
            conn.commit()


def open_db(db: str | None, *, create: bool = True, readonly: bool = False) -> Engine:
    """The engine of a warehouse that is at head: a new database is created at head, one that is behind is
    refused with the command that upgrades it."""
    url = resolve_url(db)
    engine = make_engine(url)
    head = head_revision_fast()
    try:
        with engine.connect() as conn:
            empty = not inspect(conn).get_table_names()
            rev = None if empty else current_revision(conn)
    except OperationalError as e:
        raise WarehouseError(f"cannot open the warehouse {engine.url.render_as_string()}: {e.orig}") from None
    if empty:
        if not create:
            raise UsageError(f"no warehouse at {engine.url.render_as_string()}; ingest a CSV first")
        upgrade(engine)
    elif rev != head:
        raise SchemaOutdated(f"the warehouse {engine.url.render_as_string()} is at revision {rev}, this "
                             f"version needs {head}: run `warehouse db upgrade`")
    _refresh_views(engine)
    if readonly:
        engine.dispose()
        return make_engine(url, readonly=True)
    return engine


def _refresh_views(engine: Engine) -> None:
    """Recreate the views when they are another version's (view changes need no migration)."""
    from warehouse.views import create_views, drop_views, views_current

    with engine.connect() as conn:
        if views_current(conn):
            return
    with engine.connect().execution_options(write=True) as conn:
        with _schema_lock(conn):
            with conn.begin():
                if not views_current(conn):
                    drop_views(conn)
                    create_views(conn)


def check_schema(engine: Engine) -> list[str]:
    """Differences between the tables and the models (``alembic check``), as a list of problems."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from warehouse.schema import metadata
    from warehouse.views import not_a_view

    with engine.connect() as conn:
        mc = MigrationContext.configure(conn, opts={"compare_type": True, "include_name": not_a_view})
        diffs = compare_metadata(mc, metadata)
    return [str(d) for d in diffs]
