"""What differs between SQLite and PostgreSQL, in one place: upserts, how interning may run, snapshots, schema
locks and table rebuilds, the back end's own storage check, who compresses chunks, how -0.0 reads back, what a
database error means to a user, and the SQL fragments the views say differently (reading a cell of a JSON array,
adding in file order, text aggregation).

Business modules ask this module instead of testing ``conn.dialect.name`` themselves. Two places keep their back
end's half apart because that is what they are: :mod:`warehouse.store.db` builds the engine (a SQLite file's path,
pragmas and read-only URI; PostgreSQL's session options), and :mod:`warehouse.store.query` with
:mod:`warehouse.store.sqlguard`
holds the SQL guard's two halves (SQLite's authorizer and limits, PostgreSQL's statement check and sandbox).
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, Table, text
from sqlalchemy.exc import DBAPIError

from warehouse.errors import UsageError
from warehouse.store import schema

SUPPORTED = ("sqlite", "postgresql")


# The views' SQL fragments, per back end (views.view_sql picks one when the views are created).
# The rows of the chunks of cell_chunk ch: row_no, static_id and the row's volatile cells (a JSON array), as rc
CHUNK_ROWS = {
    "sqlite": """SELECT ch.run_id,
         COALESCE(json_extract(ch.row_nos, '$[' || e.key || ']'), ch.first_row + e.key) AS row_no,
         json_extract(ch.static_ids, '$[' || e.key || ']') AS static_id, e.value AS cells
  FROM cell_chunk ch, json_each(CAST(sqlar_uncompress(ch.cells, ch.raw_size) AS TEXT)) e""",
    # (each chunk's three JSON arrays parsed once, as jsonb, and walked side by side: ROWS FROM pads the row
    # numbers, NULL when the chunk's rows are consecutive; an element taken by position from a text array would
    # parse the whole array again for every row)
    "postgresql": """SELECT ch.run_id, COALESCE(z.rn::int, ch.first_row + (z.ord - 1)::int) AS row_no,
         z.sid::bigint AS static_id, z.value AS cells
  FROM cell_chunk ch CROSS JOIN LATERAL ROWS FROM (
       jsonb_array_elements(convert_from(ch.cells, 'UTF8')::jsonb),
       jsonb_array_elements_text(ch.row_nos::jsonb),
       jsonb_array_elements_text(ch.static_ids::jsonb)) WITH ORDINALITY AS z(value, rn, sid, ord)""",
}
JSON_CELL = {  # value of slot k.slot of the JSON arrays rc.cells (volatile) and t.cells (static, ints: text_value)
    "sqlite": """CASE WHEN k.kind = 'volatile' THEN json_extract(rc.cells, '$[' || k.slot || ']')
              WHEN json_type(t.cells, '$[' || k.slot || ']') = 'integer'
                THEN (SELECT x.value FROM text_value x WHERE x.id = json_extract(t.cells, '$[' || k.slot || ']'))
              ELSE json_extract(t.cells, '$[' || k.slot || ']') END""",
    "postgresql": """CASE WHEN k.kind = 'volatile' THEN rc.cells ->> k.slot
              WHEN jsonb_typeof(tj.j -> k.slot) = 'number'
                THEN (SELECT v.value FROM text_value v WHERE v.id = (tj.j ->> k.slot)::bigint)
              ELSE tj.j ->> k.slot END""",
}
# Joined after ``cell_tuple t``: PostgreSQL parses a row's static cells once (tj.j, what JSON_CELL reads; OFFSET 0
# keeps the planner from folding the cast back into every column that reads it: 4x on a family view's SELECT *)
STATIC_CELLS = {"sqlite": "", "postgresql": " CROSS JOIN LATERAL (SELECT t.cells::jsonb AS j OFFSET 0) tj"}
def key_digest(grouping: str, key: str) -> bytes:
    """A rollup key's lookup digest (``rollup_key.digest``): the first 8 bytes of md5 of the grouping, a unit
    separator and the key, in UTF-8 (what :data:`KEY_DIGEST` computes in SQL on either back end)."""
    import hashlib

    return hashlib.md5(f"{grouping}\x1f{key}".encode("utf-8", "surrogatepass")).digest()[:8]


KEY_DIGEST = {  # key_digest() in SQL, of the columns {g} and {k}: SQLite calls the Python function (registered on
    # every connection of the warehouse, warehouse.store.cells), PostgreSQL computes the same bytes itself
    "sqlite": "key_digest({g}, {k})",
    "postgresql": "substring(decode(md5({g} || chr(31) || {k}), 'hex') from 1 for 8)",
}
AS_NUMBER = {  # a text cell as a number when the whole cell is one, else NULL
    "sqlite": """CASE WHEN TRIM(value) GLOB '*[0-9]*' AND TRIM(value) NOT GLOB '*[^0-9.eE+-]*'
            THEN CAST(TRIM(value) AS REAL) END""",
    "postgresql": r"""CASE WHEN value ~ '^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$'
            THEN CAST(value AS DOUBLE PRECISION) END""",
}
# Sums that must add in file order to give the oracle's numbers to the last bit: PostgreSQL adds in any order
# unless told; SQLite adds in the order it reads, which is file order for these views.
IN_FILE_ORDER = {"sqlite": "", "postgresql": " ORDER BY pos"}


def name(conn: Connection) -> str:
    """The back end's name, refusing the ones the warehouse does not support."""
    n = conn.dialect.name
    if n not in SUPPORTED:
        raise UsageError(f"back end {n!r} is not supported (use SQLite or PostgreSQL)")
    return n


