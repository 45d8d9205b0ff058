"""Per-run rollups: what history reads instead of ops, written at ingest in the file's transaction.

One row per run x section x grouping x key x device (table ``rollup_row``, read through the view ``rollup``,
see :mod:`warehouse.store.schema`): the per-iteration mean of every metric of
:mod:`warehouse.registry.measures`, and its spread (max - min) over the iterations (trace replays). Sections are the
oracle's ``eager`` and ``trace`` (all sections of a name together), each custom pair by name, and ``''`` for
the whole run. Device ``-1`` is all devices together; runs with several devices also get a row per device.
Blocks and layers are the *history* attribution (``op.hist_place_id``).

Everything is generated from the registry, so a new grouping or metric is a new rollup column or row kind
without touching this module (a new metric needs a migration for its column).
"""
from __future__ import annotations

import math

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from warehouse.registry.families import Family, FamilyColumn
from warehouse.store import dialect
from warehouse.store.familysql import family_view_sql
from warehouse.analysis import rollupcalc
from warehouse.capture import plan
from warehouse.registry.measures import GROUPINGS, LAYER_KEY, METRICS, Grouping, Metric, Term, terms_of
from warehouse.registry.categories import category
from warehouse.store import runseries
from warehouse.store import schema as t
from warehouse.store.dialect import key_digest

# The ops of one run with their scopes: the eager / trace section, each custom section around it, the whole run;
# grouped by their ids (what warehouse.analysis.rollupcalc reads).
_BY_ID = """__X_CTE__
ops AS (
  SELECT o.row_no, o.device_id AS device, o.hist_place_id AS place_id, o.op_code_id,
         COALESCE(o.kernel_ns, 0) AS kernel_ns, COALESCE(o.fw_ns, 0) AS fw_ns,
         COALESCE(o.op2op_ns, 0) AS op2op_raw, o.iteration, o.iter_pos, s.name AS sec, o.fw_start_cycle,
         o.fw_end_cycle__X_OPS__
  FROM __X_FROM__op o LEFT JOIN section s ON s.id = o.section_id
  WHERE o.run_id = :run__X_WHERE__),
scoped AS (
  SELECT 0 AS custom, COALESCE(sec, '') AS section, COALESCE(iteration, 0) AS iteration, device, place_id,
         op_code_id, kernel_ns, fw_ns,
         CASE WHEN sec IS NOT NULL AND COALESCE(iter_pos, 0) = 0 THEN 0.0 ELSE op2op_raw END AS op2op_ns,
         fw_start_cycle, fw_end_cycle__X_PASS__
  FROM ops
  UNION ALL
  SELECT 1, s.name, 0, device, place_id, op_code_id, kernel_ns, fw_ns, op2op_raw, fw_start_cycle,
         fw_end_cycle__X_PASS__
  FROM ops JOIN section s ON s.run_id = :run AND s.kind = 'custom' AND ops.row_no > s.start_row
                         AND (s.end_row IS NULL OR ops.row_no < s.end_row)),
by_id AS MATERIALIZED (
  -- grouped by the ids, which sort faster than the texts they stand for (joined after, on few rows)
  SELECT custom, section, iteration, device, place_id, op_code_id, COUNT(*) AS ops,
         SUM(kernel_ns) AS kernel_ns, SUM(op2op_ns) AS op2op_ns, SUM(fw_ns) AS fw_ns,
         MIN(CASE WHEN fw_start_cycle > 0 THEN fw_start_cycle END) AS first_cycle,
         MAX(CASE WHEN fw_end_cycle > 0 THEN fw_end_cycle END) AS last_cycle__X_SUM__
  FROM scoped GROUP BY custom, section, iteration, device, place_id, op_code_id)"""
