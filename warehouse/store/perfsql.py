"""The ``op_perf`` view's SQL: tt-perf-report's per-op figures (:mod:`warehouse.analysis.perf` computes the same in
Python for ``warehouse perf``) for every op row of every run, in SQL that runs on SQLite and PostgreSQL."""
from __future__ import annotations

from warehouse.capture.perffacts import ARCHS, BOUND_PCT, FIDELITIES, INVALID_GAP_NS
from warehouse.store.dialect import rank_of


def bound_sql(dram: str, flops: str) -> str:
    """:func:`warehouse.analysis.perf.bound_of` as a SQL expression over the columns (or values) ``dram`` and
    ``flops`` (the view's)."""
    return (f"CASE WHEN {dram} >= {BOUND_PCT} AND {flops} >= {BOUND_PCT} THEN 'BOTH' "
            f"WHEN {dram} >= {BOUND_PCT} THEN 'DRAM' WHEN {flops} >= {BOUND_PCT} THEN 'FLOP' ELSE 'SLOW' END")


def _sql_num(v: float) -> str:
    return repr(float(v))


def op_perf_view_sql() -> str:
    """The ``op_perf`` view: :func:`warehouse.analysis.perf.figures` for every op row of every run, unmerged (one row
    per device)."""
    def by_arch(i: int) -> str:
        return ("CASE r.perf_arch " + " ".join(f"WHEN '{a}' THEN {_sql_num(v[i])}" for a, v in ARCHS.items())
                + " END")
    peak = ("CASE s.peak_fidelity "
            + " ".join(f"WHEN '{fid}' THEN {by_arch(3 + k)}" for k, fid in enumerate(FIDELITIES)) + " END")
    return f"""
CREATE VIEW op_perf AS
WITH d AS (
  SELECT o.run_id, o.row_no, o.device_id, o.op_code_id, o.kernel_ns, o.op2op_ns, o.host_start_ns, o.host_end_ns,
         o.perf_shape_id, o.section_id, pl.block, pl.layer, o.occurrence,
         CASE WHEN o.kernel_ns IS NULL OR o.kernel_ns < 0
                   OR (o.op2op_ns < -{INVALID_GAP_NS}.0 AND ABS(o.op2op_ns) >
                       CASE WHEN o.kernel_ns * 0.5 > {INVALID_GAP_NS}.0 THEN o.kernel_ns * 0.5
                            ELSE {INVALID_GAP_NS}.0 END)
              THEN 1 ELSE 0 END AS invalid
  FROM op o LEFT JOIN place pl ON pl.id = o.place_id),
e AS (
  SELECT d.*, CASE WHEN d.invalid = 0 THEN d.kernel_ns END AS dur_ns,
         CASE WHEN d.invalid = 0 AND d.kernel_ns > 0 THEN d.kernel_ns * 1e-9 END AS dur_s,
         s.analysis, s.flop_count, s.dram_bytes, s.is_host, s.category, s.label, s.math_fidelity, s.peak_fidelity,
         s.sub_device, s.available_cores,
         CASE WHEN s.analysis = 'full' AND s.dram_sharded THEN {by_arch(1)} ELSE s.cores END AS cores,
         {by_arch(2)} AS bandwidth, {peak} AS peak_core
  FROM d JOIN run r ON r.id = d.run_id LEFT JOIN perf_shape s ON s.id = d.perf_shape_id),
f AS (
  SELECT e.*, CASE WHEN e.analysis <> 'none' AND e.dur_s IS NOT NULL THEN e.flop_count / e.dur_s END AS flops,
         CASE WHEN e.analysis = 'full' AND e.dur_s IS NOT NULL AND e.dram_bytes > 0
              THEN (e.dram_bytes / e.dur_s) / 1e9 END AS dram_gbs,
         CASE WHEN e.analysis <> 'none' THEN e.peak_core * 1e12 * e.cores END AS peak
  FROM e),
g AS (
  SELECT f.*, (f.dram_gbs / f.bandwidth) * 100 AS dram_pct,
         CASE WHEN f.peak <> 0 THEN (f.flops / f.peak) * 100 END AS flops_pct
  FROM f)
SELECT g.run_id, g.row_no, COALESCE(sec.name, '') AS section, COALESCE(g.block, '') AS block,
       COALESCE(g.layer, '') AS layer, g.occurrence,
       COALESCE(sec.name, '') || ' / ' || COALESCE(g.block, '') || ' / ' || COALESCE(g.layer, '') || ' / ' || c.name
         || ' #' || g.occurrence AS identity,
       g.device_id AS device, c.name AS op_code, g.label, g.category,
       CASE WHEN g.is_host THEN 1 ELSE 0 END AS is_host,
       CASE WHEN g.is_host THEN NULL ELSE g.dur_ns / 1000.0 END AS device_time_us,
       g.op2op_ns / 1000.0 AS op2op_us, g.invalid AS invalid_duration, g.cores,
       g.dram_gbs, g.dram_pct, g.flops / 1e12 AS tflops, g.flops_pct,
       CASE WHEN g.is_host THEN 'HOST'
            WHEN g.analysis = 'full' AND g.dram_pct IS NOT NULL AND g.flops_pct IS NOT NULL THEN
              {bound_sql("g.dram_pct", "g.flops_pct")}
            ELSE '' END AS bound,
       g.analysis AS bound_analysis, g.math_fidelity,
       CASE WHEN g.analysis = 'full' AND g.dur_s IS NOT NULL THEN g.dram_bytes END AS dram_bytes,
       g.host_end_ns - g.host_start_ns AS host_duration_ns, g.sub_device, g.available_cores, {rank_of("g")}
FROM g JOIN op_code c ON c.id = g.op_code_id LEFT JOIN section sec ON sec.id = g.section_id"""
