"""tt-perf-report's summary (its "stacked report"): the per-op table's device time by op, by op and input 0 memory
layout (its default) or by category, with FLOPs % statistics (tt-perf-report 1.4.1, ``generate_stacked_report``
and ``dump_stacked_report`` in ``tt_perf_report/perf_report.py``).

Its rules, kept: signpost rows are left out and host ops count with device time 0; an op's name is the first word
of its OP Code, with `` (in0:<last two parts of Input 0 Memory, lower case>)`` when grouped by memory; a row whose
name or layout cannot be made is left out (pandas drops a group key that is NaN); the weighted mean of FLOPs % is
by device time, per name over every device; groups are sorted by device time, largest first.
"""
from __future__ import annotations

import math
from typing import Any

from warehouse.analysis.perf import PerfTable

GROUP_BY = ("memory", "op", "category")


def _name(row: dict[str, Any], by: str) -> str | None:
    if by == "category":
        return row["Op Category"]
    words = (row["OP Code"] or "").split()
    if not words:
        return None
    name = words[0]
    memory = row["Input 0 Memory"]
    if by == "memory" and memory is not None:
        parts = memory.split("_")
        if len(parts) < 2:
            return None
        name += f" (in0:{parts[-2].lower()}_{parts[-1].lower()})"
    return name


def stacked(table: PerfTable, by: str = "memory", per_device: bool = False) -> list[dict[str, Any]]:
    """The summary's rows: ``%``, ``op_code`` (the group), ``device`` (with ``per_device``), ``device_time_us``,
    ``ops``, ``category``, ``flops_min`` / ``max`` / ``mean`` / ``std`` / ``weighted_mean`` (None where
    tt-perf-report prints nothing); ``by`` is its ``--group-by`` (memory, op or category)."""
    if by not in GROUP_BY:
        raise ValueError(f"group by {by!r}: one of {', '.join(GROUP_BY)}")
    groups: dict[tuple, list[dict]] = {}
    by_name: dict[str, list[dict]] = {}
    for row in table.rows:
        if "signpost" in (row["OP Code"] or ""):
            continue
        name = _name(row, by)
        if name is None:
            continue
        r = dict(row)
        if "(torch)" in (row["OP Code"] or ""):  # (its host-op marker: in the summary with device time 0)
            r["Device Time"] = 0
        key: tuple[Any, ...] = (name, row["Device"]) if per_device else (name,)
        groups.setdefault(key, []).append(r)
        by_name.setdefault(name, []).append(r)
    # (pandas sums a column of ints as ints: when every row kept is a host op, its 0s print as 0, not 0.00)
    ints = all(type(r["Device Time"]) is int for rs in groups.values() for r in rs)
    out = []
    for key in sorted(groups, key=lambda k: tuple(_sortable(v) for v in k)):
        rows = groups[key]
        times = [r["Device Time"] for r in rows if r["Device Time"] is not None]
        item: dict[str, Any] = {"op_code": key[0]}
        if per_device:
            item["device"] = key[1]
        item.update({"device_time_us": sum(times) if ints else _kahan(times), "ops": len(rows)})
        if by != "category":
            flops = [r["FLOPs %"] for r in rows if r["FLOPs %"] is not None]
            item.update({
                "category": next((r["Op Category"] for r in rows if r["Op Category"] is not None), None),
                "flops_min": min(flops) if flops else None, "flops_max": max(flops) if flops else None,
                "flops_mean": _kahan(flops) / len(flops) if flops else None,
                "flops_std": _welford_std(flops) if len(flops) > 1 else None,
                "flops_weighted_mean": _weighted(by_name[key[0]])})
        out.append(item)
    if per_device:
        for item in out:
            t = _np_sum([i["device_time_us"] for i in out if i["device"] == item["device"]])
            item["%"] = item["device_time_us"] / t * 100 if t else 0.0
    else:
        total = _np_sum([i["device_time_us"] for i in out])
        for item in out:
            item["%"] = item["device_time_us"] / total * 100 if total else 0
    return _descending(out, ints)


def _descending(items: list[dict[str, Any]], ints: bool) -> list[dict[str, Any]]:
    """Largest device time first, as pandas' ``sort_values(ascending=False)`` orders them (its ``nargsort``:
    numpy's quicksort over the reversed column, reversed back): equal times come in numpy's order, as there."""
    import numpy as np

    values = np.array([i["device_time_us"] for i in items], dtype=np.int64 if ints else np.float64)
    idx = np.arange(len(items))[::-1]
    order = idx[values[::-1].argsort(kind="quicksort")][::-1]
    return [items[k] for k in order]


def _sortable(v: Any) -> tuple:
    return (0, v) if isinstance(v, str) else (1, -1 if v is None else v)


def _weighted(rows: list[dict]) -> float | None:
    valid = [r for r in rows if r["FLOPs %"] is not None and r["Device Time"] is not None]
    if not valid:
        return None
    den = _np_sum([r["Device Time"] for r in valid])
    return _np_sum([r["FLOPs %"] * r["Device Time"] for r in valid]) / den if den else None


# The sums as pandas adds them, to the last bit (the CSV rounds to 2 decimals, and a sum at a half cent rounds
# by its last bit): a groupby's sum and mean add with Kahan's compensation, its std is Welford's, and a Series'
# sum is numpy's (pairwise).
def _kahan(values: list[float]) -> float:
    total = comp = 0.0
    for v in values:
        y = v - comp
        t = total + y
        comp = t - total - y
        if comp != comp:
            comp = 0.0
        total = t
    return total


def _welford_std(values: list[float]) -> float:
    mean = ssqdm = 0.0
    for n, v in enumerate(values, 1):
        old = mean
        mean += (v - old) / n
        ssqdm += (v - mean) * (v - old)
    return math.sqrt(ssqdm / (len(values) - 1))


def _np_sum(values: list[float]) -> float:
    import numpy as np
    return float(np.sum(np.array(values, dtype=np.float64))) if values else 0.0