def not_sought(conn: Connection, column: str) -> str:
    """``column`` as a filter the planner does not seek an index on: on SQLite a unary +, so that rows the key's
    leading columns found are filtered one by one (a row's blob is read only when it is kept; a seek per value
    of a year's 24,000 cost 3x the read). PostgreSQL chooses for itself."""
    return f"+{column}" if name(conn) == "sqlite" else column


def insert_ignore(conn: Connection, table: Table) -> Any:
    """``INSERT ... ON CONFLICT DO NOTHING`` for the connection's back end."""
    if name(conn) == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert
        return pg_insert(table).on_conflict_do_nothing()
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert
    return sqlite_insert(table).on_conflict_do_nothing()


def resolve_ids(conn: Connection, table: Table, key_col: str, values: dict[Any, dict],
                also: tuple[str, ...] = ()) -> dict[Any, tuple]:
    """``{key: (id, *also)}`` of the rows of ``table`` keyed by ``key_col``, inserting the missing ones
    (``values[key]``: the row) with ``ON CONFLICT DO NOTHING``, 500 at a time in key order: two writers that meet
    the same new keys never deadlock. ``also``: columns to return beside the id (say, texts to check a digest by).

    Plain SQL through the driver (its own placeholders, rows fetched whole): a first night interns some 40,000
    keys, and SQLAlchemy's statement objects and per-row processing cost most of a second of that."""
    q = conn.dialect.identifier_preparer.quote
    mark = paramstyle_mark(conn)
    picked = ", ".join(q(c) for c in (key_col, "id", *also))
    cols = [c.name for c in table.columns if c.name != "id"]
    insert = (f"INSERT INTO {q(table.name)} ({', '.join(q(c) for c in cols)}) "
              f"VALUES ({', '.join([mark] * len(cols))}) ON CONFLICT DO NOTHING")
    ex = conn.exec_driver_sql
    row = operator.itemgetter(*cols) if len(cols) > 1 else (lambda d: (d[cols[0]],))

    def select_in(part: list) -> Iterator[tuple]:
        sql = f"SELECT {picked} FROM {q(table.name)} WHERE {q(key_col)} IN ({', '.join([mark] * len(part))})"
        for key, *rest in ex(sql, tuple(part)).fetchall():
            yield (bytes(key) if isinstance(key, memoryview) else key), tuple(rest)

    # SQLite: one writer at a time, so the missing rows take the next ids, given here, and need no second read
    # (a first night interns some 60,000 values: a third of the statements); should a row meet one stored
    # meanwhile all the same (the count inserted says so), they are read back as elsewhere
    own_ids = name(conn) == "sqlite" and "id" in table.columns
    insert_id = (f"INSERT INTO {q(table.name)} (id, {', '.join(q(c) for c in cols)}) "
                 f"VALUES ({', '.join([mark] * (len(cols) + 1))}) ON CONFLICT DO NOTHING")
    out: dict[Any, tuple] = {}
    keys = sorted(values)
    for k in range(0, len(keys), 500):
        part = keys[k:k + 500]
        out.update(select_in(part))
        missing = [key for key in part if key not in out]
        if missing and own_ids:
            top = ex(f"SELECT COALESCE(MAX(id), 0) FROM {q(table.name)}").scalar_one()
            if ex(insert_id, [(top + 1 + j, *row(values[key])) for j, key in enumerate(missing)]).rowcount \
                    == len(missing):
                out.update((key, (top + 1 + j, *(values[key][c] for c in also))) for j, key in enumerate(missing))
                continue
        if missing:
            ex(insert, [row(values[key]) for key in missing])
            out.update(select_in(missing))
    return out


