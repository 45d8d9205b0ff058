"""tt-perf-report's per-op table (:class:`warehouse.analysis.perf.PerfTable`) as a terminal table, Markdown, JSON or its
``--csv`` layout."""
from __future__ import annotations

import csv
import io
from typing import Any

from warehouse.analysis.perf import COLUMNS, VISIBLE, PerfTable
from warehouse.analysis.perf import summary as totals
from warehouse.render import rows as r


def _fmt(v: object, unit: str | None, decimals: int | None) -> str:
    if v is None:
        return ""
    text = f"{v:,.{decimals}f}" if decimals is not None and isinstance(v, (int, float)) else str(v)
    return f"{text} {unit}" if unit else text


def render(table: PerfTable, fmt: str, summary: list[dict] | None = None) -> str:
    """The table as ``table`` (terminal), ``md``, ``json`` or ``csv`` (tt-perf-report's --csv columns); with
    ``summary`` (:func:`warehouse.analysis.perfsummary.stacked`), the summary after it (in JSON: ``stacked``)."""
    if fmt == "json":
        doc: dict = {"summary": totals(table), "rows": table.rows}
        if summary is not None:
            doc["stacked"] = summary
        return r.to_json(doc)
    if fmt == "csv":
        return to_csv(table)
    cols = [c for c, _, _ in VISIBLE]
    rows = [[_fmt(row[c], u, d) for c, u, d in VISIBLE] for row in table.rows]
    s = totals(table)
    runs = (f"runs {', '.join(map(str, table.run_ids))} read together" if len(table.run_ids) > 1
            else f"run {table.run_id}")
    head = (f"{runs}: {s['device_ops']} device ops, {s['host_ops']} host ops, {s['signposts']} "
            f"signposts; device time {s['device_time_us']:,.0f} μs, op-to-op {s['op_to_op_us']:,.0f} μs "
            f"({table.arch}, {table.worker_cores} worker cores{', devices merged' if table.merged else ''})")
    overlapped = [d for d in s["devices"] if d["overlap_us"] > 0.01 * d["spans_sum_us"]]
    if overlapped:  # (ops ran at once, on sub-devices: summed times count that time twice)
        head += "\n" + "\n".join(f"device {d['device']}: busy {d['busy_us']:,.0f} μs of wall time, its ops' spans sum "
                                 f"to {d['spans_sum_us']:,.0f} μs ({d['overlap_us']:,.0f} μs overlapped)"
                                 for d in overlapped)
    if s["sub_devices"]:  # (a partitioned grid: tt-perf-report's line, then what each sub-device cost)
        head += "\n" + sub_device_lines(s["sub_devices"])
    body = r.markdown(cols, rows) if fmt == "md" else r.table(cols, rows)
    if summary:
        cols2 = ["Total %", "Op Code", *(["Device"] if "device" in summary[0] else []), "Device Time Sum",
                 "Op Count", "Op Category", "Weighted Mean FLOPs"]
        rows2 = [[_fmt(g["%"], "%", 2), g["op_code"], *([str(g["device"])] if "device" in g else []),
                  _fmt(g["device_time_us"], "μs", 2), str(g["ops"]), g.get("category") or "",
                  _fmt(g.get("flops_weighted_mean"), "%", 2)] for g in summary]
        body += "\n\n" + (r.markdown(cols2, rows2) if fmt == "md" else r.table(cols2, rows2))
    return f"{head}\n\n{body}"


def sub_device_lines(subs: list[dict[str, Any]]) -> str:
    """tt-perf-report's sub-device line, then one line per device and sub-device: its ops, their device time summed
    (as the totals above sum it) and the wall time they kept it busy, and its worker core budgets."""
    named = {x["sub_device"] for x in subs if x["sub_device"] is not None}
    lines = [f"Subdevices: {len(named)} - using per-op worker core budgets." if named else
             "Worker core budgets vary across ops - using per-op values."]
    for x in subs:
        sub = "the full grid" if x["sub_device"] is None else f"sub-device {x['sub_device']}"
        cores = "/".join(map(str, x["worker_cores"])) or "?"
        lines.append(f"device {x['device']} {sub}: {x['ops']} ops, device time {x['device_time_us']:,.0f} μs summed, "
                     f"busy {x['busy_us']:,.0f} μs of wall time; {cores} worker cores")
    return "\n".join(lines)


_safe = r.csv_safe


def to_csv(table: PerfTable) -> str:
    """tt-perf-report's ``--csv`` layout (``--no-advice --raw-op-codes``): every column, numbers in full."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    w.writerows([[_safe(row[c]) for c in COLUMNS] for row in table.rows])
    return buf.getvalue()


# tt-perf-report's <csv>_stacked.csv columns (its stacked_report_csv_column_labels)
SUMMARY_COLUMNS = ["Total % [%]", "Op Code", "Device Time Sum [μs]", "Op Count", "Op Category", "Min FLOPs [%]",
                   "Max FLOPs [%]", "Mean FLOPs [%]", "Std FLOPs [%]", "Weighted Mean FLOPs [%]"]


def summary_csv(items: list[dict[str, Any]], by: str = "memory", per_device: bool = False) -> str:
    """The summary as tt-perf-report's ``<csv>_stacked.csv`` writes it (numbers to 2 decimals)."""
    cols = list(SUMMARY_COLUMNS)
    keys = ["%", "op_code", "device_time_us", "ops", "category", "flops_min", "flops_max", "flops_mean",
            "flops_std", "flops_weighted_mean"]
    if by == "category":
        cols, keys = cols[:4], keys[:4]
    if per_device:
        cols.insert(2, "Device")
        keys.insert(2, "device")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for item in items:
        w.writerow([_summary_cell(k, item.get(k)) for k in keys])
    return buf.getvalue()


def _summary_cell(key: str, v: Any) -> object:
    if isinstance(v, float) and key not in ("ops", "device"):
        return f"{v:.2f}"
    return _safe(v)
