"""Change points of one nightly series: pure functions, a series in, its steps, creep and outliers out.

The database never reaches this module (:mod:`warehouse.history.changes` feeds it). The method, for a series ``x`` of
positive per-iteration figures (one a night, already divided by the night's run-wide level):

1. **Log scale**: ``log(x)``, so a change is relative and noise is comparable across keys.
2. **Noise**: ``sigma`` is the series' own robust night-to-night noise (1.4826 x the median absolute first
   difference / sqrt 2: a step moves one difference, an outlier two, neither moves the median), floored by the
   noise the trace replays show within each night (their spread) and by ``floor``.
3. **Outliers**: a night more than ``OUTLIER_SIGMAS`` from the level of the nights before it and from that of
   the nights after it, on the same side, is a one-night outlier: reported apart and replaced before steps are
   looked for, so that a hiccup is never a change and never hides one. Timing noise only slows things down, so a
   night above its neighbours' median counts at most ``HICCUP_SIGMAS`` above it.
4. **Steps**: binary segmentation: the split is where the two-sample statistic ``|mean(after) - mean(before)| /
   (sigma * sqrt(1/n1 + 1/n2))`` peaks (every split at once, with cumulative sums), and it counts when the same
   statistic on lower quartiles (noise 1.3626 sigma / sqrt n: hiccuped nights cannot move them) passes
   ``tau`` (which :mod:`warehouse.history.changes` sets so that the false-discovery rate over all of a model's series
   stays under control) and the relative change passes ``min_change``. A new level must hold ``MIN_AFTER``
   nights: the newest night alone is the gate's business (``warehouse regressions``), not a change yet.
5. **Creep**: when a ramp (flat, then a constant rate per night) explains the series better than its steps do,
   by ``CREEP_GAIN``, it is one creep from the first night its excess passes the noise, not many small steps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import bottleneck as bn
import numpy as np

from warehouse.history.rowstats import row_medians
from warehouse.history.splits import (MIN_AFTER, MIN_BEFORE, MIN_FIRST, best_split, best_splits_rows, lower_quartile,
                                      median_z, seeded_intervals)
from warehouse.workers import threads

OUTLIER_SIGMAS = 6.0
HICCUP_SIGMAS = 2.0
CREEP_GAIN = 0.6  # a ramp must leave at most this share of the steps' squared residual
CREEP_MIN_NIGHTS = 5
MAX_EXCURSION = 4  # nights a level may last and return before it is a change


@dataclass
class Step:
    """A lasting change: ``index`` is the first night of the new level; levels are medians (not logs)."""

    index: int
    before: float
    after: float
    z: float  # the split statistic, in noise units

    @property
    def change(self) -> float:
        return self.after / self.before - 1 if self.before else 0.0


@dataclass
class Creep:
    """A slow drift: from ``index`` (the first night its excess passes the noise) to the end of the series."""

    index: int
    start_index: int  # where the fitted ramp begins
    before: float
    after: float  # the fitted level on the last night
    per_night: float  # relative change a night
    z: float

    @property
    def change(self) -> float:
        return self.after / self.before - 1 if self.before else 0.0


@dataclass
class Outlier:
    index: int
    value: float
    expected: float
    z: float


@dataclass
class SeriesChanges:
    """What a series holds: its noise (relative), steps, creep (or None) and one-night outliers."""

    sigma: float
    steps: list[Step] = field(default_factory=list)
    creep: Creep | None = None
    outliers: list[Outlier] = field(default_factory=list)
    best_z: float = 0.0  # the largest split statistic of the whole series (for the false-discovery rule)


def robust_sigma(z: np.ndarray) -> float:
    """Night-to-night noise of a log series: 1.4826 x median |first difference| / sqrt 2."""
    if len(z) < 3:
        return 0.0
    return float(1.4826 * np.median(np.abs(np.diff(z))) / math.sqrt(2))


def _window_medians_rows(m: np.ndarray, before: int, after: int) -> np.ndarray:
    """For each row and night i, the median of the finite values of the row's nights i - before .. i + after
    (fewer at the ends, NaN when none), every row and night at once: bottleneck's moving median (in C, NaN left
    out) over the row padded with NaN, its trailing window shifted to the centre. The same numbers as
    ``np.nanmedian`` of each window (``m`` holds finite values and NaN only)."""
    k, _ = m.shape
    w = before + after + 1
    padded = np.concatenate([np.full((k, before), np.nan), m, np.full((k, after), np.nan)], axis=1)
    return bn.move_median(padded, w, min_count=1, axis=1)[:, w - 1:]


def clean(z: np.ndarray, sigma: float, one_sided: bool = True) -> tuple[np.ndarray, list[int]]:
    """The series with its one-night outliers replaced, and their indices. A night is an outlier when it stands
    ``OUTLIER_SIGMAS`` from the level of the three nights before it *and* from that of the three after it, on the
    same side (a step's first night agrees with the nights after it, so it is never taken for one); the first
    and the newest night have one side only and are judged by it."""
    n = len(z)
    if sigma <= 0 or n < 4:
        return z.copy(), []
    out, bad = clean_rows(z[None, :], np.array([sigma]), one_sided)
    return out[0], [int(i) for i in np.nonzero(bad[0])[0]]


def clean_rows(z: np.ndarray, sigma: np.ndarray, one_sided: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """:func:`clean` of every row of ``z`` (series of one length, at least 4 nights, each with its noise
    ``sigma`` > 0) at once: the cleaned rows, and where their outliers were (a mask). ``one_sided``: the noise
    only ever adds (timings), so nights above their neighbours are capped too (below)."""
    k = len(z)
    lim = OUTLIER_SIGMAS * sigma[:, None]
    gap = np.full((k, 1), np.nan)
    left = _window_medians_rows(np.concatenate([gap, z[:, :-1]], axis=1), 2, 0)  # nights i-3 .. i-1
    right = _window_medians_rows(np.concatenate([z[:, 1:], gap], axis=1), 0, 2)  # nights i+1 .. i+3
    dl, dr = z - left, z - right
    has_l, has_r = np.isfinite(left), np.isfinite(right)
    far_l = ~has_l | (np.abs(np.where(has_l, dl, 0)) > lim)
    far_r = ~has_r | (np.abs(np.where(has_r, dr, 0)) > lim)
    same = ~(has_l & has_r) | (np.where(has_l, dl, 0) * np.where(has_r, dr, 0) > 0)
    bad_mask = far_l & far_r & same & (has_l | has_r)
    out = z.copy()
    pick = np.where(~has_r | (has_l & (np.abs(np.where(has_l, dl, np.inf)) <= np.abs(np.where(has_r, dr, np.inf)))),
                    left, right)
    out[bad_mask] = pick[bad_mask]
    if not one_sided:
        return out, bad_mask
    # Timing noise is one-sided: interference, throttling and a hiccuped op only ever slow a night down. A night
    # above the median of the five around it by more than HICCUP_SIGMAS counts at that bound: a few slow nights
    # in a row cannot fake a level (a step's nights agree with their neighbours, so a step is untouched).
    roll = _window_medians_rows(out, 2, 2)
    return np.minimum(out, roll + HICCUP_SIGMAS * sigma[:, None]), bad_mask


def segment(z: np.ndarray, sigma: float, tau: float, min_change: float, first: int = MIN_FIRST,
            whole: tuple[int, int, int, float] | None = None) -> list[int]:
    """Seeded binary segmentation: the first indices of each new level whose split passes ``tau`` and
    ``min_change`` (log units), in order. The first segment of the series may split after ``first`` nights (what
    is in view is all there is of the old level); every later one needs MIN_BEFORE. ``whole``: the best split of
    the whole series, already found (:class:`Prepared`), not looked for again."""
    found: list[int] = []
    stack = [(0, len(z), first)]
    while stack:
        a, b, lo = stack.pop()
        got = whole if (a, b, lo) == (0, len(z), first) and whole is not None else best_split(z, a, b, sigma, lo)
        if got is None:
            continue
        s, k, e, _ = got
        # (a hiccup next to a step cannot pull the first night of the new level to its side; the split is judged
        # on lower quartiles, which a few hiccuped nights cannot move)
        k = s + _refine(z[s:e], k - s, first=max(lo - (s - a), 1))
        # fewer than MIN_BEFORE nights of the old level (the start of the view): a few slow nights there look like
        # a level, so the bar rises as the old level's nights get fewer
        bar = tau * math.sqrt(MIN_BEFORE / (k - a)) if k - a < MIN_BEFORE else tau
        if median_z(z[s:k], z[k:e], sigma) < bar:
            continue
        if abs(float(np.median(z[k:e]) - np.median(z[s:k]))) < min_change:
            continue
        found.append(k)
        stack += [(a, k, lo), (k, b, MIN_BEFORE)]
    return sorted(found)


def _refine(seg: np.ndarray, k: int, reach: int = 2, first: int = MIN_BEFORE) -> int:
    """The split near ``k`` (means chose it) that leaves the least absolute deviation from the two sides'
    medians: a hiccup next to a step cannot pull the first night of the new level to its side."""
    n = len(seg)

    def cost(j: int) -> float:  # (bottleneck's median: np.median's number, without its overhead)
        return float(np.abs(seg[:j] - bn.median(seg[:j])).sum() + np.abs(seg[j:] - bn.median(seg[j:])).sum())
    cands = [j for j in range(k - reach, k + reach + 1) if first <= j <= n - MIN_AFTER]
    return min(cands, key=lambda j: (cost(j), abs(j - k))) if cands else k


def _drop_excursions(z: np.ndarray, cps: list[int]) -> tuple[list[int], list[int]]:
    """A level that lasts at most ``MAX_EXCURSION`` nights and returns to where it came from (up, then down as
    far) is a passing excursion, not two changes: its split points are dropped and its nights returned."""
    keep, nights = list(cps), []
    i = 0
    while i + 1 < len(keep):
        a, b = keep[i], keep[i + 1]
        prev = keep[i - 1] if i else 0
        nxt = keep[i + 2] if i + 2 < len(keep) else len(z)
        before, inside, after = np.median(z[prev:a]), np.median(z[a:b]), np.median(z[b:nxt])
        up, back = inside - before, inside - after
        if b - a <= MAX_EXCURSION and up * back > 0 and abs(after - before) < 0.5 * min(abs(up), abs(back)):
            nights += list(range(a, b))
            del keep[i:i + 2]
            continue
        i += 1
    return keep, nights


def split_z(p: Prepared, night: int, up: bool) -> float:
    """The statistic of a prepared series' split at ``night`` over its whole length (:func:`median_z`), negative
    when it moved the other way than ``up``; 0 when the night is not in it or a side is too short."""
    at = int(np.searchsorted(p.idx, night))
    if at >= len(p.idx) or p.idx[at] != night or at < MIN_BEFORE or len(p.zc) - at < MIN_AFTER or p.sigma <= 0:
        return 0.0
    before, after = p.zc[:at], p.zc[at:]
    z = median_z(before, after, p.sigma)
    moved_up = lower_quartile(after) > lower_quartile(before)
    return z if moved_up == up else -z


def _sse_steps(z: np.ndarray, cps: list[int]) -> float:
    edges = [0, *cps, len(z)]
    return float(sum(((z[s:e] - z[s:e].mean()) ** 2).sum() for s, e in zip(edges, edges[1:]) if e > s))


def fit_creep(z: np.ndarray, sigma: float, tau: float) -> tuple[int, float, float, float] | None:
    """The best ramp (flat until c, then a constant slope): ``(c, slope, sse, z)``, or None when no ramp of at
    least ``CREEP_MIN_NIGHTS`` nights has a slope that passes ``tau``."""
    n = len(z)
    best = None
    t = np.arange(n, dtype=float)
    for c in range(MIN_BEFORE, n - CREEP_MIN_NIGHTS + 1):
        h = np.maximum(0.0, t - c + 1)  # night c is the first above the flat level
        X = np.column_stack([np.ones(n), h])
        coef, *_ = np.linalg.lstsq(X, z, rcond=None)
        sse = float(((z - X @ coef) ** 2).sum())
        if best is None or sse < best[2]:
            # the slope's standard error with the series' own noise
            hc = h - h.mean()
            se = sigma / math.sqrt(float((hc ** 2).sum())) if (hc ** 2).sum() > 0 else math.inf
            best = (c, float(coef[1]), sse, abs(float(coef[1])) / se if se > 0 else 0.0)
    if best is None or best[3] < tau:
        return None
    return best


def _bic(sse: float, n: int, params: int) -> float:
    """The Bayesian information criterion of a fit with Gaussian residuals (lower is better)."""
    return n * math.log(max(sse, 1e-300) / n) + params * math.log(n)


def fit_smooth(z: np.ndarray, degrees: tuple[int, ...] = (2, 3, 4, 5)) -> tuple[np.ndarray, float, int] | None:
    """The low-order polynomial trend of a series with the best BIC (its fitted values, squared residual and
    parameter count): a smooth drift (thermal or clock drift, a slowly growing input, a population) follows one,
    a step does not."""
    n = len(z)
    if n < 8:
        return None
    t = np.linspace(-1.0, 1.0, n)
    best = None
    for d in degrees:
        if d + 2 > n:
            break
        coef = np.polynomial.polynomial.polyfit(t, z, d)
        fit = np.polynomial.polynomial.polyval(t, coef)
        sse = float(((z - fit) ** 2).sum())
        if best is None or _bic(sse, n, d + 1) < _bic(best[1], n, best[2]):
            best = (fit, sse, d + 1)
    return best


def prune(z: np.ndarray, cps: list[int], penalty: float) -> list[int]:
    """The change points that pay for themselves: the one whose removal costs least is removed while that cost
    (the rise of the squared residual) is under ``penalty`` times the residual variance of the fit with them all.
    A segmentation splits a swing or a wave into levels that each pass the split test on their own; a real step
    lowers the squared residual by far more than any of them."""
    cps = list(cps)
    n = len(z)
    while cps:
        full = _sse_steps(z, cps)
        s2 = max(full / max(1, n - 2 * len(cps) - 1), 1e-300)
        cost, i = min((_sse_steps(z, cps[:j] + cps[j + 1:]) - full, j) for j in range(len(cps)))
        if cost >= penalty * s2:
            break
        del cps[i]
    return cps


@dataclass
class Prepared:
    """A series made ready once (log scale, noise, outliers out) for :func:`analyse` to judge at any threshold."""

    idx: np.ndarray
    z: np.ndarray
    zc: np.ndarray
    bad: list[int]
    sigma: float
    best_z: float
    log: bool = True  # z is the log of the values (else the values themselves)
    # the best split of the whole cleaned series (:func:`best_split` from its first night), which segmentation
    # starts from: None when none can be made, or not computed (an empty series)
    split: tuple[int, int, int, float] | None = None

    def value(self, v: float) -> float:
        """A level on the series' own scale."""
        return math.exp(v) if self.log else v


def prepare(values: np.ndarray, *, floor: float = 0.0, replay_noise: float = 0.0, log: bool = True,
            one_sided: bool = True) -> Prepared:
    """Log scale (or the values as they are: ``log=False``, for series that are not positive figures), noise and
    cleaning of a series, and the statistic of its best split (what the false-discovery rule ranks), computed
    once. ``one_sided``: the noise only ever adds (timings)."""
    ok = np.isfinite(values) & ((values > 0) if log else True)
    idx = np.nonzero(ok)[0]
    z = np.log(values[ok]) if log else np.asarray(values[ok], dtype=float)
    sigma = max(robust_sigma(z), floor, replay_noise)
    if len(z) < MIN_BEFORE + MIN_AFTER or sigma <= 0:
        return Prepared(idx, z, z, [], sigma, 0.0, log)
    zc, bad = clean(z, sigma, one_sided)
    got = best_split(zc, 0, len(zc), sigma, MIN_FIRST)
    return Prepared(idx, z, zc, bad, sigma, got[3] if got is not None else 0.0, log, split=got)


def prepare_many(series: list[np.ndarray], *, floor: float = 0.0, replay_noise: list[float] | None = None
                 ) -> list[Prepared]:
    """:func:`prepare` of many series, the same numbers: the series of one length with every night a positive
    figure (most of a history's) as matrices, a row each, in a few array operations; the others one by one."""
    noise = replay_noise if replay_noise is not None else [0.0] * len(series)
    out: list[Prepared | None] = [None] * len(series)
    whole: dict[int, list[int]] = {}
    by_len: dict[int, list[int]] = {}
    for i, v in enumerate(series):
        by_len.setdefault(len(v), []).append(i)
    for n, rows in by_len.items():  # (every night a positive figure: one test a length, not one a series)
        m = np.vstack([series[i] for i in rows])
        fit = (np.isfinite(m) & (m > 0)).all(axis=1).tolist() if n >= MIN_BEFORE + MIN_AFTER else [False] * len(rows)
        for i, whole_row in zip(rows, fit):
            if whole_row:
                whole.setdefault(n, []).append(i)
            else:
                out[i] = prepare(series[i], floor=floor, replay_noise=noise[i])
    for n, rows in whole.items():
        z = np.log(np.vstack([series[i] for i in rows]))
        sigma = np.maximum(np.maximum(1.4826 * row_medians(np.abs(np.diff(z, axis=1))) / math.sqrt(2), floor),
                           np.array([noise[i] for i in rows]))
        idx = np.arange(n)
        live = np.nonzero(sigma > 0)[0]
        for q in np.nonzero(~(sigma > 0))[0]:
            out[rows[q]] = Prepared(idx, z[q], z[q], [], float(sigma[q]), 0.0)
        if not len(live):
            continue
        zl, sl = z[live], sigma[live]

        def cleaned_and_split(a: int, b: int) -> tuple[np.ndarray, np.ndarray, list[Any]]:
            zc, bad = clean_rows(zl[a:b], sl[a:b])  # noqa: B023 (run at once, within this iteration)
            return zc, bad, best_splits_rows(zc, sl[a:b])  # noqa: B023
        # (each row from itself alone: split between the cores, the same numbers)
        done = threads.by_rows(cleaned_and_split, len(live))
        zc = np.concatenate([d[0] for d in done])
        bad = np.concatenate([d[1] for d in done])
        best = [got for d in done for got in d[2]]
        at_row, at_night = np.nonzero(bad)
        outs = np.split(at_night, np.searchsorted(at_row, np.arange(1, len(live)))) if len(live) else []
        for j, (r, night, sg, got) in enumerate(zip(live.tolist(), outs, sl.tolist(), best)):
            out[rows[r]] = Prepared(idx, zl[j], zc[j], night.tolist(), sg, got[3] if got is not None else 0.0,
                                    split=got)
    return out  # type: ignore[return-value]


def analyse(values: np.ndarray | Prepared, *, tau: float, min_change: float = 0.01, floor: float = 0.0,
            replay_noise: float = 0.0, penalty: float | None = None) -> SeriesChanges:
    """Steps, creep and outliers of one series of positive values (NaN or <= 0 nights are left out and the
    indices still count nights), or of a :func:`prepare`d one."""
    p = values if isinstance(values, Prepared) else prepare(values, floor=floor, replay_noise=replay_noise)
    idx, z, zc, bad, sigma = p.idx, p.z, p.zc, p.bad, p.sigma
    res = SeriesChanges(sigma)
    if len(z) < MIN_BEFORE + MIN_AFTER or sigma <= 0:
        return res
    res.best_z = p.best_z
    res.outliers = [Outlier(int(idx[i]), float(p.value(z[i])), float(p.value(zc[i])),
                            float(abs(z[i] - zc[i]) / sigma)) for i in bad]
    if p.best_z < 0.5 * tau:  # (no split of the series comes near: nothing to segment)
        return res
    cps = segment(zc, sigma, tau, math.log1p(min_change) if p.log else min_change, whole=p.split)
    if penalty is not None:
        cps = prune(zc, cps, penalty)
    cps, bumps = _drop_excursions(zc, cps)
    for i in bumps:
        res.outliers.append(Outlier(int(idx[i]), float(p.value(z[i])), float(p.value(np.median(zc))), 0.0))
    edges = [0, *cps, len(zc)]
    for j, k in enumerate(cps):
        before = zc[edges[j]:k]
        after = zc[k:edges[j + 2]]
        zstat = median_z(before, after, sigma)
        res.steps.append(Step(int(idx[k]), float(p.value(np.median(before))), float(p.value(np.median(after))),
                              float(zstat)))
    if len(cps) > 1 and len({s.after > s.before for s in res.steps}) == 1:
        # a staircase of same-way steps that one smooth curve explains better (its BIC: the steps cost two
        # parameters each) is one drift, not many steps
        curve = fit_smooth(zc)
        if curve is not None and _bic(curve[1], len(zc), curve[2]) < _bic(_sse_steps(zc, cps), len(zc),
                                                                            2 * len(cps) + 1):
            trend = curve[0]
            moved = np.nonzero(np.abs(trend - trend[0]) > 2 * sigma)[0]
            first = int(moved[0]) if len(moved) else len(zc) - 1
            start = int(np.nonzero(np.abs(trend - trend[0]) > 0.5 * sigma)[0][0]) if len(moved) else first
            per = (trend[-1] - trend[start]) / max(1, len(zc) - 1 - start)
            zr = abs(float(trend[-1] - trend[start])) / sigma
            res.creep = Creep(int(idx[first]), int(idx[start]), p.value(float(np.median(zc[:max(start, 1)]))),
                              p.value(float(trend[-1])), math.expm1(per) if p.log else per, zr)
            res.steps = []
            return res
    if cps:
        ramp = fit_creep(zc, sigma, tau)
        same_way = len({s.after > s.before for s in res.steps}) == 1
        if ramp is not None and same_way and (len(cps) > 1 or ramp[0] < cps[0] - 1) \
                and ramp[2] <= CREEP_GAIN * _sse_steps(zc, cps):
            c, slope, _, zr = ramp
            # the first night the ramp's excess passes twice the noise: never before the drift began
            rise = max(1, math.ceil(2 * sigma / abs(slope))) if slope else 1
            first = min(len(zc) - 1, c - 1 + rise)
            base = float(np.median(zc[:c])) if c > 0 else float(zc[0])
            res.creep = Creep(int(idx[first]), int(idx[c]), p.value(base), p.value(base + slope * (len(zc) - c)),
                              math.expm1(slope) if p.log else slope, zr)
            res.steps = []
    return res


# ------------------------------------------------------------------------------------------------ any series
@dataclass
class SeriesChange:
    """A change of an outside series: a ``step`` (``index``: the first point of the new level) or a ``drift``
    (``index``: the first point past the noise, ``since``: where it begins, ``per_point``: its rate)."""

    index: int
    kind: str
    before: float
    after: float
    z: float
    since: int | None = None
    per_point: float | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"index": self.index, "kind": self.kind, "before": self.before, "after": self.after,
               "change": (self.after / self.before - 1) if self.before else None, "z": round(self.z, 2)}
        if self.kind == "drift":
            out.update({"since": self.since, "per_point": self.per_point})
        return out