# The rest of the fine table: the ids' texts, then the whole run's rows.
_FINE = """,
f0 AS MATERIALIZED (
  SELECT custom, section, iteration, device, COALESCE(p.block, '') AS block, COALESCE(p.layer, '') AS layer,
         c.name AS op_code, c.category, ops, kernel_ns, op2op_ns, fw_ns, first_cycle, last_cycle__X_PASS__
  FROM by_id JOIN op_code c ON c.id = by_id.op_code_id LEFT JOIN place p ON p.id = by_id.place_id),
f AS MATERIALIZED (
  -- the eager / trace sections and the custom ones, then the whole run ('') from the oracle's sections and the
  -- ops outside them (which f0 holds under '' already): one pass over the ops, not two
  SELECT section, iteration, device, block, layer, op_code, category, ops, kernel_ns, op2op_ns, fw_ns,
         first_cycle, last_cycle, :freq AS freq_mhz__X_PASS__
  FROM f0 WHERE section <> '' OR custom = 1
  UNION ALL
  SELECT '', 0, device, block, layer, op_code, category, SUM(ops), SUM(kernel_ns), SUM(op2op_ns), SUM(fw_ns),
         MIN(first_cycle), MAX(last_cycle), :freq__X_SUM__
  FROM f0 WHERE custom = 0 GROUP BY device, block, layer, op_code, category),
__ITERS__"""
_SCOPED = _BY_ID + _FINE
# The iterations of each section and the run's devices, that figures per iteration and per-device rows need.
_ITERS = """iters AS (SELECT section, COUNT(DISTINCT iteration) AS n FROM f GROUP BY section),
devices AS (SELECT COUNT(DISTINCT device) AS n FROM f WHERE device IS NOT NULL)"""
# (the same counts from all the run's ops: f's sections are the oracle's with their iterations, the custom ones
# and the whole run with one each)
_ALL_ITERS = """all_ops AS (
  SELECT o.device_id AS device, COALESCE(o.iteration, 0) AS iteration, s.name AS sec
  FROM op o LEFT JOIN section s ON s.id = o.section_id WHERE o.run_id = :run),
iters AS (
  SELECT sec AS section, COUNT(DISTINCT iteration) AS n FROM all_ops WHERE sec IS NOT NULL GROUP BY sec
  UNION ALL SELECT DISTINCT s.name, 1 FROM section s WHERE s.run_id = :run AND s.kind = 'custom'
  UNION ALL SELECT '', 1),
devices AS (SELECT COUNT(DISTINCT device) AS n FROM all_ops WHERE device IS NOT NULL)"""


def _stored_columns() -> list[str]:
    """The metric columns as computed and stored (``rollup_row``: times in whole ns)."""
    return [c for m in METRICS for c in (m.stored_column, m.stored_spread_column)]


def _column_source(csv_name: str, column: str, backend: str) -> str:
    """A FROM item with ``run_id``, ``row_no`` and ``column``: the CSV column ``csv_name`` of every op, read as a
    number as the family views read theirs (for a ``col:`` metric)."""

    quoted = csv_name.replace("'", "''")
    sql = family_view_sql(Family("x", "", (FamilyColumn(column, (quoted,), "", ""),)), backend)
    return f"({sql.split(' AS' + chr(10), 1)[1]}) {column}_src"


def _scoped(iters: str, terms: list[Term], backend: str = "sqlite", template: str = _SCOPED) -> str:
    """The fine table's CTEs, with the per-op ``terms`` of computed metrics (none for the stored ones);
    ``template``: those CTEs, or the first of them (:data:`_BY_ID`)."""
    names = [x.name for x in terms]
    views: dict[str, list[str]] = {}
    for x in terms:
        views.setdefault(x.view, [])
        if x.column not in views[x.view]:
            views[x.view].append(x.column)
    cols = [c for cs in views.values() for c in cs]
    typ = {x.column: x.sql_type for x in terms}
    # One row per op of the run with every column the terms read, merged by row number from each view: a
    # union sorted once (a materialized CTE joined per op gets no index on SQLite, a scan per op), and it
    # drives the ops' scan, each op found by its primary key.
    branches = [f"SELECT row_no, {', '.join(f'CAST(NULL AS {typ[c]}) AS {c}' for c in cols)} FROM op "
                "WHERE run_id = :run"]
    for view, vcols in views.items():
        picked = ", ".join(c if c in vcols else f"CAST(NULL AS {typ[c]})" for c in cols)
        source = _column_source(view[1:], vcols[0], backend) if view.startswith("@") else view
        branches.append(f"SELECT row_no, {picked} FROM {source} WHERE run_id = :run")
    merged = ", ".join(f"MAX({c}) AS {c}" for c in cols)
    fill = {
        "__X_CTE__": (f"\nx AS MATERIALIZED (SELECT row_no, {merged} FROM (\n  "
                      + "\n  UNION ALL ".join(branches) + ") u GROUP BY row_no),"
                      ) if terms else "",
        "__X_FROM__": "x CROSS JOIN " if terms else "",
        "__X_WHERE__": " AND o.row_no = x.row_no" if terms else "",
        "__X_OPS__": "".join(f", {x.expr} AS {x.name}" for x in terms),
        "__X_PASS__": "".join(f", {n}" for n in names),
        "__X_SUM__": "".join(f", SUM({n}) AS {n}" for n in names),
    }
    sql = template.replace("__ITERS__", iters)
    for mark, part in fill.items():
        sql = sql.replace(mark, part)
    return sql


