"""A grouping's series over the runs (per-iteration figures from the rollups); :mod:`warehouse.render.trend`
draws it as a table or a plot."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Engine

from warehouse.errors import NotFound
from warehouse.registry.measures import METRIC
from warehouse.history.series import ALL_DEVICES, fetch, resolve_sections, run_meta, section_label, select_runs
from warehouse.registry.contract import TRACE
from warehouse.history.quality import other_models


@dataclass
class Trend:
    """A metric of some keys over runs: ``values[key][i]`` is the key's per-iteration figure in ``runs[i]`` (None:
    not in that run); ``meta`` holds each run's metadata, ``warnings`` the runs left out and why."""

    runs: list[int]
    meta: dict[int, dict[str, Any]]
    section: str
    by: str
    metric: str
    unit: str
    keys: list[str]
    warnings: list[str] = field(default_factory=list)
    values: dict[str, list[float | None]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The document ``trend --format json`` prints."""
        return asdict(self)


def trend(engine: Engine, by: str = "block", section: str | None = None, top: int = 10, label: str | None = None,
          tags: dict[str, str] | None = None, last: int | None = None, metric: str = "kernel",
          keys: list[str] | None = None, all_models: bool = False) -> Trend:
    """The :class:`Trend` of the chosen ``keys``, else of the ``top`` keys of the newest run by the metric. Runs
    that look like another model than the rest (:func:`warehouse.history.quality.other_models`) are left out with a
    warning, unless ``all_models``."""

    warnings: list[str] = []
    with engine.connect() as conn:
        runs = select_runs(conn, label, tags)
        if last:
            runs = runs[-last:]
        if not runs:
            raise NotFound("no runs in the warehouse; ingest a CSV first")
        if not all_models:
            strangers = other_models(conn, runs)
            if strangers:
                for r in sorted(strangers):
                    warnings.append(f"run {r} {strangers[r]}: left out (pass --all-models to draw it)")
                runs = [r for r in runs if r not in strangers]
        secs = resolve_sections(conn, section, runs[-1:] if section is None else runs)
        sec = secs[0] if section is not None else (TRACE if TRACE in secs else secs[0])
        if keys:
            chosen = list(keys)
        else:  # the top keys of the newest run, then their history (not every key of every run)
            now = {k: p.values.get(metric) for (_, k, d), p in
                   fetch(conn, runs[-1:], sec, by, metrics=[metric]).items() if d == ALL_DEVICES}
            newest = {k: v for k, v in now.items() if v is not None}
            chosen = sorted(newest, key=lambda k: -newest[k])[:top]
        points = fetch(conn, runs, sec, by, keys=chosen, metrics=[metric])
        meta = run_meta(conn, runs)
    values = {(r, k): p.values.get(metric) for (r, k, d), p in points.items() if d == ALL_DEVICES}
    missing = [k for k in keys or () if not any(kk == k for (_, kk) in values)]
    if missing:
        raise NotFound(f"key {missing[0]!r}: no such {by} in section {section_label(sec)} of these runs")
    labels = {meta[r].label for r in runs}
    if len(labels) > 1:
        warnings.append(f"the runs mix labels {sorted(map(str, labels))}; pass --label")
    return Trend(runs, {r: meta[r].as_dict() for r in runs}, section_label(sec), by, metric, METRIC[metric].unit,
                 chosen, warnings, {k: [_round(values.get((r, k))) for r in runs] for k in chosen})


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 3)
