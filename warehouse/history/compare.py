"""Two runs side by side from the rollups: per key, A and B per-iteration figures of a metric, the delta, keys
found in one run only; with the run metadata and a warning when the runs look like different models."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Engine

from warehouse.registry.measures import METRIC
from warehouse.store.listing import resolve_run
from warehouse.history.series import ALL_DEVICES, fetch, resolve_sections, run_meta, section_label
from warehouse.registry.contract import TRACE


def _pct(a: float, b: float) -> float | None:
    return round(100.0 * (b - a) / a, 2) if a else None


@dataclass
class CompareRow:
    """One key of a comparison: its per-iteration figure in A and B, the change, and its ops per iteration."""

    key: str
    status: str  # both | only in A | only in B
    a_us: float
    b_us: float
    delta_us: float
    delta_pct: float | None  # None when the key is in one run only, or A is 0
    a_ops: float
    b_ops: float


@dataclass
class Comparison:
    """Run ``b`` against run ``a`` in one section, by one grouping and metric: the total, then every key by
    |delta|, largest first; ``runs`` holds both runs' metadata, ``warnings`` what looks wrong (other models)."""

    a: int
    b: int
    runs: dict[int, dict[str, Any]]
    section: str
    by: str
    metric: str
    unit: str
    total: CompareRow
    rows: list[CompareRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The document ``compare --format json`` prints."""
        return asdict(self)


def compare_runs(engine: Engine, a: str, b: str, by: str = "layer", section: str | None = None,
                 metric: str = "kernel", keys: list[str] | None = None) -> Comparison:
    """Run B against run A (ids or 'latest') from the rollups: see :class:`Comparison`."""
    warnings: list[str] = []
    with engine.connect() as conn:
        ra, rb = resolve_run(conn, a), resolve_run(conn, b)
        sections = resolve_sections(conn, section, [ra, rb])
        sec = sections[0] if section is not None else (TRACE if TRACE in sections else sections[0])
        meta = run_meta(conn, [ra, rb])
        values = fetch(conn, [ra, rb], sec, by, keys=keys, metrics=[metric])
        totals = fetch(conn, [ra, rb], sec, "section", metrics=[metric])
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

    def row(key: str, x: Any, y: Any) -> CompareRow:
        xa = (x.values.get(metric) or 0.0) if x else 0.0
        yb = (y.values.get(metric) or 0.0) if y else 0.0
        return CompareRow(key, "both" if x and y else ("only in A" if x else "only in B"), round(xa, 3),
                          round(yb, 3), round(yb - xa, 3), _pct(xa, yb) if x and y else None,
                          round(x.ops, 3) if x else 0, round(y.ops, 3) if y else 0)

    # by section the only key is the total itself: no second "total" row
    keys_ = [] if by == "section" else list(dict.fromkeys([*va, *vb]))
    rows = sorted((row(k, va.get(k), vb.get(k)) for k in keys_), key=lambda r: (-abs(r.delta_us), r.key))
    ta = totals.get((ra, "total", ALL_DEVICES))
    tb = totals.get((rb, "total", ALL_DEVICES))
    return Comparison(ra, rb, {ra: meta[ra].as_dict(), rb: meta[rb].as_dict()}, section_label(sec), by, metric,
                      METRIC[metric].unit, row("total", ta, tb), rows, warnings)