def _per_grouping(g: Grouping, per_device: bool, metrics: list[Metric]) -> str:
    device = "device" if per_device else "-1"
    group_device = ", device" if per_device else ""
    # (a device id below 0 is no device: -1 is "all devices"; such ops count in the all-devices rows only)
    where = "WHERE device IS NOT NULL AND device >= 0 AND (SELECT n FROM devices) > 1" if per_device else ""
    inner = [f"{'CAST(NULL AS DOUBLE PRECISION)' if m.total_only and g.key != 'section' else m.expr} "
             f"AS {m.stored_column}" for m in metrics]
    outer = []
    for m in metrics:
        # (a ratio is the mean over the iterations that have the key; a sum per iteration divides by them all)
        outer.append(f"AVG(p.{m.stored_column})" if m.mean else f"SUM(p.{m.stored_column}) / i.n")
        outer.append(f"CASE WHEN i.n > 1 THEN MAX(p.{m.stored_column}) - MIN(p.{m.stored_column}) END")
    key = g.expr
    group_key = "" if key.startswith("'") else f", {key}"  # PostgreSQL refuses a constant in GROUP BY
    return f"""
SELECT :run, p.section, '{g.key}', p.key, p.device, i.n, 1.0 * SUM(p.ops) / i.n, {', '.join(outer)}
FROM (SELECT section, iteration, {key} AS key, {device} AS device, SUM(ops) AS ops, {', '.join(inner)}
      FROM f {where} GROUP BY section, iteration{group_key}{group_device}) p
JOIN iters i ON i.section = p.section
GROUP BY p.section, p.key, p.device, i.n"""


def build_sql(groupings: list[Grouping] | None = None, iters: str = _ITERS, metrics: list[Metric] | None = None,
              backend: str = "sqlite") -> str:
    """The SELECT of a run's rollup rows, keys as text (parameters ``run`` and ``freq``): of the stored
    groupings, or of ``groupings``; ``iters``: how the sections' iterations and the devices are counted;
    ``metrics``: the stored ones, or these (computed ones among them read the extra terms)."""
    chosen = [g for g in GROUPINGS if g.stored] if groupings is None else groupings
    ms = METRICS if metrics is None else metrics
    parts = [_per_grouping(g, d, ms) for g in chosen for d in (False, True)]
    return f"WITH {_scoped(iters, terms_of(ms), backend)}\n" + "\nUNION ALL".join(parts)


