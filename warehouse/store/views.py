"""The summary views, defined once, in SQL; the few that differ between SQLite and PostgreSQL (reading the JSON
cells, sums in file order) give both texts side by side.

The section views (``section_*``, ``by_*``, ``layer_cost_split``) are the report's tables for SQL users; a test
holds them equal to the oracle's goldens, every printed digit, on both back ends: their sums add in file order
(see :func:`_in_file_order`), as the report's do.

``migrations/env.py`` drops them all before migrating and recreates them at head, so a migration never has to
care about them. Every view keeps ``run_id`` (and ``section``) so that SQL can compare runs. Times are in
microseconds, as in the report. The section views cover the oracle's sections (``eager``, ``trace``); the
position ``pos`` is the op's index in its section (all sections of the same name in a run, concatenated).
"""
from __future__ import annotations

import hashlib

from sqlalchemy import Connection, inspect, text

from warehouse.store import dialect
from warehouse.registry.codes import ATTRIBUTION, HIST_HOW, text_sql
from warehouse.registry.columns import typed_text_sql
from warehouse.registry.contract import FEW_CORES, SQL_NOT_POST, SQL_SECTIONS
from warehouse.store.dialect import AS_NUMBER, CHUNK_ROWS, IN_FILE_ORDER, JSON_CELL, STATIC_CELLS
from warehouse.store.familysql import family_views
from warehouse.registry.measures import REPORT_TABLES
from warehouse.store.perfsql import op_perf_view_sql
from warehouse.store.lite import VIEWS_STAMP
from warehouse.store.rollupsql import rollup_view_sql
from warehouse.registry.measures import GROUPINGS, METRICS
from warehouse.store.schema import TABLE_DOCS

def _cell_view(backend: str) -> str:
    return f"""
CREATE VIEW csv_cell AS
WITH rc AS (
  {CHUNK_ROWS[backend]}),
c AS (
  SELECT rc.run_id, rc.row_no, k.name AS column_name, k.position,
         COALESCE({JSON_CELL[backend]}, {typed_text_sql("k.name", "o")}) AS value
  FROM rc JOIN run_column k ON k.run_id = rc.run_id JOIN cell_tuple t ON t.id = rc.static_id{STATIC_CELLS[backend]}
  LEFT JOIN op o ON o.run_id = rc.run_id AND o.row_no = rc.row_no AND k.kind = 'volatile')
SELECT run_id, row_no, column_name, position, COALESCE(value, '') AS value,
       {AS_NUMBER[backend]} AS number
FROM c"""


_CELL_SQL = {backend: _cell_view(backend) for backend in JSON_CELL}


def _median(name: str, value: str, where: str, column: str) -> str:
    # Portable median: the middle row, or the mean of the two middle rows (statistics.median). Both windows
    # share one sort: same partition, same order, only the frame differs.
    return f"""
CREATE VIEW {name} AS
WITH v AS (
  SELECT run_id, section, {value} AS v,
         ROW_NUMBER() OVER (PARTITION BY run_id, section ORDER BY {value}) AS rn,
         COUNT(*) OVER (PARTITION BY run_id, section ORDER BY {value}
                        ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS n
  FROM op_detail WHERE section_kind IN __SECTIONS__ AND {where})
SELECT run_id, section, AVG(v) AS {column} FROM v
WHERE rn IN ((n + 1) / 2, (n + 2) / 2) GROUP BY run_id, section"""


def _in_file_order(sql: str) -> dict[str, str]:
    """A view whose sums add in file order (``{ORDER}`` in ``sql``; see dialect.IN_FILE_ORDER)."""
    return {backend: sql.replace("{ORDER}", order) for backend, order in IN_FILE_ORDER.items()}