def text_list_agg(conn: Connection, expr: str, sep: str, order: str) -> str:
    """SQL for an aggregate that joins the text of ``expr`` with ``sep`` over a group, in ``order`` (SQLite's
    ``group_concat`` follows the scan, which is the primary key's order when ``order`` is its next column;
    PostgreSQL's ``string_agg`` is told). Numbers come as text that round-trips (PostgreSQL) or has 15 digits
    (SQLite): for statistics over many rows, never for a report."""
    if name(conn) == "postgresql":
        return f"string_agg(({expr})::text, '{sep}' ORDER BY {order})"
    return f"group_concat({expr}, '{sep}')"


def exact_number_text(conn: Connection, expr: str) -> str:
    """SQL for the text of a number that reads back as the same double ('nan' for NULL), short for whole numbers
    (times are stored in whole ns but for the means over a trace's replays): the input of
    :func:`text_list_agg` where every digit counts."""
    if name(conn) == "postgresql":
        return f"COALESCE(({expr})::text, 'nan')"  # (float8's text is the shortest that reads back exactly)
    return (f"CASE WHEN {expr} IS NULL THEN 'nan' WHEN {expr} = CAST({expr} AS INTEGER) THEN CAST({expr} AS INTEGER) "
            f"ELSE printf('%!.17g', {expr}) END")


def bulk_insert(conn: Connection, table: str, columns: list[str], rows: list[tuple] | list[list]) -> None:
    """Rows into ``table`` at the back end's bulk speed: PostgreSQL's COPY (psycopg's ``cursor.copy``; INSERTs
    cost the server a statement each: 9x ``psql \\copy``), SQLite's prepared INSERT run by ``executemany`` (an
    in-process library: that is its bulk path)."""
    if not rows:
        return
    if name(conn) == "postgresql":
        raw = conn.connection.driver_connection
        with raw.cursor() as cur:  # type: ignore[union-attr]
            with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for r in rows:
                    copy.write_row(r)
        return
    mark = paramstyle_mark(conn)
    conn.exec_driver_sql(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})",
                         rows if isinstance(rows[0], tuple) else list(map(tuple, rows)))


def bulk_update(conn: Connection, table: str, fixed: dict[str, Any], keys: list[tuple[str, str]],
                sets: list[tuple[str, str]], rows: list[tuple]) -> None:
    """Update ``sets`` columns of ``table``'s rows that match ``fixed`` (column -> value) and each row's ``keys``;
    ``rows`` are (keys..., sets...) tuples, columns given as (name, SQL type). PostgreSQL takes them by COPY into a
    temporary table and one joined UPDATE (an UPDATE a row costs it a statement each); SQLite an executemany."""
    if not rows:
        return
    names = [k for k, _ in keys] + [c for c, _ in sets]
    if name(conn) == "postgresql":
        cols = ", ".join(f"{c} {ty}" for c, ty in [*keys, *sets])
        conn.exec_driver_sql(f"CREATE TEMPORARY TABLE bulk_rows ({cols}) ON COMMIT DROP")
        bulk_insert(conn, "bulk_rows", names, rows)
        where = " AND ".join([f"{table}.{c} = :{c}" for c in fixed] + [f"{table}.{k} = b.{k}" for k, _ in keys])
        conn.execute(text(f"UPDATE {table} SET {', '.join(f'{c} = b.{c}' for c, _ in sets)} FROM bulk_rows b "
                          f"WHERE {where}"), fixed)
        conn.exec_driver_sql("DROP TABLE bulk_rows")
        return
    m = paramstyle_mark(conn)
    where = " AND ".join(f"{c} = {m}" for c in [*fixed, *(k for k, _ in keys)])
    conn.exec_driver_sql(f"UPDATE {table} SET {', '.join(f'{c} = {m}' for c, _ in sets)} WHERE {where}",
                         [(*r[len(keys):], *fixed.values(), *r[:len(keys)]) for r in rows])


