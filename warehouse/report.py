"""The OPT_BASELINE report (JSON + Markdown) of a run, from the database alone.

The contract is ``profile_summary.py`` (the user's summariser): the same keys in the same order, the same rows in
the same order, the same strings, and float sums to the last bit. Floating-point addition is not associative,
so the sums are accumulated here, in Python, over one ordered read of the ``op_detail`` view (section, then
position): that gives the oracle's exact numbers, and so its order of near-tied rows, on every back end and
whatever the physical order of the rows. It is also one read instead of eight GROUP BY sorts. The summary
views (``section_summary``, ``by_*``, ``layer_cost_split``) compute the same tables in SQL for users; a test
holds them equal to this report.
"""
from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Engine, text

from warehouse import dialect
from warehouse import schema as t
from warehouse.measures import REPORT_TABLES
from warehouse.errors import NotFound

SECTIONS = ("eager", "trace")
TOP = 10

# One op as the report reads it from op_detail (names, categories and shapes are looked up, not read per op).
_COLS = ("pos", "op_code_id", "block", "layer", "kernel_us", "fw_us", "op2op_us", "fw_start_cycle", "fw_end_cycle",
         "cores", "fidelity")
(POS, CODE, BLOCK, LAYER, KERN, FW, GAP, START, END, CORES, FID) = range(len(_COLS))


# The group tables (measures.REPORT_TABLES): their keys are read with the ops, from the registry's SQL.
GROUPS = tuple(t.key for t in REPORT_TABLES)
_KEYS = slice(len(_COLS), len(_COLS) + len(REPORT_TABLES))
_SELECT = ", ".join(list(_COLS) + [f"{t.expr} AS key_{i}" for i, t in enumerate(REPORT_TABLES)])


def _groups(ops: Sequence[Any], total: float) -> dict[str, list[dict[str, Any]]]:
    """The group tables in one pass (the oracle's per-group sums, in position order)."""
    aggs: tuple[dict[str, list], ...] = tuple({} for _ in GROUPS)
    for op in ops:
        keys = op[_KEYS]
        k, g = op[KERN], op[GAP]
        for agg, key in zip(aggs, keys):
            a = agg.get(key)
            if a is None:
                agg[key] = [1, k, g]
            else:
                a[0] += 1
                a[1] += k
                a[2] += g
    # sorted() is stable: ties keep the order of first appearance, as in the oracle
    return {name: [{"key": key, "ops": c, "kernel_us": round(s, 1), "share": round(s / total, 4),
                    "gap_us": round(gs, 1)}
                   for key, (c, s, gs) in sorted(agg.items(), key=lambda kv: -kv[1][1])]
            for name, agg in zip(GROUPS, aggs)}


def _precision_split(ops: Sequence[Any], codes: dict[int, tuple[str, str, bool]]) -> dict[str, Any]:
    """The layer cost split (``|post`` glue excluded): compute, movement between the first and last compute
    op, split before, finish after."""
    layers: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        lay = op[LAYER]
        if lay and not lay.endswith("|post"):
            layers.setdefault(lay, []).append(i)
    tot: dict[str, Any] = {"layers": 0, "compute_us": 0.0, "movement_us": 0.0, "split_us": 0.0, "finish_us": 0.0,
                           "compute_ops": 0, "ops": 0}
    per = []
    for lay, idx in layers.items():
        comp = [k for k, i in enumerate(idx) if codes[ops[i][CODE]][2]]
        if not comp:
            continue
        a, z = comp[0], comp[-1]
        kern = [ops[i][KERN] for i in idx]
        cset = set(comp)
        d = {"layer": lay, "ops": len(idx), "compute_ops": len(comp),
             "compute_us": sum(kern[k] for k in comp),
             "movement_us": sum(kern[k] for k in range(a, z + 1) if k not in cset),
             "split_us": sum(kern[k] for k in range(a)),
             "finish_us": sum(kern[k] for k in range(z + 1, len(idx)))}
        per.append({k: (round(v, 1) if isinstance(v, float) else v) for k, v in d.items()})
        tot["layers"] += 1
        for k in ("compute_us", "movement_us", "split_us", "finish_us", "compute_ops", "ops"):
            tot[k] += d[k]
    out: dict[str, Any] = {k: (round(v, 1) if isinstance(v, float) else v) for k, v in tot.items()}
    out["per_layer"] = sorted(per, key=lambda x: -(x["compute_us"] + x["movement_us"] + x["split_us"]
                                                   + x["finish_us"]))
    return out