def computed_rows(conn: Connection, run_ids: list[int], section: str, grouping: Grouping,
                  layers: set[str] | None = None, metrics: list[Metric] | None = None) -> list[tuple[Any, ...]]:
    """The rows of a grouping that is not stored, computed from the ops of ``run_ids``, as the view ``rollup``
    gives stored ones: ``(run_id, key, device, iterations, ops, <metric>, <metric spread> ...)`` in its units
    (for the stored metrics, or ``metrics``), for one section; ``layers``: only the ops of these layers (keys
    of the grouping ``layer``), all of a drill-down needs (the rest of a run's ops are not grouped at all)."""
    # (with ``layers``, the iterations and devices of the whole run, not of the chosen ops: a figure per
    # iteration divides by every iteration of its section, as the stored rows do)
    ms = METRICS if metrics is None else metrics
    sql = build_sql([grouping], _ITERS if layers is None else _ALL_ITERS, ms, dialect.name(conn))
    params: dict[str, Any] = {}
    if layers is not None:
        if not layers:
            return []
        names = [f"l{i}" for i in range(len(layers))]
        params = dict(zip(names, sorted(layers)))
        within = ", ".join(":" + n for n in names)
        # (the ops' layer key as the grouping ``layer`` computes it; an op without a place is '[? glue]')
        assert "WHERE o.run_id = :run)" in sql  # (the ops' filter goes where the run's ops are chosen)
        sql = sql.replace("WHERE o.run_id = :run)", f"""WHERE o.run_id = :run AND (o.hist_place_id IN (
    SELECT p.id FROM (SELECT id, block, layer FROM place) p WHERE {LAYER_KEY} IN ({within}))
    OR (o.hist_place_id IS NULL AND '[? glue]' IN ({within}))))""", 1)
    out = []
    for run_id, freq in conn.execute(text(
            f"SELECT id, freq_mhz FROM run WHERE id IN ({', '.join(str(int(r)) for r in run_ids)})")).all():
        for row in conn.execute(text(sql), {"run": run_id, "freq": float(freq), **params}):
            # (run, section, grouping, key, device, iterations, ops, stored metric values ...)
            if row[1] != section:
                continue
            out.append((run_id, row[3], row[4], row[5], row[6], *_in_units(row, ms)))
    return out


def _in_units(row: Any, ms: list[Metric]) -> list[float | None]:
    """The metric values and spreads of one row of :func:`build_sql` in the metrics' units."""
    return [None if v is None else float(v) / m.scale
            for i, m in enumerate(ms) for v in (row[7 + 2 * i], row[8 + 2 * i])]


def run_rows(conn: Connection, run_id: int, groupings: list[Grouping], metrics: list[Metric]
             ) -> list[tuple[Any, ...]]:
    """Every section's rows of ``groupings`` for one run, computed from its ops in one pass, as
    ``(section, grouping, key, device, iterations, ops, <metric>, <metric spread> ...)`` in the metrics' units
    (what ``changes`` reads for metrics that are not stored)."""
    freq = conn.execute(text("SELECT freq_mhz FROM run WHERE id = :r"), {"r": run_id}).scalar_one()
    return [(row[1], row[2], row[3], row[4], row[5], row[6], *_in_units(row, metrics))
            for row in conn.execute(text(build_sql(groupings, metrics=metrics, backend=dialect.name(conn))),
                                    {"run": run_id, "freq": float(freq)})]


_SQL = build_sql()
# The by-id rows that warehouse.analysis.rollupcalc computes the stored rollups from.
_BY_ID_SQL = (f"WITH {_scoped('', [], template=_BY_ID)}\nSELECT custom, section, iteration, device, place_id, "
              "op_code_id, ops, kernel_ns, op2op_ns, fw_ns, first_cycle, last_cycle FROM by_id")
_NEW = "rollup_new"  # the run's rows before their keys are ids: a temporary table of the connection
_NEW_COLUMNS = ["run_id", "section", "grouping", "key", "device", "iterations", "ops", *_stored_columns()]
_NEW_TYPES = ["BIGINT", "TEXT", "TEXT", "TEXT", "INTEGER", "INTEGER", *["DOUBLE PRECISION"] * (
    len(_NEW_COLUMNS) - 6)]


