"""The OPT_BASELINE report (JSON + Markdown) of a run, read from the summary views.

The contract is ``profile_summary.py`` (the user's summariser): the same keys in the same order, the same rows in
the same order, the same strings; the views give the sums, this module only rounds, orders and formats them
exactly as the oracle does.
"""
from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, Engine, text

from warehouse import schema as t
from warehouse.errors import NotFound

SECTIONS = ("eager", "trace")
TOP = 10


def _q(conn: Connection, sql: str, **params: Any) -> list[dict[str, Any]]:
    return [dict(r) for r in conn.execute(text(sql), params).mappings()]


def _f(v: Any) -> float | None:
    """Floats from the back end (PostgreSQL's AVG gives Decimal)."""
    return None if v is None else float(v)


def _by_section(conn: Connection, sql: str, run_id: int) -> dict[str, list[dict[str, Any]]]:
    """Rows of a per-run query, split by section: one query per view serves both sections."""
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in SECTIONS}
    for r in _q(conn, sql, r=run_id):
        out.setdefault(r["section"], []).append(r)
    return out


GROUP_VIEWS = {"by_op": "by_op_code", "by_category": "by_category", "by_block": "by_block", "by_layer": "by_layer"}


def _groups(rows: list[dict[str, Any]], total: float) -> list[dict[str, Any]]:
    rows = list(rows)
    # The oracle sorts by kernel time, descending; ties keep the order of first appearance.
    rows.sort(key=lambda g: (-float(g["kernel_us"]), g["first_pos"]))
    return [{"key": g["key"], "ops": int(g["ops"]), "kernel_us": round(float(g["kernel_us"]), 1),
             "share": round(float(g["kernel_us"]) / total, 4), "gap_us": round(float(g["gap_us"]), 1)}
            for g in rows]


def _sum(v: Any, n: int) -> float | int:
    # Python's sum() of an empty list is the int 0; the oracle prints that as "0", not "0.0".
    return round(float(v), 1) if n else 0