def _group(name: str, key: str, doc: str) -> tuple[str, str, dict[str, str]]:
    grouped = f"""(SELECT run_id, section, {key} AS key, COUNT(*) AS ops, SUM(kernel_us{{ORDER}}) AS kernel_us,
             SUM(op2op_us{{ORDER}}) AS op2op_us, MIN(pos) AS first_pos
      FROM op_detail WHERE section_kind IN __SECTIONS__ GROUP BY run_id, section, {key}) g"""
    sqlite = f"""
CREATE VIEW {name} AS
SELECT run_id, section, key, ops, kernel_us,
       100 * kernel_us / CASE WHEN SUM(kernel_us) OVER (PARTITION BY run_id, section) = 0 THEN 1.0
                              ELSE SUM(kernel_us) OVER (PARTITION BY run_id, section) END AS share_pct,
       op2op_us, first_pos
FROM {grouped.replace("{ORDER}", IN_FILE_ORDER["sqlite"])}"""
    # PostgreSQL: the share's total is the section's kernel time added in file order, as the report's
    postgresql = f"""
CREATE VIEW {name} AS
SELECT g.run_id, g.section, g.key, g.ops, g.kernel_us,
       100 * g.kernel_us / CASE WHEN t.total = 0 THEN 1.0 ELSE t.total END AS share_pct, g.op2op_us,
       g.first_pos
FROM {grouped.replace("{ORDER}", IN_FILE_ORDER["postgresql"])}
JOIN (SELECT run_id, section, SUM(kernel_us{IN_FILE_ORDER["postgresql"]}) AS total FROM op_detail
      WHERE section_kind IN __SECTIONS__ GROUP BY run_id, section) t
  ON t.run_id = g.run_id AND t.section = g.section"""
    return name, doc, {"sqlite": sqlite, "postgresql": postgresql}


def _series_views() -> list[tuple[str, str, str]]:
    """``series`` (every rollup row with its run's time and label) and one ``series_<grouping>`` per grouping of
    the registry (all devices together), plus ``series_device`` (section totals per device)."""

    metric_cols = ", ".join(f"r.{m.column}, r.{m.spread_column}" for m in METRICS)
    plain = ", ".join(m.column for m in METRICS)
    out = [("series", "per run, section, grouping, key and device (-1: all): per-iteration metrics and their "
            "spread over replays, from the rollups", f"""
CREATE VIEW series AS
SELECT r.run_id, i.run_time, i.label, r.section, r.grouping, r.key, r.device, r.iterations, r.ops, {metric_cols},
       i.rank
FROM rollup r JOIN run_info i ON i.run_id = r.run_id""")]
    for g in GROUPINGS:
        if not g.cli:
            continue
        name = "series_" + g.key.replace("-", "_")
        out.append((name, f"per run and section, by {g.label} (all devices): ops and {plain} per iteration", f"""
CREATE VIEW {name} AS
SELECT run_id, run_time, label, section, key, iterations, ops, {plain}, rank
FROM series WHERE grouping = '{g.key}' AND device = -1"""))
    out.append(("series_device", "per run, section and device: the section totals per iteration", f"""
CREATE VIEW series_device AS
SELECT run_id, run_time, label, section, device, iterations, ops, {plain}, rank
FROM series WHERE grouping = 'section' AND device >= 0"""))
    return out


