"""The light read path: a SQLite warehouse read with the standard library's ``sqlite3``, without SQLAlchemy.

Importing SQLAlchemy costs about 0.35 s, more than a one-line answer should take in all (``warehouse runs``:
<= 0.2 s as a process). Commands that read plain tables (not the views, not the chunks, which need the
functions an engine registers) take this path when the warehouse is a SQLite file at this code's head revision;
anything else (PostgreSQL, a file that is missing, behind or in a read-only folder, any sqlite3 error) returns
``None`` and the caller takes the full path, which explains what is wrong. Both paths run the same SQL text
(named ``:param`` placeholders, which sqlite3 and SQLAlchemy's ``text()`` both take) and normalise the values the
same way (:func:`timestamp`), so their answers are the same.
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import urllib.parse
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from warehouse.store.revisions import DEFAULT_DB, head_revision_fast

BUSY_TIMEOUT_S = 120.0  # as the engines' busy_timeout: a writer's commit is waited for, never an error
# The views' stamp of this version, generated from warehouse.store.views.VIEWS_HASH by scripts/gen_docs.py (CI checks
# it): computing it here would mean importing every view's SQL and SQLAlchemy with it
VIEWS_HASH = "aa89bc2dd24f9346"
VIEWS_STAMP = "warehouse_views"
STALE_VIEWS = ("warning: the warehouse's views are another version's; reading them as they are "
               "(`warehouse db upgrade` by a writer refreshes them)\n")


def sqlite_path(url: str | None) -> Path | None:
    """The file of a warehouse given as a path (``None``: ``$WAREHOUSE_DB`` or ``./warehouse.db``); None for a URL
    (a ``sqlite://`` URL may carry options that only the full path reads)."""
    db = url or os.environ.get("WAREHOUSE_DB") or DEFAULT_DB
    if "://" in db:
        return None
    return Path(db).expanduser().absolute()


@contextlib.contextmanager
def reader(url: str | None) -> Iterator[sqlite3.Connection | None]:
    """A read-only connection to the SQLite warehouse at ``url`` when the light path can serve it, else None;
    closed after."""
    path = sqlite_path(url)
    conn = None
    # (a folder this process cannot write may hold a WAL database whose -shm cannot be made: the full path knows)
    if path is not None and path.is_file() and os.access(path.parent, os.W_OK):
        try:
            conn = sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?mode=ro", uri=True,
                                   timeout=BUSY_TIMEOUT_S, isolation_level=None)
            conn.execute("BEGIN")  # one snapshot for every query of the answer, as the engines' reads have
            rev = conn.execute("SELECT version_num FROM alembic_version").fetchall()
            if rev != [(head_revision_fast(),)]:
                conn.close()
                conn = None
            else:
                _warn_stale_views(conn)
        except sqlite3.Error:
            if conn is not None:
                conn.close()
            conn = None
    try:
        yield conn
    finally:
        if conn is not None:
            conn.close()


def _warn_stale_views(conn: sqlite3.Connection) -> None:
    """Say so when the views are another version's, as a read-only opening of the full path does."""
    try:
        stamp = conn.execute(f"SELECT hash FROM {VIEWS_STAMP}").fetchall()
    except sqlite3.Error:
        stamp = []
    if stamp != [(VIEWS_HASH,)]:
        sys.stderr.write(STALE_VIEWS)


def fetch(conn: Any, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The rows of ``sql`` (``:name`` placeholders) as dicts, on a sqlite3 connection or a SQLAlchemy one."""
    if isinstance(conn, sqlite3.Connection):
        cur = conn.execute(sql, params or {})
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    from sqlalchemy import text
    return [dict(r) for r in conn.execute(text(sql), params or {}).mappings()]


def timestamp(value: datetime | str | None) -> str | None:
    """A stored time as ``YYYY-MM-DD HH:MM:SS[.ffffff]`` whichever way it is read (SQLite keeps text,
    PostgreSQL gives a datetime)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.isoformat(sep=" ")
