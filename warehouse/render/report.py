"""The OPT_BASELINE report document (:func:`warehouse.report.build_report`) as profile_summary.py writes it: its
text (stdout and the Markdown file) and its JSON, to the byte."""
from __future__ import annotations

import json
from typing import Any

from warehouse.measures import REPORT_TABLES
from warehouse.report import SECTIONS


def md_table(rows: list[dict[str, Any]], n: int, label: str) -> str:
    """A group table of the report, as the oracle prints it."""
    out = [f"| {label} | ops | kernel us | share | op-to-op us |", "|---|---:|---:|---:|---:|"]
    for r in rows[:n]:
        out.append(f"| {r['key']} | {r['ops']} | {r['kernel_us']:.1f} | {100 * r['share']:.1f} % | {r['gap_us']:.1f} |")
    return "\n".join(out)


def text(res: dict[str, Any]) -> str:
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


def to_json(res: dict[str, Any]) -> str:
    """The report document as the oracle writes it."""
    return json.dumps(res, indent=1) + "\n"