def paramstyle_mark(conn: Connection) -> str:
    """The driver's placeholder, for plain INSERTs handed to ``executemany`` on the hot path."""
    mark = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(conn.dialect.paramstyle)
    if mark is None:  # pragma: no cover - SQLite and psycopg use one of the above
        raise UsageError(f"unsupported driver paramstyle {conn.dialect.paramstyle!r}")
    return mark


@contextmanager
def small_sorts(conn: Connection, mib: int = 1) -> Iterator[None]:
    """Bound the memory of big GROUP BYs (a run's rollups over a million ops). SQLite's sorter keeps up to the
    page cache's size in memory before it spills to temporary files: the connection's 8 MiB cache would add to
    its peak (1 MiB against 4: SQLite's peak in the rollups of 300,000 ops 52 MiB against 95, in the same time).
    PostgreSQL bounds sorts by its own ``work_mem``."""
    if name(conn) != "sqlite":
        yield
        return
    (was,) = conn.exec_driver_sql("PRAGMA cache_size").one()
    conn.exec_driver_sql(f"PRAGMA cache_size = {-1024 * mib}")
    try:
        yield
    finally:
        conn.exec_driver_sql(f"PRAGMA cache_size = {int(was)}")


@contextmanager
def fresh_rows_join(conn: Connection) -> Iterator[None]:
    """A join over rows this transaction has just written. PostgreSQL plans it with the table's statistics of
    before (a warehouse that was empty, or emptied by ``rm``): a nested loop of two sequential scans, which took
    33 s for the 10,000 trace ops of a 20,000-op run matched to their eager ops by position (a hash join: 0.1 s).
    Nested loops are off for the statement (SQLite's planner uses the index)."""
    if name(conn) != "postgresql":
        yield
        return
    conn.exec_driver_sql("SET LOCAL enable_nestloop = off")
    yield  # (on an error the transaction is over, and the setting with it)
    conn.exec_driver_sql("SET LOCAL enable_nestloop = on")


def interns_apart(conn: Connection) -> bool:
    """Whether interned values (op codes, strings, cell tuples) are committed on a connection of their own.

    On PostgreSQL they are: two ingests that intern the same new values inside their long file transactions
    wait on each other's uncommitted unique keys and deadlock. Interned rows are content-addressed, so one
    committed early by a file that later fails is harmless (the next file reuses it). SQLite has one writer at
    a time, so a second connection would wait on the file's own transaction: there interning stays inside it."""
    return name(conn) == "postgresql"


def fresh_statistics(engine: Engine, tables: dict[str, list[str]], rows: int) -> None:
    """After an ingest of ``rows`` ops: on PostgreSQL, ANALYZE the per-run ``tables`` (each on its given columns)
    when the run is a tenth of the op table or more (autovacuum's own threshold; never analyzed counts too). A
    young warehouse's statistics name every run it had (their most common values cover the table), so a run
    ingested since is estimated at one row, and the lossless views join its ops in nested loops, quadratic: in CI
    a 2,640-op capture's cells read in 39 s, its family views in 71-103 s, instead of 1-3. Autovacuum analyzes
    such a table within a minute, but a CI job reads the run it ingested at once. Past a tenth, estimates come
    from the number of distinct runs, which is right. SQLite: nothing to do (its planner goes by the indexes)."""
    if not is_postgres(engine) or not tables:
        return
    with engine.connect() as conn:
        known = conn.execute(text("SELECT reltuples FROM pg_class WHERE oid = 'op'::regclass")).scalar()
        if known is not None and known > 0 and rows * 10 < known:
            return
        conn.execute(text("ANALYZE " + ", ".join(f"{tb} ({', '.join(cols)})" for tb, cols in tables.items())))
        conn.commit()