# (name, one line for the README, SQL), in creation order: a view may read only the views above it.
VIEWS: list[tuple[str, str, str | dict[str, str]]] = [
    ("capture_rank", "the runs of multi-host captures (tt-run --tracy: a file per rank): each run's capture (the "
                     "id of rank 0's run) and rank, from its host and rank tags; join on run_id for (rank, device)",
     {"sqlite": """
CREATE VIEW capture_rank AS
SELECT r.run_id, CAST(h.value AS INTEGER) AS capture_id, CAST(r.value AS INTEGER) AS rank
FROM run_tag r JOIN run_tag h ON h.run_id = r.run_id AND h.key = 'host'
WHERE r.key = 'rank' AND r.value GLOB '[0-9]*' AND r.value NOT GLOB '*[^0-9]*'
  AND h.value GLOB '[0-9]*' AND h.value NOT GLOB '*[^0-9]*'""", "postgresql": """
CREATE VIEW capture_rank AS
SELECT r.run_id, CAST(h.value AS INTEGER) AS capture_id, CAST(r.value AS INTEGER) AS rank
FROM run_tag r JOIN run_tag h ON h.run_id = r.run_id AND h.key = 'host'
WHERE r.key = 'rank' AND r.value ~ '^[0-9]{1,9}$' AND h.value ~ '^[0-9]{1,9}$'"""}),
    ("rollup", "per run, section, grouping, key and device: per-iteration kernel / op-to-op / FW / span us and "
               "their spread over replays (what history reads; stored in `rollup_row` and `rollup_key`)",
     rollup_view_sql()),
    ("op_detail", "every op with its run, section, op code, category and times in us (op2op_us 0 for a "
                  "section's first op)", """
CREATE VIEW op_detail AS
SELECT o.id AS op_id, o.run_id, o.row_no, s.name AS section, s.kind AS section_kind, o.pos,
       COALESCE(pl.block, '') AS block, COALESCE(pl.layer, '') AS layer, __ATTRIBUTION__ AS attribution,
       o.occurrence, o.marker_row,
       o.op_code_id, c.name AS op_code, c.category, CASE WHEN c.is_compute THEN 1 ELSE 0 END AS is_compute,
       ps.op_type, o.device_id, o.global_call_count,
       COALESCE(o.kernel_ns, 0) / 1000.0 AS kernel_us, COALESCE(o.fw_ns, 0) / 1000.0 AS fw_us,
       CASE WHEN o.pos = 0 THEN 0.0 ELSE COALESCE(o.op2op_ns, 0) / 1000.0 END AS op2op_us,
       o.fw_start_cycle, o.fw_end_cycle, o.host_start_ns, o.host_end_ns, COALESCE(o.cores, 0) AS cores,
       COALESCE(ps.fidelity, '') AS fidelity, COALESCE(o.trace_id, '') AS trace_id,
       COALESCE(o.replay_session, '') AS replay_session, COALESCE(ps.input0_shape, '') AS input0_shape,
       COALESCE(ps.input0_memory, '') AS input0_memory, COALESCE(ps.output0_memory, '') AS output0_memory,
       __RANK__
FROM op o
JOIN op_code c ON c.id = o.op_code_id
LEFT JOIN section s ON s.id = o.section_id
LEFT JOIN place pl ON pl.id = o.place_id
LEFT JOIN perf_shape ps ON ps.id = o.perf_shape_id"""),
    ("section_totals_raw", "per run and section: ops and unrounded kernel / FW / op-to-op sums, span in cycles",
     _in_file_order("""
CREATE VIEW section_totals_raw AS
SELECT run_id, section, COUNT(*) AS ops, SUM(kernel_us{ORDER}) AS kernel_sum_us, SUM(fw_us{ORDER}) AS fw_sum_us,
       SUM(op2op_us{ORDER}) AS op2op_sum_us,
       MIN(CASE WHEN fw_start_cycle > 0 THEN fw_start_cycle END) AS first_start_cycle,
       MAX(CASE WHEN fw_end_cycle > 0 THEN fw_end_cycle END) AS last_end_cycle,
       SUM(CASE WHEN cores > 0 AND cores < __FEW_CORES__ THEN 1 ELSE 0 END) AS ops_below_120_cores
FROM op_detail WHERE section_kind IN __SECTIONS__ GROUP BY run_id, section""")),
    ("section_gap_median", "per run and section: median op-to-op gap (us) of the non-zero gaps after the first op",
     _median("section_gap_median", "op2op_us", "pos > 0 AND op2op_us > 0", "op2op_median_us")),
    ("section_cores_median", "per run and section: median core count per op",
     _median("section_cores_median", "cores", "1 = 1", "cores_median")),
    ("section_summary", "per run and section: the report's totals (ops, sums, medians, span at the run's "
                        "frequency)", """
CREATE VIEW section_summary AS
SELECT t.run_id, t.section, t.ops, t.kernel_sum_us, t.fw_sum_us, t.op2op_sum_us,
       g.op2op_median_us,
       (t.last_end_cycle - t.first_start_cycle) / r.freq_mhz AS span_us, r.freq_mhz,
       c.cores_median, t.ops_below_120_cores
FROM section_totals_raw t
JOIN run r ON r.id = t.run_id
LEFT JOIN section_gap_median g ON g.run_id = t.run_id AND g.section = t.section
LEFT JOIN section_cores_median c ON c.run_id = t.run_id AND c.section = t.section"""),
    ("section_fidelity", "per run and section: ops per math fidelity (first_pos keeps the file's order)", """
CREATE VIEW section_fidelity AS
SELECT run_id, section, fidelity, COUNT(*) AS ops, MIN(pos) AS first_pos
FROM op_detail WHERE section_kind IN __SECTIONS__ AND fidelity <> '' GROUP BY run_id, section, fidelity"""),
    *[_group(t.view, t.expr, t.doc) for t in REPORT_TABLES],
    ("layer_cost_split", "per run, section and layer with a conv / matmul: compute, movement, split, finish us",
     _in_file_order("""
CREATE VIEW layer_cost_split AS
WITH l AS (
  SELECT run_id, section, layer, pos, kernel_us, is_compute,
         MIN(CASE WHEN is_compute = 1 THEN pos END) OVER p AS a,
         MAX(CASE WHEN is_compute = 1 THEN pos END) OVER p AS z
  FROM op_detail
  WHERE section_kind IN __SECTIONS__ AND layer <> '' AND __NOT_POST__
  WINDOW p AS (PARTITION BY run_id, section, layer ORDER BY pos
               ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)),
c AS (
  SELECT run_id, section, layer, pos, is_compute, kernel_us,
         CASE WHEN is_compute = 1 THEN 'compute' WHEN pos < a THEN 'split' WHEN pos > z THEN 'finish'
              ELSE 'movement' END AS part
  FROM l WHERE a IS NOT NULL)
SELECT run_id, section, layer, COUNT(*) AS ops, SUM(is_compute) AS compute_ops,
       SUM(CASE WHEN part = 'compute' THEN kernel_us ELSE 0 END{ORDER}) AS compute_us,
       SUM(CASE WHEN part = 'movement' THEN kernel_us ELSE 0 END{ORDER}) AS movement_us,
       SUM(CASE WHEN part = 'split' THEN kernel_us ELSE 0 END{ORDER}) AS split_us,
       SUM(CASE WHEN part = 'finish' THEN kernel_us ELSE 0 END{ORDER}) AS finish_us,
       SUM(CASE WHEN part = 'movement' THEN 1 ELSE 0 END) AS movement_ops,
       SUM(CASE WHEN part = 'split' THEN 1 ELSE 0 END) AS split_ops,
       SUM(CASE WHEN part = 'finish' THEN 1 ELSE 0 END) AS finish_ops,
       MIN(pos) AS first_pos
FROM c GROUP BY run_id, section, layer""")),
    ("op_custom_section", "ops inside each custom section (S .. S_end pairs; an unclosed one runs to the end)", """
CREATE VIEW op_custom_section AS
SELECT o.id AS op_id, o.run_id, o.row_no, s.id AS section_id, s.name AS section, s.start_row, s.end_row
FROM op o
JOIN section s ON s.run_id = o.run_id AND s.kind = 'custom' AND o.row_no > s.start_row
              AND (s.end_row IS NULL OR o.row_no < s.end_row)"""),
    ("run_info", "runs with their time (capture, else ingest), label, file, op count, frequency and arch; a rank "
                 "of a multi-host capture: its capture (rank 0's run id) and rank (else NULL)", """
CREATE VIEW run_info AS
SELECT r.id AS run_id, COALESCE(r.captured_at, r.ingested_at) AS run_time, r.captured_at, r.ingested_at,
       r.label, r.file_name, r.op_count, r.freq_mhz, r.arch, r.trace_matches_eager, c.capture_id, c.rank
FROM run r LEFT JOIN capture_rank c ON c.run_id = r.id"""),
    *_series_views(),
    ("op_history", "every op with both attributions: the report's (block, layer) and history's (hist_block, "
                   "hist_layer, hist_how) and its replay iteration", """
CREATE VIEW op_history AS
SELECT o.id AS op_id, o.run_id, o.row_no, s.name AS section, o.pos, o.iteration, o.iter_pos,
       COALESCE(pl.block, '') AS block, COALESCE(pl.layer, '') AS layer, COALESCE(hp.block, '') AS hist_block,
       COALESCE(hp.layer, '') AS hist_layer, __HIST_HOW__ AS hist_how, c.name AS op_code, o.device_id,
       COALESCE(o.kernel_ns, 0) / 1000.0 AS kernel_us, __RANK__
FROM op o JOIN op_code c ON c.id = o.op_code_id LEFT JOIN section s ON s.id = o.section_id
     LEFT JOIN place pl ON pl.id = o.place_id LEFT JOIN place hp ON hp.id = o.hist_place_id"""),
    ("op_perf", "every op with tt-perf-report's per-op analysis (unmerged, one row per device): device time, "
                "op-to-op, cores, achieved DRAM GB/s and TFLOPs, % of peak, Bound, category, math fidelity, host "
                "duration, and the op's identity across runs (section / block / layer / op code #occurrence)",
     op_perf_view_sql()),
    ("perf_series", "op_perf over runs: per run (time, label), op identity and device, Bound, FLOPs %, DRAM %, "
                    "device time and op-to-op us, sub-device and worker core budget", """
CREATE VIEW perf_series AS
SELECT p.run_id, i.run_time, i.label, p.identity, p.device, p.op_code, p.category, p.bound, p.flops_pct,
       p.dram_pct, p.tflops, p.dram_gbs, p.device_time_us, p.op2op_us, p.cores, p.math_fidelity, p.sub_device,
       p.available_cores, i.rank
FROM op_perf p JOIN run_info i ON i.run_id = p.run_id"""),
    ("perf_sub_device_series", "per run, device and sub-device (NULL: the full grid), as `perf` totals a "
                               "partitioned grid: ops, device time and op-to-op summed (us), the least and most "
                               "worker cores its ops were given", """
CREATE VIEW perf_sub_device_series AS
SELECT run_id, run_time, label, rank, device, sub_device, COUNT(*) AS ops,
       SUM(COALESCE(device_time_us, 0)) AS device_time_us, SUM(COALESCE(op2op_us, 0)) AS op2op_us,
       MIN(available_cores) AS worker_cores_min, MAX(available_cores) AS worker_cores_max
FROM perf_series WHERE device IS NOT NULL
GROUP BY run_id, run_time, label, rank, device, sub_device"""),
    ("csv_cell", "every cell of every stored row (ops and signposts) by its CSV column name: the text as in the "
                 "file and, when the whole cell is a number, the number", _CELL_SQL),
    *family_views(),
    ("op_tensor", "every op's input / output tensors (static cells): W, Z, Y, X logical and padded, layout, "
                  "datatype, memory", """
CREATE VIEW op_tensor AS
SELECT o.run_id, o.row_no, o.device_id AS device, p.io, p.idx, p.w, p.z, p.y, p.x, p.w_pad, p.z_pad, p.y_pad,
       p.x_pad, p.layout, p.datatype, p.memory, __RANK__
FROM op o JOIN perf_tensor p ON p.perf_shape_id = o.perf_shape_id"""),
    ("op_identity", "every op with its identity across runs: section / block / layer / op code #occurrence", """
CREATE VIEW op_identity AS
SELECT d.run_id, i.run_time, i.label, d.section, d.block, d.layer, d.op_code, d.occurrence,
       COALESCE(d.section, '') || ' / ' || d.block || ' / ' || d.layer || ' / ' || d.op_code || ' #' || d.occurrence
         AS identity,
       d.kernel_us, d.fw_us, d.op2op_us, d.cores, d.replay_session, i.rank
FROM op_detail d JOIN run_info i ON i.run_id = d.run_id"""),
]