@dataclass
class SeriesReport:
    """What :func:`detect_series` found: the change points (steps: a level that starts at ``index``) in order, a
    drift apart (a smooth move has no one point where it changes), one-point outliers apart, the noise, the
    threshold and whether the series was read on a log scale (relative changes) or as it is."""

    changes: list[SeriesChange]
    drifts: list[SeriesChange]
    outliers: list[Outlier]
    sigma: float
    threshold_sigmas: float
    log: bool

    def to_json(self) -> dict[str, Any]:
        return {"changes": [c.to_json() for c in self.changes], "drifts": [d.to_json() for d in self.drifts],
                "outliers": [{"index": o.index, "value": o.value, "expected": o.expected} for o in self.outliers],
                "noise": self.sigma, "threshold_sigmas": round(self.threshold_sigmas, 2),
                "scale": "log" if self.log else "linear"}


def _z_of_p(p: float) -> float:
    """The two-sided normal quantile whose tail is ``p`` (bisection on erfc)."""
    lo, hi = 0.0, 40.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if math.erfc(mid / math.sqrt(2)) > p:
            lo = mid
        else:
            hi = mid
    return hi


def detect_series(values: Any, *, fdr: float = 0.01, min_sigmas: float = 4.0, min_change: float = 0.0,
                  one_sided: bool = False) -> SeriesReport:
    """The change points of one outside series (a model's tokens/s from CI, an end-to-end latency, any
    quantity): the detector the warehouse runs on its own series, with the threshold a single series needs (a
    Bonferroni bound at ``fdr`` over every split it could make, never below ``min_sigmas``). A series of positive
    values is read on a log scale (its changes are relative, ``min_change`` a share); any other as it is.
    ``one_sided``: its noise only ever adds (timings). NaN points are missing; indices count every point."""
    v = np.asarray(values, dtype=float)
    fin = v[np.isfinite(v)]
    log = bool(len(fin)) and bool(np.all(fin > 0))
    p = prepare(v, log=log, one_sided=one_sided)
    n = len(p.z)
    tests = max(1, sum(max(0, e - s - MIN_FIRST - MIN_AFTER + 1) for s, e in seeded_intervals(0, n)))
    tau = max(min_sigmas, _z_of_p(fdr / tests))
    res = analyse(p, tau=tau, min_change=min_change, penalty=3 * math.log(max(n, 2)))
    steps = [SeriesChange(st.index, "step", st.before, st.after, st.z) for st in res.steps]
    drifts = []
    if res.creep is not None:
        c = res.creep
        drifts.append(SeriesChange(c.index, "drift", c.before, c.after, c.z, since=c.start_index,
                                   per_point=c.per_night))
    return SeriesReport(steps, drifts, sorted(res.outliers, key=lambda o: o.index), p.sigma, tau, log)