def _precision_split(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rows = sorted(rows, key=lambda x: x["first_pos"])
    tot: dict[str, Any] = {"layers": 0, "compute_us": 0.0, "movement_us": 0.0, "split_us": 0.0, "finish_us": 0.0,
                           "compute_ops": 0, "ops": 0}
    per = []
    for x in rows:
        d = {"layer": x["layer"], "ops": int(x["ops"]), "compute_ops": int(x["compute_ops"]),
             "compute_us": float(x["compute_us"]),
             "movement_us": float(x["movement_us"]) if x["movement_ops"] else 0,
             "split_us": float(x["split_us"]) if x["split_ops"] else 0,
             "finish_us": float(x["finish_us"]) if x["finish_ops"] else 0}
        per.append({k: (round(v, 1) if isinstance(v, float) else v) for k, v in d.items()})
        tot["layers"] += 1
        for k in ("compute_us", "movement_us", "split_us", "finish_us", "compute_ops", "ops"):
            tot[k] += d[k]
    out: dict[str, Any] = {k: (round(v, 1) if isinstance(v, float) else v) for k, v in tot.items()}
    out["per_layer"] = sorted(per, key=lambda x: -(x["compute_us"] + x["movement_us"] + x["split_us"]
                                                   + x["finish_us"]))
    return out


def _section(conn: Connection, run_id: int, section: str, freq: float, data: dict[str, Any]) -> dict[str, Any]:
    split = _precision_split(data["layer_cost_split"][section])
    if not data["summary"][section]:
        return {"ops": 0, "kernel_sum_us": 0, "fw_sum_us": 0, "op2op_sum_us": 0, "op2op_median_us": None,
                "span_us": None, "freq_mhz": freq, "cores_median": None, "ops_below_120_cores": 0, "fidelity": {},
                "by_op": [], "by_category": [], "by_block": [], "by_layer": [], "top_ops": [], "top_gaps": [],
                "precision_split": split}
    s = data["summary"][section][0]
    kernel_sum = float(s["kernel_sum_us"])
    total = kernel_sum or 1.0
    span = _f(s["span_us"])
    median = _f(s["op2op_median_us"])
    fidelity = {r["fidelity"]: int(r["ops"]) for r in sorted(data["fidelity"][section], key=lambda r: r["first_pos"])}
    top_ops = [{"index": o["pos"], "op": o["op_code"], "block": o["block"], "layer": o["layer"],
                "kernel_us": round(float(o["kernel_us"]), 1), "fw_us": round(float(o["fw_us"]), 1),
                "cores": int(o["cores"]), "fidelity": o["fidelity"], "input0": o["input0_shape"],
                "in0_mem": o["input0_memory"], "out0_mem": o["output0_memory"]}
               for o in _q(conn, "SELECT pos, op_code, block, layer, kernel_us, fw_us, cores, fidelity, input0_shape, "
                                 "input0_memory, output0_memory FROM op_detail WHERE run_id = :r AND section = :s "
                                 f"ORDER BY kernel_us DESC, pos LIMIT {TOP}", r=run_id, s=section)]
    gaps = _q(conn, "SELECT pos, op_code, gap_us, block, layer FROM op_detail WHERE run_id = :r AND section = :s "
                    f"AND pos > 0 ORDER BY gap_us DESC, pos LIMIT {TOP}", r=run_id, s=section)
    before: dict[int, str] = {}
    if gaps:
        wanted = ", ".join(str(int(g["pos"]) - 1) for g in gaps)
        before = {r["pos"]: r["op_code"] for r in _q(
            conn, f"SELECT pos, op_code FROM op_detail WHERE run_id = :r AND section = :s AND pos IN ({wanted})",
            r=run_id, s=section)}
    top_gaps = [{"index": g["pos"], "op": g["op_code"], "after": before.get(g["pos"] - 1),
                 "gap_us": round(float(g["gap_us"]), 1), "block": g["block"], "layer": g["layer"]} for g in gaps]
    out = {
        "ops": int(s["ops"]), "kernel_sum_us": round(kernel_sum, 1), "fw_sum_us": round(float(s["fw_sum_us"]), 1),
        "op2op_sum_us": round(float(s["op2op_sum_us"]), 1),
        "op2op_median_us": round(median, 2) if median is not None else None,
        "span_us": round(span, 1) if span else None, "freq_mhz": freq,
        "cores_median": _f(s["cores_median"]), "ops_below_120_cores": int(s["ops_below_120_cores"]),
        "fidelity": fidelity,
    }
    for key, view in GROUP_VIEWS.items():
        out[key] = _groups(data[view][section], total)
    out.update(top_ops=top_ops, top_gaps=top_gaps, precision_split=split)
    return out


def build_report(engine: Engine, run_id: int) -> dict[str, Any]:
    """The oracle's JSON document for a stored run."""
    with engine.connect() as conn:
        run = conn.execute(t.run.select().where(t.run.c.id == run_id)).mappings().first()
        if run is None:
            raise NotFound(f"no run {run_id}; `warehouse runs` lists them")
        freq = float(run["freq_mhz"])
        ids = _q(conn, "SELECT DISTINCT trace_id, replay_session FROM op_detail WHERE run_id = :r "
                       "AND section = 'trace'", r=run_id)
        res: dict[str, Any] = {
            "csv": run["source_path"], "columns": json.loads(run["columns"]), "freq_mhz": freq,
            "trace_matches_eager_op_sequence": bool(run["trace_matches_eager"]),
            "trace_ids": sorted({r["trace_id"] for r in ids}),
            "replay_sessions": sorted({r["replay_session"] for r in ids}),
        }
        data = {name: _by_section(conn, f"SELECT * FROM {name} WHERE run_id = :r", run_id)
                for name in ("section_summary", "section_fidelity", "layer_cost_split", *GROUP_VIEWS.values())}
        data["summary"], data["fidelity"] = data["section_summary"], data["section_fidelity"]
        for s in SECTIONS:
            res[s] = _section(conn, run_id, s, freq, data)
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
    lines += ["", md_table(t_["by_category"], 20, "category (trace)"), "", md_table(t_["by_block"], 20, "block (trace)"),
              "", md_table(t_["by_op"], 25, "op code (trace)"), "", md_table(t_["by_layer"], 25, "layer (trace)"), "",
              "| # | op | block | layer | kernel us | cores | fidelity | input0 | in mem | out mem |",
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