def _contract(sql: str | dict[str, str]) -> str | dict[str, str]:
    """The oracle's vocabulary (warehouse.registry.contract) put into a view's SQL: ``__SECTIONS__`` (its two sections),
    ``__FEW_CORES__`` (the core count it counts ops below), ``__NOT_POST__`` (a layer that is no ``|post`` glue);
    and the texts of the op table's codes (warehouse.registry.codes): ``__ATTRIBUTION__``, ``__HIST_HOW__``; an op's
    rank (``__RANK__``, :func:`warehouse.store.dialect.rank_of`)."""
    if isinstance(sql, dict):
        return {k: str(_contract(v)) for k, v in sql.items()}
    return (sql.replace("__SECTIONS__", SQL_SECTIONS).replace("__FEW_CORES__", str(FEW_CORES))
            .replace("__NOT_POST__", SQL_NOT_POST).replace("__ATTRIBUTION__", text_sql("o.attribution", ATTRIBUTION))
            .replace("__HIST_HOW__", text_sql("o.hist_how", HIST_HOW)).replace("__RANK__", dialect.rank_of("o")))


VIEWS = [(name, doc, _contract(sql)) for name, doc, sql in VIEWS]
VIEW_NAMES: list[str] = [name for name, _, _ in VIEWS]


# A fingerprint of the view definitions, kept in the database as a one-row view: a warehouse at head whose
# views came from another version of this module gets them recreated on open (see db.open_db).
VIEWS_HASH = hashlib.sha256("\n".join(v if isinstance(v, str) else "\n".join(v.values())
                                      for _, _, v in VIEWS).encode()).hexdigest()[:16]