def _build_in_sql(conn: Connection, run_id: int, freq_mhz: float, key_conn: Connection | None) -> None:
    """The rollups of a run written by the database alone (rows, keys and ids in SQL): what numpy does not
    mirror, and big runs, whose memory stays flat (the SQL's sorter spills to disk)."""

    conn.execute(text(f"DROP TABLE IF EXISTS {_NEW}"))
    conn.execute(text(f"CREATE TEMPORARY TABLE {_NEW} ("
                      + ", ".join(f"{c} {ty}" for c, ty in zip(_NEW_COLUMNS, _NEW_TYPES)) + ")"))
    conn.execute(text(f"INSERT INTO {_NEW} ({', '.join(_NEW_COLUMNS)})\n{_SQL}"),
                 {"run": run_id, "freq": float(freq_mhz)})
    key_sql = dialect.KEY_DIGEST[dialect.name(conn)]
    digest = key_sql.format(g="n.grouping", k="n.key")
    # (in key order: two ingests that meet the same new keys never deadlock)
    missing = (f"SELECT DISTINCT n.grouping, n.key FROM {_NEW} n WHERE NOT EXISTS "
               f"(SELECT 1 FROM rollup_key k WHERE k.digest = {digest}) ORDER BY 1, 2")
    if key_conn is None or key_conn is conn:
        conn.execute(text(f"INSERT INTO rollup_key (grouping, key, digest) SELECT m.grouping, m.key, "
                          f"{key_sql.format(g='m.grouping', k='m.key')} FROM ({missing}) m"))
    else:  # streamed from this connection's temporary table to the one that commits them (memory stays flat)
        # (options on the statement: Connection.execution_options would change the connection for good)
        result = conn.execute(text(missing).execution_options(stream_results=True, yield_per=5000))
        for part in result.partitions(5000):
            key_conn.execute(dialect.insert_ignore(key_conn, t.rollup_key), [
                {"grouping": g, "key": k, "digest": dialect.key_digest(g, k)} for g, k in part])
    values = ", ".join(f"n.{c}" for c in ["iterations", "ops", *_stored_columns()])
    # (the texts compared too: two keys of one digest would share rows silently; `check` would see them missing)
    conn.execute(text(
        f"INSERT INTO rollup_row (run_id, section, key_id, device, iterations, ops, {', '.join(_stored_columns())})"
        f"\nSELECT n.run_id, n.section, k.id, n.device, {values}\n"
        f"FROM {_NEW} n JOIN rollup_key k ON k.digest = {digest} AND k.grouping = n.grouping AND k.key = n.key"))
    conn.execute(text(f"DROP TABLE {_NEW}"))


_ROW_COLUMNS = ["run_id", "section", "key_id", "device", "iterations", "ops", *_stored_columns()]


class KnownKeys:
    """The rollup keys of a run's ops, interned while ingest writes them (its process has time to spare while the
    reader parses), so that the rollups at the run's end find their keys' ids ready: per (grouping, key text)
    its ``rollup_key`` id (None: the digest is another key's, see :func:`_key_ids`). Keys that history's late
    corrections bring are found at the end as before; past :data:`MAX_OPS` ops nothing more is kept (a run
    that big has its rollups written by the SQL, which finds its keys itself)."""

    MAX_OPS = plan.CAPTURE_MAX_OPS

    def __init__(self) -> None:
        self.ids: dict[tuple[str, str], int | None] = {}
        self._met: set[tuple[str, str, str]] = set()
        self._keys = rollupcalc.stored_keys()  # (None: a grouping numpy does not mirror: the SQL writes them)
        self.ops = 0

    @property
    def given_up(self) -> bool:
        """Whether nothing more is kept (a run past the budget, or groupings numpy does not mirror)."""
        return self._keys is None or self.ops > self.MAX_OPS

    def give_up(self) -> None:
        """Keep nothing more (ingest foresees a run too big: the SQL writes its rollups)."""
        self.ops = self.MAX_OPS + 1
        self.ids, self._met = {}, set()

    def add(self, key_conn: Connection, combos: set[tuple[str, str, str]], ops: int) -> None:
        """The (block, layer, op code) of ``ops`` more ops (history's attribution)."""

        self.ops += ops
        if self._keys is None or self.ops > self.MAX_OPS:
            self.give_up()
            return
        new = combos - self._met
        if not new:
            return
        self._met |= new
        cats = {name: category(name) for name in {name for _, _, name in new}}  # (a regex list each)
        pairs = {(block or "", layer or "") for block, layer, _ in new}
        texts: set[tuple[str, str]] = set()
        for g, reads, key_of in self._keys:  # (each text from what it reads: a grouping of places, once a place)
            if reads == "none":
                texts.add((g, key_of("", "", "", "")))
            elif reads == "place":
                texts |= {(g, key_of(block, layer, "", "")) for block, layer in pairs}
            elif reads == "code":
                texts |= {(g, key_of("", "", name, cat)) for name, cat in cats.items()}
            else:
                texts |= {(g, key_of(block or "", layer or "", name, cats[name])) for block, layer, name in new}
        missing = {k for k in texts if k not in self.ids}
        if missing:
            _key_ids(key_conn, missing, self.ids)