def _read_ops(conn: Connection, run_id: int, section: str) -> list[tuple]:
    """The ops of one section, in file order, as plain tuples from the driver's own cursor (the report touches
    every op of a run; SQLAlchemy's row objects would cost a tenth of its time). Position order is file order
    within a section name, and (run_id, row_no) is indexed: no sort is needed. One section at a time keeps the
    peak memory to half the run's ops."""
    mark = dialect.paramstyle_mark(conn)
    cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cur.execute(f"SELECT {_SELECT} FROM op_detail WHERE run_id = {mark} AND section = {mark} ORDER BY row_no",
                    (run_id, section))
        return list(cur.fetchall())
    finally:
        cur.close()


def _section(conn: Connection, run_id: int, section: str, codes: dict[int, tuple[str, str, bool]],
             freq: float) -> dict[str, Any]:
    ops = _read_ops(conn, run_id, section)
    kern = [op[KERN] for op in ops]
    gaps = [op[GAP] for op in ops]
    starts = [op[START] for op in ops if op[START] and op[START] > 0]
    ends = [op[END] for op in ops if op[END] and op[END] > 0]
    span = (max(ends) - min(starts)) / freq if starts and ends else None
    total = sum(kern) or 1.0
    fid: dict[str, int] = defaultdict(int)
    for op in ops:
        if op[FID]:
            fid[op[FID]] += 1
    cores = [float(op[CORES]) for op in ops]
    order = sorted(range(len(ops)), key=lambda i: -kern[i])[:TOP]
    shapes = {}
    if order:  # the shapes and memory configs of the top ops only
        shapes = {r[0]: r[1:] for r in conn.execute(text(
            "SELECT pos, input0_shape, input0_memory, output0_memory FROM op_detail WHERE run_id = :r AND "
            f"section = :s AND pos IN ({', '.join(str(i) for i in order)})"), {"r": run_id, "s": section})}
    top_ops = [{"index": i, "op": codes[ops[i][CODE]][0], "block": ops[i][BLOCK], "layer": ops[i][LAYER],
                "kernel_us": round(kern[i], 1), "fw_us": round(ops[i][FW], 1), "cores": int(ops[i][CORES]),
                "fidelity": ops[i][FID], "input0": shapes[i][0], "in0_mem": shapes[i][1], "out0_mem": shapes[i][2]}
               for i in order]
    gap_order = sorted(range(1, len(ops)), key=lambda i: -gaps[i])[:TOP]
    top_gaps = [{"index": i, "op": codes[ops[i][CODE]][0], "after": codes[ops[i - 1][CODE]][0],
                 "gap_us": round(gaps[i], 1), "block": ops[i][BLOCK], "layer": ops[i][LAYER]} for i in gap_order]
    nz = [g for g in gaps[1:] if g > 0]
    out = {"ops": len(ops), "kernel_sum_us": round(sum(kern), 1), "fw_sum_us": round(sum(op[FW] for op in ops), 1),
           "op2op_sum_us": round(sum(gaps), 1),
           "op2op_median_us": round(statistics.median(nz), 2) if nz else None,
           "span_us": round(span, 1) if span else None, "freq_mhz": freq,
           "cores_median": statistics.median(cores) if cores else None,
           "ops_below_120_cores": sum(1 for c in cores if 0 < c < 120), "fidelity": dict(fid)}
    out.update(_groups(ops, total))
    out.update(top_ops=top_ops, top_gaps=top_gaps, precision_split=_precision_split(ops, codes))
    return out


