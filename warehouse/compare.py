"""Two runs side by side from the rollups: per key, A and B per-iteration figures of a metric, the delta, keys
found in one run only; with the run metadata and a warning when the runs look like different models."""
from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from warehouse.measures import METRIC
from warehouse.runs import resolve_run
from warehouse.series import ALL_DEVICES, fetch, resolve_sections, run_meta, section_label


def _pct(a: float, b: float) -> float | None:
    return round(100.0 * (b - a) / a, 2) if a else None


def compare_runs(engine: Engine, a: str, b: str, by: str = "layer", section: str | None = None,
                 metric: str = "kernel", keys: list[str] | None = None) -> dict[str, Any]:
    """``{"a", "b", "runs", "section", "by", "metric", "total": row, "rows": [row...], "warnings"}``; rows sorted
    by |delta|, largest first. A row: key, status (both | only in A | only in B), a/b value, delta, %, a/b ops
    (per iteration)."""
    warnings: list[str] = []
    with engine.connect() as conn:
        ra, rb = resolve_run(conn, a), resolve_run(conn, b)
        sections = resolve_sections(conn, section, [ra, rb])
        sec = sections[0] if section is not None else ("trace" if "trace" in sections else sections[0])
        meta = run_meta(conn, [ra, rb])
        values = fetch(conn, [ra, rb], sec, by, keys=keys)
        totals = fetch(conn, [ra, rb], sec, "section")
        codes = fetch(conn, [ra, rb], "", "op-code")
    if meta[ra].label != meta[rb].label:
        warnings.append(f"run {ra} is labelled {meta[ra].label!r} and run {rb} {meta[rb].label!r}: "
                        "are they the same model?")
    ka = {k for (r, k, _) in codes if r == ra}
    kb = {k for (r, k, _) in codes if r == rb}
    if ka and kb and len(ka & kb) < 0.5 * len(ka | kb):
        warnings.append(f"runs {ra} and {rb} share {len(ka & kb)} of {len(ka | kb)} op codes: different models?")
    va = {k: p for (r, k, d), p in values.items() if r == ra and d == ALL_DEVICES}
    vb = {k: p for (r, k, d), p in values.items() if r == rb and d == ALL_DEVICES}

    def row(key: str, x, y) -> dict[str, Any]:
        xa = (x.values.get(metric) or 0.0) if x else 0.0
        yb = (y.values.get(metric) or 0.0) if y else 0.0
        return {"key": key, "status": "both" if x and y else ("only in A" if x else "only in B"),
                "a_us": round(xa, 3), "b_us": round(yb, 3), "delta_us": round(yb - xa, 3),
                "delta_pct": _pct(xa, yb) if x and y else None,
                "a_ops": round(x.ops, 3) if x else 0, "b_ops": round(y.ops, 3) if y else 0}

    # by section the only key is the total itself: no second "total" row
    keys_ = [] if by == "section" else list(dict.fromkeys([*va, *vb]))
    rows = sorted((row(k, va.get(k), vb.get(k)) for k in keys_), key=lambda r: (-abs(r["delta_us"]), r["key"]))
    ta = totals.get((ra, "total", ALL_DEVICES))
    tb = totals.get((rb, "total", ALL_DEVICES))
    return {"a": ra, "b": rb, "runs": {ra: meta[ra].as_dict(), rb: meta[rb].as_dict()},
            "section": section_label(sec), "by": by, "metric": metric, "unit": METRIC[metric].unit,
            "total": row("total", ta, tb), "rows": rows, "warnings": warnings}


COLUMNS = ["key", "status", "a_us", "b_us", "delta_us", "delta_pct", "a_ops", "b_ops"]


def title(res: dict[str, Any]) -> str:
    """``run 13 (...) vs run 12 (...), section trace, by layer, kernel time (us per iteration)``."""
    return (f"{res['runs'][res['b']]['short']} vs {res['runs'][res['a']]['short']}, section {res['section']}, "
            f"by {res['by']}, {METRIC[res['metric']].label} ({res['unit']} per iteration)")


def as_rows(res: dict[str, Any], top: int | None = None) -> list[list[Any]]:
    """Total first, then the keys (the ``top`` largest changes when given)."""
    rows = [res["total"]] + res["rows"][: top if top else None]
    return [[r[c] for c in COLUMNS] for r in rows]


def markdown(res: dict[str, Any], top: int | None = 30) -> str:
    """A pull-request comment: a title line, then the table with signed deltas (the ``top`` largest changes;
    None or 0: every row)."""
    t = res["total"]
    pct = f" ({t['delta_pct']:+.2f} %)" if t["delta_pct"] is not None else ""
    lines = [f"**{title(res)}**: {t['a_us']:.1f} → {t['b_us']:.1f} us, {t['delta_us']:+.1f} us{pct}", "",
             f"| {res['by']} | A us | B us | Δ us | Δ % | A ops | B ops |", "|---|---:|---:|---:|---:|---:|---:|"]
    shown = res["rows"][: top if top else None]
    for r in [t] + shown:
        key = r["key"].replace("|", "\\|") + ("" if r["status"] == "both" else f" *({r['status']})*")
        pct = f"{r['delta_pct']:+.2f}" if r["delta_pct"] is not None else ""
        lines.append(f"| {key} | {r['a_us']:.1f} | {r['b_us']:.1f} | {r['delta_us']:+.1f} | {pct} | "
                     f"{r['a_ops']:g} | {r['b_ops']:g} |")
    if len(res["rows"]) > len(shown):
        lines.append(f"\n{len(res['rows']) - len(shown)} more rows with smaller changes.")
    return "\n".join(lines)