def build_rollups(conn: Connection, run_id: int, freq_mhz: float, key_conn: Connection | None = None,
                  captured: rollupcalc.OpCapture | None = None, known: KnownKeys | None = None,
                  meanwhile: Callable[[], None] | None = None) -> None:
    """Write the rollups of one run (its ops and history attribution must be complete). Keys met for the first
    time are added to ``rollup_key`` on ``key_conn`` (ingest's interning connection: on PostgreSQL one that
    commits at once, so that concurrent ingests never wait on each other's keys), else on ``conn``.
    ``captured``: the run's ops as ingest kept them, so that they need not be read back; ``known``: the keys
    ingest interned already; ``meanwhile`` is called once the run's ops are read, before the rows are written (it
    must not change the run's ops)."""
    conn.execute(text("DELETE FROM rollup_row WHERE run_id = :run"), {"run": run_id})
    # (the batches come with the ids of the keys ingest interned already: rows ready to insert)
    ids: dict[tuple[str, str], int | None] = known.ids if known is not None else {}
    batches = rollupcalc.run_rows(conn, run_id, float(freq_mhz), _BY_ID_SQL, captured,
                                  ids=ids if known is not None else None)
    if meanwhile is not None:
        meanwhile()
    if batches is None:  # (not mirrored in numpy, or a big run)
        _build_in_sql(conn, run_id, freq_mhz, key_conn)
    else:
        _write_batches(conn, batches, ids, known is not None, key_conn)
    runseries.build(conn, run_id)  # (history reads these arrays of the rows: warehouse.store.runseries)


def _write_batches(conn: Connection, batches: Any, ids: dict[tuple[str, str], int | None], interned: bool,
                   key_conn: Connection | None) -> None:
    """numpy's rollup rows into ``rollup_row``, their keys' ids found in Python (``interned``: the batches come
    with the rows whose keys ingest interned already, ready to insert)."""
    # numpy's rows, their keys' ids found in Python (the SQL writer's temporary table and digests per row cost
    # 0.5 s of a 100,000-op run)
    grouping = None
    for batch in batches:
        ready, batch = batch if interned else ([], batch)
        if ready:
            dialect.bulk_insert(conn, "rollup_row", _ROW_COLUMNS, ready)
        if not batch:
            continue
        if batch[0][2] != grouping and not interned:  # (a grouping's keys are never another's: only one
            grouping = batch[0][2]                     # grouping's are kept)
            ids.clear()
        _key_ids(key_conn or conn, {(g, k) for _, _, g, k, *_ in batch if (g, k) not in ids}, ids)
        # (a key whose digest is another key's gets no rows: `check` sees them missing, never shared silently)
        rows = [(r, sec, kid, *rest) for r, sec, g, k, *rest in batch if (kid := ids[(g, k)]) is not None]
        rows.sort(key=lambda row: (row[1], row[2], row[3]))  # in the primary key's order: appends, not seeks
        dialect.bulk_insert(conn, "rollup_row", _ROW_COLUMNS, rows)


def _key_ids(key_conn: Connection, keys: set[tuple[str, str]],
             ids: dict[tuple[str, str], int | None]) -> None:
    """Add to ``ids`` the ``rollup_key`` id of each (grouping, key) of ``keys``, adding the missing ones on
    ``key_conn``; None for a key whose digest is stored for other texts (or is another of ``keys``')."""

    by_digest: dict[bytes, tuple[str, str]] = {}
    for g, k in keys:
        ids[(g, k)] = None  # (until found: two of the run's keys of one digest share none)
        by_digest.setdefault(dialect.key_digest(g, k), (g, k))
    found = dialect.resolve_ids(key_conn, t.rollup_key, "digest", {
        d: {"grouping": g, "key": k, "digest": d} for d, (g, k) in by_digest.items()}, also=("grouping", "key"))
    for d, texts in by_digest.items():
        kid, g, k = found[d]
        ids[texts] = kid if (g, k) == texts else None