# ------------------------------------------------------------------------------------------------ transactions
def is_postgres(conn: Connection | Engine) -> bool:
    """Whether the back end is PostgreSQL (else SQLite)."""
    return conn.dialect.name == "postgresql"


@contextmanager
def snapshot(conn: Connection) -> Iterator[Connection]:
    """A read-only transaction that sees one state of the database for many statements: REPEATABLE READ on
    PostgreSQL (READ COMMITTED would let a concurrent delete cut a run in half between two reads), one read
    transaction on SQLite (WAL keeps its snapshot until it ends)."""
    if is_postgres(conn):
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
    with conn.begin():
        if is_postgres(conn):
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        yield conn


@contextmanager
def schema_lock(conn: Connection, key: int) -> Iterator[None]:
    """One migrating process at a time: PostgreSQL's advisory lock ``key`` (released however the migration
    ends); SQLite's write lock already serialises them."""
    if not is_postgres(conn):
        yield
        return
    conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
    conn.commit()
    try:
        yield
    finally:
        if conn.in_transaction():  # a failed migration: its transaction is aborted, the unlock must not be
            conn.rollback()
        conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
        conn.commit()


@contextmanager
def foreign_keys_off(conn: Connection) -> Iterator[None]:
    """SQLite: foreign keys off for one transaction, back on after: while tables are rebuilt (Alembic's batch
    mode drops and recreates a table; with them on, dropping ``run`` would cascade to every child row), and for an
    ingest's inserts (see :func:`warehouse.store.db.write_tx`). PostgreSQL keeps them: it alters in place."""
    raw = None
    if not is_postgres(conn):
        raw = conn.connection.dbapi_connection
        assert raw is not None
        raw.execute("PRAGMA foreign_keys = OFF")  # no transaction is open yet: the pragma takes effect
    try:
        yield
    finally:
        if raw is not None:
            raw.execute("PRAGMA foreign_keys = ON")


def declared_on(constraint: Any, backend: str) -> bool:
    """Whether ``constraint`` exists on a database of ``backend``: every one does, except those declared for other
    back ends only (``ddl_if``: the references to interned tables, constraints on SQLite alone)."""
    cond = getattr(constraint, "_ddl_if", None)
    if cond is None or cond.dialect is None:
        return True
    return backend in ([cond.dialect] if isinstance(cond.dialect, str) else list(cond.dialect))


