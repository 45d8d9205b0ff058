"""Text, Markdown and JSON of :class:`warehouse.history.changes.ChangesResult` (and of cause trees in general).

Markdown always fits a pull-request comment: causes are listed by impact until the budget is spent, then
"N more" with the command that lists them all.
"""
from __future__ import annotations

import json

from warehouse.render import rows as render
from warehouse.history.changes import ChangesResult
from warehouse.render import causes as cz
from warehouse.history.farm import Farm
from warehouse.history.outside import OutsideResult

# GitHub refuses a comment over 65,536 characters; leave room for what a CI job adds around it
MD_BUDGET = 60_000


def _threshold(res: ChangesResult) -> str:
    if res.threshold_sigmas is None:
        return "no series passed the false-discovery rule"
    return f"threshold {res.threshold_sigmas:g} sigma"


def coverage(res: ChangesResult) -> str:
    """What `changes` judged (the gate's coverage line, over a whole history)."""
    c = res.coverage
    verdict = " (insufficient data)" if not c.get("series_judged") else ""
    return (f"coverage: {c.get('series_judged', 0):,} series judged{verdict}, {c.get('too_little_history', 0):,} with "
            f"too little history, {c.get('new_keys', 0):,} key(s) new and {c.get('gone_keys', 0):,} gone over the "
            "history")


def text(res: ChangesResult, contributors: int = 3) -> str:
    """The table a person reads in a terminal: causes (the gate's lines: :mod:`warehouse.render.causes`), their
    top contributors indented, then outlier nights."""
    out = [f"{len(res.changes)} change(s), {len(res.outliers)} outlier night(s) in {len(res.runs)} runs"
           f"{' of ' + res.label if res.label else ''} ({res.series} series, {_threshold(res)}, FDR {res.fdr:g})"]
    out.append(coverage(res))
    out += cz.text_lines(res.changes, contributors)
    out += ["outlier night: " + cz.line(o) for o in res.outliers]
    return "\n".join(out)


def markdown(res: ChangesResult, budget: int = MD_BUDGET) -> str:
    """A pull-request comment: one row per cause by impact (the gate's rows), never over ``budget``."""
    head = (f"**{len(res.changes)} change(s)** in {len(res.runs)} runs"
            f"{' of `' + res.label + '`' if res.label else ''} ({res.series} series; {_threshold(res)}, "
            f"FDR {res.fdr:g})")
    lines = render.within_budget([head, "", coverage(res), "", *cz.MD_HEAD], [cz.md_row(c) for c in res.changes],
                                 budget, "`warehouse changes --format json`", reserve=200)
    if res.outliers:
        lines.append(f"\n{len(res.outliers)} one-night outlier night(s), not changes.")
    return "\n".join(lines)


def to_json(res: ChangesResult) -> str:
    return json.dumps(render.json_safe(res.to_json()), indent=1, ensure_ascii=False)


def outside_text(res: OutsideResult) -> str:
    """An outside file's changes: one line per change, drift and outlier, series by series."""
    doc = res.to_json()
    lines = []
    for s in doc["series"]:
        mine = [c for c in doc["changes"] if c["series"] == s["name"]]
        drift = [d for d in doc["drifts"] if d["series"] == s["name"]]
        odd = [o for o in doc["outliers"] if o["series"] == s["name"]]
        lines.append(f"{s['name']}: {len(mine)} change(s), {len(drift)} drift(s), {len(odd)} outlier(s) in "
                     f"{s['points']} points ({s['scale']} scale)")
        for c in mine:
            share = f" ({100 * c['change']:+.1f} %)" if c["change"] is not None and s["scale"] == "log" else ""
            lines.append(f"  step at index {c['index']} ({c['at']}): {c['before']:.6g} -> {c['after']:.6g}{share}, "
                         f"{c['z']} noises")
        for d in drift:
            lines.append(f"  drift from index {d['since']} (past the noise at {d['index']}, {d['at']}): "
                         f"{d['before']:.6g} -> {d['after']:.6g}")
        for o in odd:
            lines.append(f"  outlier at index {o['index']} ({o['at']}): {o['value']:.6g}, expected {o['expected']:.6g}")
    return "\n".join(lines)


def outside_json(res: OutsideResult) -> str:
    """An outside file's changes as JSON: ``{"changes": [...]}`` with ``series``, ``index`` and ``at``."""
    return json.dumps(render.json_safe(res.to_json()), indent=1)


def farm_text(farm: Farm) -> str:
    """Groups of changes across labels: one block per group with its labels, commit range and bisect command."""
    lines = [f"{len(farm.groups)} group(s) of changes over {len(farm.labels)} label(s)"]
    for n, g in enumerate(farm.groups, 1):
        rng = f"; last good {g.good} -> first bad {g.bad}" if g.good or g.bad else ""
        lines.append(f"group {n}: first night {g.first_night}: {', '.join(g.labels)}{rng}")
        for c in g.changes:
            ch = c.change
            good = c.last_good or {}
            lines.append(f"  {c.label}: {ch.kind} {ch.by} {ch.key}: {ch.change_pct:+.1f} % "
                         f"(run {good.get('run_id', '-')} -> run {c.first_bad.get('run_id')}) [{ch.id}]")
        cmd = g.bisect(farm.bisect_cmd)
        if cmd:
            lines.append(f"  bisect: {cmd}")
    for label, why in farm.skipped.items():
        lines.append(f"skipped {label}: {why}")
    return "\n".join(lines)


def farm_markdown(farm: Farm) -> str:
    """The groups as a Markdown table: a row per label's change, grouped."""
    out = [f"**{len(farm.groups)} group(s) of changes over {len(farm.labels)} label(s)**", "",
           "| group | first night | label | change | Δ % | last good | first bad | id |",
           "|---|---|---|---|---:|---|---|---|"]
    for n, g in enumerate(farm.groups, 1):
        for c in g.changes:
            ch = c.change
            good = c.last_good or {}
            bad = c.first_bad.get("commit") or c.first_bad.get("run_id")
            ok = good.get("commit") or good.get("run_id", "")
            out.append(f"| {n} | {g.first_night} | {render.md_text(c.label)} | {ch.kind} {ch.by} "
                       f"{render.md_text(ch.key)} | {ch.change_pct:+.1f} | {ok} | {bad} | {ch.id} |")
    return "\n".join(out)


def farm_json(farm: Farm) -> str:
    """The groups as JSON (``groups``: first night, labels, good, bad, bisect, changes)."""
    return json.dumps(render.json_safe(farm.to_json()), indent=1)