def view_sql(sql: str | dict[str, str], dialect: str) -> str:
    """A view's CREATE statement for a back end (most are the same on both)."""
    return sql if isinstance(sql, str) else sql[dialect]
_STAMP = VIEWS_STAMP  # (the light read path reads it too)


def not_a_view(name: str, type_: str, parent_names: dict) -> bool:
    """Alembic ``include_name`` hook: the views are this module's, never the models' (autogenerate and check
    would otherwise see them as tables to drop)."""
    return not (type_ == "table" and name in VIEW_NAMES + [_STAMP])


def create_views(conn: Connection) -> None:
    """Create every view (the schema must be at head); on PostgreSQL, tables and views get their one-line docs
    as comments (psql's \\d+ and other tools show them)."""
    for _, _, sql in VIEWS:
        conn.execute(text(view_sql(sql, dialect.name(conn))))
    conn.execute(text(f"CREATE VIEW {_STAMP} AS SELECT '{VIEWS_HASH}' AS hash"))
    if dialect.is_postgres(conn):

        def quote(doc: str) -> str:
            return "'" + doc.replace("'", "''") + "'"
        for name, doc in TABLE_DOCS.items():
            conn.exec_driver_sql(f"COMMENT ON TABLE {name} IS {quote(doc)}".replace("%", "%%"))
        for name, doc, _ in VIEWS:
            conn.exec_driver_sql(f"COMMENT ON VIEW {name} IS {quote(doc)}".replace("%", "%%"))
        # Roles that read the tables (readers, the sandbox of `warehouse sql`) read the new views too, whoever
        # recreates them (default privileges only cover objects of the role that set them).
        readers = conn.execute(text(
            "SELECT DISTINCT grantee FROM information_schema.role_table_grants WHERE table_schema = 'public' "
            "AND table_name = 'run' AND privilege_type = 'SELECT' AND grantee NOT IN (current_user, 'PUBLIC')"
        )).scalars().all()
        for role in readers:
            conn.exec_driver_sql(f'GRANT SELECT ON ALL TABLES IN SCHEMA public TO "{role}"')


def views_current(conn: Connection) -> bool:
    """Whether the database's views are this version's."""
    if _STAMP not in inspect(conn).get_view_names():
        return False
    return conn.execute(text(f"SELECT hash FROM {_STAMP}")).scalar() == VIEWS_HASH


# Views that earlier versions created and this one no longer does: still dropped before migrating.
RETIRED_VIEWS: list[str] = []  # (series_* are still created, from the rollups since revision 0005)


def drop_views(conn: Connection) -> None:
    """Drop the warehouse's views, current and retired (a user's own views are left alone)."""
    views = set(inspect(conn).get_view_names())
    for name in [_STAMP] + list(reversed(VIEW_NAMES)) + RETIRED_VIEWS:
        if name in views:  # (a name may be a table at an older revision: `rollup` was one before 0011)
            conn.execute(text(dialect.drop_view_sql(conn, name)))
