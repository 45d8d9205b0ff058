"""Causes (:class:`warehouse.history.causes.Cause`) as text lines and Markdown rows: one renderer for what the gate
and ``changes`` report. Every line carries the cause's id (``r-...``, ``c-...``), which ``warehouse triage`` takes."""
from __future__ import annotations

from typing import Any

from warehouse.capture.ranklayout import HOST_TAG, RANK_TAG
from warehouse.history.boundchange import describe
from warehouse.history.causes import Cause
from warehouse.history.wholecapture import WHOLE
from warehouse.registry.measures import METRIC
from warehouse.render import rows as rowfmt

MARK = {"regression": "🔺", "improvement": "🟢", "suspicious": "❔", "step": "▲", "drift": "↗", "creep": "↗",
        "outlier": "·"}


def name(c: Cause | dict[str, Any]) -> str:
    """How a cause is named: ``whole run``, ``device 3``, ``block stage2.block0``...; on a rank of a multi-host
    capture, ``rank 1 whole run``, ``rank 1 device 3``...; of a multi-host capture as a whole (its ranks
    merged), ``all ranks whole run``..."""
    by, key = (c.by, c.key) if isinstance(c, Cause) else (c["by"], c["key"])
    return rank_of(c) + ("whole run" if key == "all" and by == "section" else f"{by} {key}")


def rank_of(c: Cause | dict[str, Any]) -> str:
    """``rank 1 `` for a cause of a rank of a multi-host capture, ``all ranks `` for one of a capture as a whole,
    else nothing."""
    tags = (c.tags if isinstance(c, Cause) else c.get("tags")) or {}
    if RANK_TAG not in tags or HOST_TAG not in tags:
        return ""
    return "all ranks " if tags[RANK_TAG] == WHOLE else f"rank {tags[RANK_TAG]} "


def _pct(v: float | None) -> str:
    return f"{v:+.1f} %" if v is not None else ""


def where(c: Cause, labels: bool = False) -> str:
    """Where a cause shows: its sections, metrics (their keys, or ``labels``) and devices (other than all)."""
    ms = [METRIC[m].label if labels and m in METRIC else m for m in c.metrics]
    out = f"{', '.join(c.sections)}; {'+'.join(ms)}"
    devs = [d for d in c.devices if d != "all"]
    return out + (f"; device {','.join(devs)}" if devs else "")


def line(c: Cause) -> str:
    """One line: the cause's id, kind, name, move, levels, night and where it shows."""
    u = c.unit
    night = f"run {c.run_id} ({(c.time or '')[:16]})"
    if c.first_shown:
        night = f"at or before {night}, the first night shown"
    if c.kind in ("drift", "creep") and c.since:
        night += f", rising since {c.since[:10]} ({c.per_night_pct:+.2f} % a night)" \
            if c.per_night_pct is not None else f", since {c.since[:10]}"
    evidence = f"; evidence: {', '.join(c.evidence)}" if c.evidence else ""
    triage = f" [{c.triage}]" if c.triage else ""
    if c.fixes:
        night += f", undoing {c.fixes}"
    return (f"{MARK.get(c.kind, '')} {c.id} {c.kind} {name(c)}: {_pct(c.change_pct)}{_beyond(c)} ({c.before:.1f} -> "
            f"{c.after:.1f} {u}, {c.delta_us:+.1f} {u}) {night}; {where(c)}{evidence}{triage}")


def _beyond(c: Cause) -> str:
    """Where the change is judged beyond the run's level (a clock, a card, every op slower), and so differs from
    the measured before and after printed beside it: say so, with the measured change."""
    if c.change_pct is None or not c.before or c.by == "section" and c.key == "all":
        return ""
    measured = 100 * (c.after / c.before - 1)
    return f" beyond the run's level ({measured:+.1f} % measured)" if abs(measured - c.change_pct) >= 1.0 else ""


def text_lines(causes: list[Cause], contributors: int = 5) -> list[str]:
    """One line per cause with its contributors indented under it."""
    out = []
    for c in causes:
        out.append(line(c))
        for k in c.contributors[:contributors]:
            if k.get("kind") == "contributor":  # (a drill-down row of changes)
                out.append(f"    {name(k)}: {k['delta_us']:+.1f} {c.unit}{_pct_k(k)}")
                continue
            secs = ", ".join(k.get("sections") or [])
            out.append(f"    {k.get('id', '')} {name(k)}: {k['delta_us']:+.1f} {k.get('unit', 'us')}{_pct_k(k)}; "
                       f"{secs}" + ("" if k.get("metrics") == c.metrics else "; " + "+".join(k.get("metrics", []))))
        if len(c.contributors) > contributors:
            out.append(f"    ... {len(c.contributors) - contributors} more inside it")
        out += [f"    {describe(b)}" for b in c.bound_changes or []]
    return out


def _pct_k(k: dict[str, Any]) -> str:
    return f" ({k['change_pct']:+.1f} %)" if k.get("change_pct") is not None else ""


MD_HEAD = ["| | id | cause | Δ % | after | before | Δ | night | where | inside it |",
           "|---|---|---|---:|---:|---:|---:|---|---|---|"]


def md_row(c: Cause) -> str:
    """One Markdown table row of a cause (its contributors in the row)."""
    u = "" if c.unit == "us" else f" {c.unit}"
    inside = ", ".join(f"{rowfmt.md_text(name(k))} {k['delta_us']:+.1f}" for k in c.contributors[:4])
    if len(c.contributors) > 4:
        inside += f" (+{len(c.contributors) - 4})"
    night = f"run {c.run_id} ({(c.time or '')[:10]})"
    if c.first_shown:
        night = "≤ " + night
    return (f"| {MARK.get(c.kind, '')} | `{c.id}` | {rowfmt.md_text(name(c))} | "
            f"{_pct(c.change_pct).replace(' %', '')} | {c.after:.1f}{u} | {c.before:.1f}{u} | {c.delta_us:+.1f}{u} | "
            f"{night} | {rowfmt.md_text(where(c, labels=True))} | {inside} |").replace("\n", " ")
