"""Two runs side by side: per key, A and B kernel / op-to-op us and ops, the delta, keys only in one run."""
from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from warehouse.runs import resolve_run
from warehouse.series import check_section, default_section, fetch


def _pct(a: float, b: float) -> float | None:
    return round(100.0 * (b - a) / a, 2) if a else None


def compare_runs(engine: Engine, a: str, b: str, by: str = "layer", section: str | None = None) -> dict[str, Any]:
    """``{"a", "b", "section", "by", "total": row, "rows": [row...]}``; rows sorted by |delta|, largest first.
    A row: key, status (both | only in A | only in B), a/b kernel us, a/b op-to-op us, a/b ops, delta us, %."""
    with engine.connect() as conn:
        ra, rb = resolve_run(conn, a), resolve_run(conn, b)
        check_section(conn, section, [ra, rb])
        sec = section if section is not None else default_section(conn, [ra, rb])
        sec = "" if sec == "all" else sec
        values = fetch(conn, by, [ra, rb], sec)
        totals = fetch(conn, "section", [ra, rb], sec)
    va, vb = values.get(ra, {}), values.get(rb, {})

    def row(key: str, x, y) -> dict[str, Any]:
        ka, kb = (x.kernel_us if x else 0.0), (y.kernel_us if y else 0.0)
        return {"key": key, "status": "both" if x and y else ("only in A" if x else "only in B"),
                "a_kernel_us": round(ka, 3), "b_kernel_us": round(kb, 3),
                "a_gap_us": round(x.gap_us, 3) if x else None, "b_gap_us": round(y.gap_us, 3) if y else None,
                "a_ops": x.ops if x else 0, "b_ops": y.ops if y else 0,
                "delta_us": round(kb - ka, 3), "delta_pct": _pct(ka, kb) if x and y else None}

    # by section the only key is the total itself: no second "total" row
    keys = [] if by == "section" else list(dict.fromkeys([*va, *vb]))
    rows = sorted((row(k, va.get(k), vb.get(k)) for k in keys), key=lambda r: (-abs(r["delta_us"]), r["key"]))
    ta, tb = totals.get(ra, {}).get("total"), totals.get(rb, {}).get("total")
    return {"a": ra, "b": rb, "section": sec or "(no section)", "by": by, "total": row("total", ta, tb),
            "rows": rows}


COLUMNS = ["key", "status", "a_kernel_us", "b_kernel_us", "delta_us", "delta_pct", "a_gap_us", "b_gap_us", "a_ops",
           "b_ops"]


def as_rows(res: dict[str, Any], top: int | None = None) -> list[list[Any]]:
    """Total first, then the keys (the ``top`` largest changes when given)."""
    rows = [res["total"]] + res["rows"][: top if top else None]
    return [[r[c] for c in COLUMNS] for r in rows]


def markdown(res: dict[str, Any], top: int | None = 30) -> str:
    """A pull-request comment: a title line, then the table with signed deltas."""
    t = res["total"]
    pct = f" ({t['delta_pct']:+.2f} %)" if t["delta_pct"] is not None else ""
    lines = [f"**Run {res['b']} vs run {res['a']}**, section `{res['section']}`, by {res['by']}: kernel "
             f"{t['a_kernel_us']:.1f} → {t['b_kernel_us']:.1f} us, {t['delta_us']:+.1f} us{pct}", "",
             f"| {res['by']} | A us | B us | Δ us | Δ % | A ops | B ops |", "|---|---:|---:|---:|---:|---:|---:|"]
    shown = res["rows"][: top if top else None]
    for r in [t] + shown:
        key = r["key"].replace("|", "\\|") + ("" if r["status"] == "both" else f" *({r['status']})*")
        pct = f"{r['delta_pct']:+.2f}" if r["delta_pct"] is not None else ""
        lines.append(f"| {key} | {r['a_kernel_us']:.1f} | {r['b_kernel_us']:.1f} | {r['delta_us']:+.1f} | {pct} | "
                     f"{r['a_ops']} | {r['b_ops']} |")
    if len(res["rows"]) > len(shown):
        lines.append(f"\n{len(res['rows']) - len(shown)} more rows with smaller changes.")
    return "\n".join(lines)
