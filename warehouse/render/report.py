"""The OPT_BASELINE report document (:func:`warehouse.analysis.report.build_report`) as profile_summary.py writes it:
its
text (stdout and the Markdown file) and its JSON, to the byte."""
from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from warehouse.registry.measures import REPORT_TABLES
from warehouse.registry.contract import SECTIONS


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
    """The report document as the oracle writes it (``json.dumps(res, indent=1)``, to the byte)."""
    return indented(res) + "\n"


def indented(obj: Any, depth: int = 0) -> str:
    """``json.dumps(obj, indent=1)``, to the byte, at a fraction of its cost on a large report. The standard
    library indents with its pure-Python encoder (its C encoder only writes compact JSON): a 100,000-op run's
    4 MB report took 0.7 s. Here a dict or list of scalars, and a list of such dicts (the rows of the group and
    layer tables), is written by the C encoder at once, its item separator carrying the newline and the indent,
    and the seams between rows indented again. The C and Python encoders write every scalar alike (``repr`` of
    floats, ``ensure_ascii``, keys made strings); a test holds the two equal on random documents."""
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        nested = any(isinstance(v, (dict, list)) for v in obj.values())
        opening, closing = "{", "}"
    elif isinstance(obj, list):
        if not obj:
            return "[]"
        if type(obj[0]) is dict and (rows := _rows(obj, depth)) is not None:
            return rows
        nested = any(isinstance(v, (dict, list)) for v in obj)
        opening, closing = "[", "]"
    else:
        return _ENCODE(obj)
    pad, end = "\n" + " " * (depth + 1), "\n" + " " * depth
    if not nested and _flat(obj.values() if isinstance(obj, dict) else obj):
        return opening + pad + _flat_encoder(depth)(obj)[1:-1] + end + closing
    if isinstance(obj, dict):
        if not all(type(k) is str for k in obj):
            return _stdlib(obj, depth)  # (a key the encoder turns into a string: its own way)
        inner = ("," + pad).join(_ENCODE(k) + ": " + indented(v, depth + 1) for k, v in obj.items())
    else:
        inner = ("," + pad).join(indented(v, depth + 1) for v in obj)
    return opening + pad + inner + end + closing


_ENCODE = json.JSONEncoder().encode  # what json.dumps(x) is, without building an encoder per call


@functools.cache
def _flat_encoder(depth: int) -> Callable[[Any], str]:
    """The C encoder whose item separator ends a member's line and indents the next at ``depth`` + 1."""
    return json.JSONEncoder(separators=(",\n" + " " * (depth + 1), ": ")).encode


_FLAT = frozenset({str, int, float, bool, type(None)})
_is_flat = _FLAT.__contains__


def _flat(values: Any) -> bool:
    """Whether every value is a scalar (exact types, tested in C: this runs once per row of a table)."""
    return all(map(_is_flat, map(type, values)))


def _rows(rows: list, depth: int) -> str | None:
    """A list of flat, non-empty dicts at ``depth`` by one call of the C encoder, the seams between its dicts
    indented again (a newline only ever comes from the separator: a string's own is escaped); None when it is
    not such a list."""
    if not all(type(r) is dict and r and _flat(r.values()) for r in rows):
        return None
    text = _flat_encoder(depth + 1)(rows)
    inner, outer = "\n" + " " * (depth + 2), "\n" + " " * (depth + 1)
    body = text[2:-2].replace("}," + inner + "{", outer + "}," + outer + "{" + inner)
    return "[" + outer + "{" + inner + body + outer + "}" + "\n" + " " * depth + "]"


def _stdlib(obj: Any, depth: int) -> str:
    """``json.dumps(obj, indent=1)`` of a member at ``depth``: its lines indented as they would be in place."""
    return json.dumps(obj, indent=1).replace("\n", "\n" + " " * depth)
