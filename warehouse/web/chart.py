"""A line chart as inline SVG, drawn on the server: no script or CDN is needed to see it, and every point carries
a <title> (the browser shows run, date and value on hover). Regressed points are marked."""
from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22"]


@dataclass
class Series:
    """One line: its key, and per point (x label, time, run id, value or None, regressed?)."""

    key: str
    points: list[tuple[str, int, float | None, bool]]  # (time, run id, value, regressed)


def svg(series: list[Series], unit: str, width: int = 900, height: int = 360) -> str:
    """The chart's SVG markup."""
    left, right, top, bottom = 70, 50, 20, 60
    n = max((len(s.points) for s in series), default=0)
    values = [v for s in series for (_, _, v, _) in s.points if v is not None]
    if not n or not values:
        return '<p class="empty">No values to draw.</p>'
    lo, hi = min(0.0, min(values)), max(values)
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
            out.append(f'<circle class="{cls}" cx="{x(i):.1f}" cy="{y(v):.1f}" r="{r}" fill="{color}" '
                       f'data-run="{run}"><title>{escape(s.key)}: run {run}, {escape(t)}, {v:,.3f} {escape(unit)}'
                       f'{" (regressed)" if bad else ""}</title></circle>')
    out.append("</svg>")
    legend = "".join(f'<li><span class="swatch" style="background:{PALETTE[j % len(PALETTE)]}"></span>'
                     f'{escape(s.key)}</li>' for j, s in enumerate(series))
    return "".join(out) + f'<ul class="legend">{legend}</ul>'


def from_trend(res: dict[str, Any], regressed: set[tuple[int, str]]) -> list[Series]:
    """Series of a :func:`warehouse.trend.trend` result; ``regressed`` holds (run id, key) pairs to mark."""
    out = []
    for k in res["keys"]:
        pts = [(res["meta"][r]["time"] or "", r, v, (r, k) in regressed) for r, v in zip(res["runs"], res["values"][k])]
        out.append(Series(k, pts))
    return out
