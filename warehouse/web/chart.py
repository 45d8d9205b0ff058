"""A line chart as inline SVG, drawn on the server: no script or CDN is needed to see it, and every point carries
a <title> (the browser shows run, date and value on hover) and links to its run's page. Regressed points are
marked; a change point is drawn as a line at its first night with the levels before and after it."""
from __future__ import annotations

import math

from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from warehouse.api import Trend

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22"]


@dataclass
class Series:
    """One line: its key, and per point (x label, time, run id, value or None, regressed?)."""

    key: str
    points: list[tuple[str, int, float | None, bool]]  # (time, run id, value, regressed)


@dataclass
class Mark:
    """A change point: the index of its first night, what to call it, and its levels before and after."""

    index: int
    label: str
    before: float | None = None
    after: float | None = None


def svg(series: list[Series], unit: str, width: int = 900, height: int = 360, marks: list[Mark] | None = None,
        from_zero: bool = True, run_url: Callable[[int], str] | None = None) -> str:
    """The chart's SVG markup; ``from_zero=False`` fits the y axis to the values (a 3 % step stays visible);
    each point links to ``run_url(run id)`` (the app's route)."""
    link = run_url or (lambda r: f"/runs/{r}")
    left, right, top, bottom = 70, 50, 20, 60
    marks = marks or []
    n = max((len(s.points) for s in series), default=0)
    # (a value that is not finite, 1e308 durations summed, is not drawn: no point, no axis stretched to it)
    series = [Series(s.key, [(t, r, v if v is not None and math.isfinite(v) else None, b) for t, r, v, b in s.points])
              for s in series]
    values = [v for s in series for (_, _, v, _) in s.points if v is not None]
    if not n or not values:
        return '<p class="empty">No values to draw.</p>'
    values += [v for mk in marks for v in (mk.before, mk.after) if v is not None and math.isfinite(v)]
    lo, hi = min(values), max(values)
    if from_zero:
        lo = min(0.0, lo)
    else:
        pad = 0.08 * (hi - lo or abs(hi) or 1.0)
        lo, hi = lo - pad, hi + pad
    hi = hi if hi > lo else lo + 1
    w, h = width - left - right, height - top - bottom

    def x(i: int) -> float:
        return left + (w * i / (n - 1) if n > 1 else w / 2)

    def y(v: float) -> float:
        return top + h - h * (v - lo) / (hi - lo)
    out = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
           f'xmlns="http://www.w3.org/2000/svg">']
    for k in range(5):  # grid and y labels
        gv = lo + (hi - lo) * k / 4
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(gv):.1f}" y2="{y(gv):.1f}" class="grid"/>')
        out.append(f'<text x="{left - 6}" y="{y(gv) + 4:.1f}" text-anchor="end" class="axis">{gv:,.1f}</text>')
    first = series[0].points
    step = max(1, n // 10)
    for i in range(0, n, step):  # time labels
        out.append(f'<text x="{x(i):.1f}" y="{height - bottom + 18}" text-anchor="middle" class="axis">'
                   f'{escape(first[i][0][:10])}</text>')
    out.append(f'<text x="14" y="{top + h / 2:.0f}" class="axis" transform="rotate(-90 14 {top + h / 2:.0f})" '
               f'text-anchor="middle">{escape(unit)} per iteration</text>')
    for mk in marks:  # the change: a line at its first night, its levels before and after
        xm = x(mk.index)
        out.append(f'<line class="step" x1="{xm:.1f}" x2="{xm:.1f}" y1="{top}" y2="{top + h}"/>')
        out.append(f'<text class="step-label" x="{xm + 4:.1f}" y="{top + 12}">{escape(mk.label)}</text>')
        if mk.before is not None and math.isfinite(mk.before):
            out.append(f'<line class="level" x1="{x(0):.1f}" x2="{xm:.1f}" y1="{y(mk.before):.1f}" '
                       f'y2="{y(mk.before):.1f}"/>')
        if mk.after is not None and math.isfinite(mk.after):
            out.append(f'<line class="level" x1="{xm:.1f}" x2="{x(n - 1):.1f}" y1="{y(mk.after):.1f}" '
                       f'y2="{y(mk.after):.1f}"/>')
    for j, s in enumerate(series):
        color = PALETTE[j % len(PALETTE)]
        pts = [(x(i), y(val)) for i, (_, _, val, _) in enumerate(s.points) if val is not None]
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                   + " ".join(f"{a:.1f},{b:.1f}" for a, b in pts) + '"/>')
        for i, (t, run, v, bad) in enumerate(s.points):
            if v is None:
                continue
            cls = "point regressed" if bad else "point"
            r = 6 if bad else 3.5
            out.append(f'<a href="{escape(link(int(run)))}"><circle class="{cls}" cx="{x(i):.1f}" cy="{y(v):.1f}" '
                       f'r="{r}" '
                       f'fill="{color}" data-run="{run}"><title>{escape(s.key)}: run {run}, {escape(t)}, '
                       f'{v:,.3f} {escape(unit)}{" (regressed)" if bad else ""}</title></circle></a>')
    out.append("</svg>")
    legend = "".join(f'<li><span class="swatch" style="background:{PALETTE[j % len(PALETTE)]}"></span>'
                     f'{escape(s.key)}</li>' for j, s in enumerate(series))
    return "".join(out) + f'<ul class="legend">{legend}</ul>'


def from_trend(res: Trend, regressed: set[tuple[int, str]]) -> list[Series]:
    """Series of a :class:`warehouse.history.trend.Trend`; ``regressed`` holds (run id, key) pairs to mark."""
    out = []
    for k in res.keys:
        pts = [(res.meta[r]["time"] or "", r, v, (r, k) in regressed) for r, v in zip(res.runs, res.values[k])]
        out.append(Series(k, pts))
    return out


def from_change(change: dict[str, Any], runs: list[dict[str, Any]],
                run_url: Callable[[int], str] | None = None) -> str:
    """The chart of one change (``Change.to_json()``) over its history's ``runs``: its series, its first night
    marked, its levels before and after."""
    values = change.get("series") or []
    pts = [(r["time"] or "", r["run_id"], v, r["run_id"] == change["run_id"]) for r, v in zip(runs, values)]
    at = next((i for i, r in enumerate(runs) if r["run_id"] == change["run_id"]), 0)
    label = f"{change['kind']} from run {change['run_id']} ({(change['time'] or '')[:10]})"
    mark = Mark(at, label, change["before"], change["after"]) if change["kind"] == "step" else Mark(at, label)
    name = change["key"] if change["by"] != "section" or change["key"] != "all" else "whole run"
    return svg([Series(f"{name} ({change.get('series_of') or ', '.join(change['sections'])})", pts)], "us",
               marks=[mark], from_zero=False, height=260, run_url=run_url)