def check_rollups(conn: Connection, step: Callable[[], None] | None = None) -> list[str]:
    """Problems: runs whose stored rollups differ from rollups computed again from their ops (``step`` is called
    after each run)."""

    problems = []
    wrong = [(g, k) for g, k, d in conn.execute(text("SELECT grouping, key, digest FROM rollup_key"))
             if bytes(d) != key_digest(g, k)]
    if wrong:  # (ingest would not find such a key again: a new night's rows would get a key of their own)
        problems.append(f"{len(wrong)} rollup key(s) whose digest is not their texts' (first: {wrong[0][0]} "
                        f"{wrong[0][1]!r})")
    values = ["iterations", "ops", *_stored_columns()]
    stored_values = ", ".join(f"r.{c}" for c in values)
    for run_id, freq in conn.execute(text("SELECT id, freq_mhz FROM run ORDER BY id")).all():
        stored = {tuple(row[:4]): row[4:] for row in conn.execute(text(
            f"SELECT r.section, k.grouping, k.key, r.device, {stored_values} FROM rollup_row r "
            "JOIN rollup_key k ON k.id = r.key_id WHERE r.run_id = :r"), {"r": run_id})}
        try:
            with conn.begin_nested():  # (PostgreSQL's float sums refuse to pass the float limit: see below)
                fresh = {tuple(row[1:5]): row[5:] for row in conn.execute(text(_SQL),
                                                                          {"run": run_id, "freq": float(freq)})}
        except DBAPIError as e:
            if dialect.sqlstate(e) != "22003":  # numeric_value_out_of_range
                raise
            # durations near 1e308 sum past the float limit, which PostgreSQL refuses where SQLite and ingest make
            # them infinite: such a run is right when its stored sums are infinite where SQL cannot make them
            if step:
                step()
            if not _past_the_limit(conn, run_id):
                problems.append(f"run {run_id}: its rollups cannot be computed again (a sum overflows) and none "
                                "of its stored values says so")
            continue
        if step:
            step()
        if stored.keys() != fresh.keys():
            problems.append(f"run {run_id}: {len(stored)} rollup rows stored, {len(fresh)} computed from its ops")
            continue
        bad = [k for k in fresh if not _close(stored[k], fresh[k])]
        if bad:
            problems.append(f"run {run_id}: {len(bad)} rollup rows disagree with the ops (first: {bad[0]})")
    return problems


def _past_the_limit(conn: Connection, run_id: int) -> bool:
    """Whether the run's stored rollups hold a value that is not finite (the sign of sums past the float limit)."""
    cols = " OR ".join(f"r.{c} IN ('Infinity'::float8, '-Infinity'::float8, 'NaN'::float8)"
                       for c in _stored_columns() if c not in ("iterations", "ops"))
    return bool(conn.execute(text(f"SELECT EXISTS (SELECT 1 FROM rollup_row r WHERE r.run_id = :r AND ({cols}))"),
                             {"r": run_id}).scalar())


def _close(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Equal row values: both missing, or numbers within 1e-6 (relative; the database may sum in another order).
    Sums past the float limit (1e308 durations) are infinite or not a number, or NULL where SQL gives up: any two
    of those agree."""
    def same(x: Any, y: Any) -> bool:
        fx = None if x is None else float(x)
        fy = None if y is None else float(y)
        if fx is None or fy is None or not math.isfinite(fx) or not math.isfinite(fy):
            big = [v for v in (fx, fy) if v is not None]
            return (fx is None and fy is None) or (not all(math.isfinite(v) for v in big) and
                                                   (len(big) == 1 or not any(math.isfinite(v) for v in big)))
        return abs(fx - fy) <= 1e-6 * max(1.0, abs(fy))
    return all(same(x, y) for x, y in zip(a, b))