def build_report(engine: Engine, run_id: int) -> dict[str, Any]:
    """The oracle's JSON document for a stored run."""
    with engine.connect() as conn:
        run = conn.execute(t.run.select().where(t.run.c.id == run_id)).mappings().first()
        if run is None:
            raise NotFound(f"no run {run_id}; `warehouse runs` lists them")
        freq = float(run["freq_mhz"])
        ids = conn.execute(text("SELECT DISTINCT trace_id, replay_session FROM op_detail WHERE run_id = :r "
                                "AND section = 'trace'"), {"r": run_id}).all()
        codes = {i: (n, c, bool(x)) for i, n, c, x in conn.execute(
            text("SELECT id, name, category, is_compute FROM op_code"))}
        res: dict[str, Any] = {
            "csv": run["source_path"], "columns": json.loads(run["columns"]), "freq_mhz": freq,
            "trace_matches_eager_op_sequence": bool(run["trace_matches_eager"]),
            "trace_ids": sorted({r[0] for r in ids}), "replay_sessions": sorted({r[1] for r in ids}),
        }
        for s in SECTIONS:
            res[s] = _section(conn, run_id, s, codes, freq)
    return res


def md_table(rows: list[dict[str, Any]], n: int, label: str) -> str:
    """A group table of the report, as the oracle prints it."""
    out = [f"| {label} | ops | kernel us | share | op-to-op us |", "|---|---:|---:|---:|---:|"]
    for r in rows[:n]:
        out.append(f"| {r['key']} | {r['ops']} | {r['kernel_us']:.1f} | {100 * r['share']:.1f} % | {r['gap_us']:.1f} |")
    return "\n".join(out)


def render_text(res: dict[str, Any]) -> str:
    """The oracle's text (stdout and the Markdown file) for a report document."""
    t_ = res["trace"]
    same = res["trace_matches_eager_op_sequence"]
    lines = [f"csv: {res['csv']}", f"freq {res['freq_mhz']} MHz; trace op sequence == eager: {same}; "
             f"trace ids {res['trace_ids']}; replay sessions {res['replay_sessions']}"]
    for s in SECTIONS:
        x = res[s]
        lines.append(f"{s}: ops {x['ops']}  kernel {x['kernel_sum_us']:.1f} us  fw {x['fw_sum_us']:.1f} us  "
                     f"op2op {x['op2op_sum_us']:.1f} us (median {x['op2op_median_us']})  span {x['span_us']} us  "
                     f"cores median {x['cores_median']}  <120 cores: {x['ops_below_120_cores']}  "
                     f"fidelity {x['fidelity']}")
    for tb in sorted(REPORT_TABLES, key=lambda tb: tb.md_order):
        lines += ["", md_table(t_[tb.key], tb.top, f"{tb.title} (trace)")]
    lines += ["", "| # | op | block | layer | kernel us | cores | fidelity | input0 | in mem | out mem |",
              "|---:|---|---|---|---:|---:|---|---|---|---|"]
    for k, o in enumerate(t_["top_ops"], 1):
        lines.append(f"| {k} | {o['op']} | {o['block']} | {o['layer']} | {o['kernel_us']:.1f} | {o['cores']} | "
                     f"{o['fidelity']} | {o['input0']} | {o['in0_mem']} | {o['out0_mem']} |")
    ps = t_["precision_split"]
    lines += ["", "layer cost split (trace): " + json.dumps({k: v for k, v in ps.items() if k != "per_layer"}),
              "", "| layer | ops | compute ops | compute us | movement us | split us | finish us |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for x in ps["per_layer"][:25]:
        lines.append(f"| {x['layer']} | {x['ops']} | {x['compute_ops']} | {x['compute_us']} | {x['movement_us']} | "
                     f"{x['split_us']} | {x['finish_us']} |")
    lines += ["", "largest op-to-op gaps (trace): " + json.dumps(t_["top_gaps"])]
    return "\n".join(lines)


def render_json(res: dict[str, Any]) -> str:
    """The report document as the oracle writes it."""
    return json.dumps(res, indent=1) + "\n"
