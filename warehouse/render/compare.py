"""A :class:`warehouse.history.compare.Comparison` as a text table or a pull-request comment."""
from __future__ import annotations

from typing import Any

from warehouse.history.compare import Comparison, CompareRow
from warehouse.registry.measures import METRIC
from warehouse.render import rows as rowfmt

COLUMNS = ["key", "status", "a_us", "b_us", "delta_us", "delta_pct", "a_ops", "b_ops"]


def title(res: Comparison) -> str:
    """``run 13 (...) vs run 12 (...), section trace, by layer, kernel time (us per iteration)``."""
    return (f"{res.runs[res.b]['short']} vs {res.runs[res.a]['short']}, section {res.section}, "
            f"by {res.by}, {METRIC[res.metric].label} ({res.unit} per iteration)")


def as_rows(res: Comparison, top: int | None = None) -> list[list[Any]]:
    """Total first, then the keys (the ``top`` largest changes when given)."""
    rows: list[CompareRow] = [res.total] + res.rows[: top if top else None]
    return [[getattr(r, c) for c in COLUMNS] for r in rows]


def text(res: Comparison, top: int | None = None) -> str:
    """The title line and the aligned table."""
    return title(res) + "\n" + rowfmt.table(COLUMNS, as_rows(res, top))


def markdown(res: Comparison, top: int | None = 30) -> str:
    """A pull-request comment: a title line, then the table with signed deltas (the ``top`` largest changes;
    None or 0: every row)."""
    t = res.total
    pct = f" ({t.delta_pct:+.2f} %)" if t.delta_pct is not None else ""
    u = res.unit
    lines = [f"**{title(res)}**: {t.a_us:.1f} → {t.b_us:.1f} {u}, {t.delta_us:+.1f} {u}{pct}", "",
             f"| {res.by} | A {u} | B {u} | Δ {u} | Δ % | A ops | B ops |", "|---|---:|---:|---:|---:|---:|---:|"]
    shown = res.rows[: top if top else None]
    for r in [t] + shown:
        key = rowfmt.md_text(r.key) + ("" if r.status == "both" else f" *({r.status})*")
        p = f"{r.delta_pct:+.2f}" if r.delta_pct is not None else ""
        lines.append(f"| {key} | {r.a_us:.1f} | {r.b_us:.1f} | {r.delta_us:+.1f} | {p} | {r.a_ops:g} | {r.b_ops:g} |")
    if len(res.rows) > len(shown):
        lines.append(f"\n{len(res.rows) - len(shown)} more rows with smaller changes.")
    return "\n".join(lines)


def _where(o: dict[str, Any]) -> str:
    return " / ".join(x for x in (o.get("block"), o.get("layer")) if x) or "-"


def ops_text(diff: Any, top: int | None) -> str:
    """An op-by-op diff (:class:`warehouse.history.opdiff.OpDiff`) as text: per section, the totals, then the
    inserted and removed ops at their places and the matched ops that changed most."""
    doc = diff.to_json(top)
    lines = [f"run {doc['b']} against run {doc['a']}, op by op (us per op)"]
    for s in doc["sections"]:
        t = s["totals_us"]
        lines.append(f"{s['section']} (iteration {s['iteration']}): {s['matched']} matched ops "
                     f"{t['matched_delta']:+,.1f} us, {s['inserted']} inserted +{t['inserted']:,.1f} us, "
                     f"{s['removed']} removed -{t['removed']:,.1f} us; net {t['net']:+,.1f} us")
        for o in s["inserted_ops"]:
            after = f" after #{o['after']['pos']} {o['after']['op_code']}" if o["after"] else " at the start"
            lines.append(f"  + #{o['pos']} {o['op_code']} ({_where(o)}) {o['kernel_us']:,.1f} us{after}")
        for o in s["removed_ops"]:
            after = f" after #{o['after']['pos']} {o['after']['op_code']}" if o["after"] else " at the start"
            lines.append(f"  - #{o['pos']} {o['op_code']} ({_where(o)}) {o['kernel_us']:,.1f} us{after}")
        for c in s["changed_ops"]:
            if c["delta_us"] == 0:
                continue
            pct = f" ({c['delta_pct']:+.1f} %)" if c["delta_pct"] is not None else ""
            lines.append(f"  ~ #{c['a']['pos']}->#{c['b']['pos']} {c['a']['op_code']} ({_where(c['a'])}): "
                         f"{c['a']['kernel_us']:,.1f} -> {c['b']['kernel_us']:,.1f} us{pct}")
        more = s.get("more") or {}
        if any(more.values()):
            lines.append(f"  ... {more['inserted']} more inserted, {more['removed']} more removed, "
                         f"{more['changed']} more matched (--top N, 0: all)")
    return "\n".join(lines)


def ops_markdown(diff: Any, top: int | None) -> str:
    """The op-by-op diff as Markdown: a totals table, then the inserted, removed and changed ops."""
    doc = diff.to_json(top)
    out = [f"**run {doc['b']} against run {doc['a']}, op by op**", "",
           "| section | matched | Δ matched us | inserted | + us | removed | - us | net us |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for s in doc["sections"]:
        t = s["totals_us"]
        out.append(f"| {rowfmt.md_text(s['section'])} ({s['iteration']}) | {s['matched']} "
                   f"| {t['matched_delta']:+,.1f} | {s['inserted']} | {t['inserted']:,.1f} | {s['removed']} "
                   f"| {t['removed']:,.1f} | {t['net']:+,.1f} |")
    out += ["", "| section | change | # | op code | where | us |", "|---|---|---:|---|---|---:|"]
    for s in doc["sections"]:
        for sign, key in (("inserted", "inserted_ops"), ("removed", "removed_ops")):
            for o in s[key]:
                out.append(f"| {rowfmt.md_text(s['section'])} | {sign} | {o['pos']} | {rowfmt.md_text(o['op_code'])} | "
                           f"{rowfmt.md_text(_where(o))} | {o['kernel_us']:,.1f} |")
    return "\n".join(out)
