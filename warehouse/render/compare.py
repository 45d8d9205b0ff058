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