def declared_for(backend: str) -> Callable[..., bool]:
    """Alembic's ``include_object`` hook for a database of ``backend``: a constraint not declared on it
    (:func:`declared_on`) is not compared there."""
    def include(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
        return reflected or declared_on(obj, backend)
    return include


def unconstrained_references(conn: Connection) -> list[str]:
    """Each reference declared for other back ends only (a constraint on SQLite, none here) whose rows point
    nowhere: how many, and the first value."""
    out = []
    for table in schema.metadata.sorted_tables:
        for fk in table.foreign_key_constraints:
            if declared_on(fk, name(conn)):
                continue
            (column,), parent = [c.name for c in fk.columns], fk.referred_table.name
            bad, first = conn.execute(text(
                f"SELECT COUNT(*), MIN(x.{column}) FROM {table.name} x WHERE x.{column} IS NOT NULL AND NOT EXISTS "
                f"(SELECT 1 FROM {parent} p WHERE p.id = x.{column})")).one()
            if bad:
                out.append(f"foreign key: {bad} {table.name} row(s) whose {column} is in no {parent} row (first: "
                           f"{first})")
    return out


def broken_foreign_keys(conn: Connection) -> list[tuple]:
    """Rows whose foreign key points nowhere: SQLite checks them when asked (after a rebuild with them off);
    PostgreSQL never lets one in."""
    if is_postgres(conn):
        return []
    return [tuple(r) for r in conn.exec_driver_sql("PRAGMA foreign_key_check")]


def storage_problems(conn: Connection) -> list[str]:
    """The back end's own storage check: SQLite's integrity and foreign-key checks; on PostgreSQL, which keeps
    its integrity and its constraints itself, the references to interned tables that are no constraint there
    (:func:`warehouse.store.schema.interned_ref`)."""
    if is_postgres(conn):
        return unconstrained_references(conn)
    res = [r[0] for r in conn.execute(text("PRAGMA integrity_check"))]
    out = [f"integrity: {r}" for r in res] if res != ["ok"] else []
    return out + [f"foreign key: {r[0]} row {r[1]} -> {r[2]}" for r in broken_foreign_keys(conn)]


def compresses_chunks(conn: Connection | Engine) -> bool:
    """Whether the warehouse compresses the cell chunks itself (SQLite) or the back end does (PostgreSQL's TOAST
    compresses large values)."""
    return not is_postgres(conn)


def keeps_negative_zero(conn: Connection) -> bool:
    """Whether -0.0 reads back as stored (PostgreSQL) or as 0.0 (SQLite)."""
    return is_postgres(conn)


def drop_view_sql(conn: Connection, view: str) -> str:
    """``DROP VIEW IF EXISTS`` (PostgreSQL: with the views that depend on it)."""
    return f"DROP VIEW IF EXISTS {view}" + (" CASCADE" if is_postgres(conn) else "")


# ------------------------------------------------------------------------------------------------ errors
def _orig_message(e: BaseException) -> str:
    orig = getattr(e, "orig", None) or e
    return " ".join(str(orig).split())


def sqlstate(e: BaseException) -> str | None:
    """PostgreSQL's SQLSTATE of an error (None on SQLite)."""
    orig = getattr(e, "orig", None)
    return getattr(orig, "sqlstate", None)


def is_retryable(e: BaseException) -> bool:
    """A failure that a second try of the whole transaction can cure: a lock that outlasted the busy timeout,
    a deadlock, a serialization failure. Nothing was written by the failed try."""
    if not isinstance(e, DBAPIError):
        return False
    if sqlstate(e) in ("40P01", "40001", "55P03"):  # deadlock, serialization failure, lock not available
        return True
    msg = _orig_message(e).lower()
    return "database is locked" in msg or "database table is locked" in msg or "deadlock" in msg


def explain(e: BaseException) -> str:
    """A one-line explanation of a database error and what to do about it."""
    msg = _orig_message(e)
    low = msg.lower()
    state = sqlstate(e) or ""
    if "locked" in low or state in ("40P01", "55P03"):
        return f"the warehouse stayed locked by another writer ({msg}); try again"
    if state == "25006":  # PostgreSQL: a read-only transaction, which a reader role's login starts by default
        return (f"this login may only read ({msg}): it is a reader role (`warehouse db create-reader`) or has "
                "default_transaction_read_only on; write with the warehouse owner's URL")
    if "readonly database" in low or "read-only" in low:
        return f"the warehouse cannot be written ({msg}); check the file's and its folder's permissions"
    if "disk i/o error" in low or state.startswith("58"):
        return f"a disk I/O error in the warehouse ({msg}); check the disk, then run `warehouse check`"
    if "database or disk is full" in low or state == "53100":
        return f"the disk is full ({msg}); free space and try again (nothing was stored)"
    if "not a database" in low or "malformed" in low or state == "XX001":
        return f"the warehouse file is corrupt or not a warehouse ({msg}); run `warehouse check` or restore it"
    if "permission denied" in low or state == "42501":
        return f"permission denied ({msg}); the database role lacks a privilege this command needs"
    if "unable to open database" in low:
        return f"cannot open the warehouse file ({msg}); check the path and its permissions"
    if state.startswith("08"):
        return f"the database connection failed ({msg}); is the server running?"
    return f"database error: {msg}"


def rank_of(alias: str) -> str:
    """A view's column ``rank``: the rank of the multi-host capture the row's run is (view ``capture_rank``; NULL
    for a run of one host). A scalar subquery: a query that does not ask for the column never evaluates it (the
    ops' views feed the report at ingest), one that does seeks the run's two tags."""
    return f"(SELECT cr.rank FROM capture_rank cr WHERE cr.run_id = {alias}.run_id) AS rank"
