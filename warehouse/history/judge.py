"""One night against its baseline, series by series: the gate's statistics, shared by the nightly and the PR gate.

A series (a section x key x device x metric's figure per iteration, night by night) is judged on the log scale,
divided by each night's run-wide level (so that a card's speed, a clock or a driver, which move every op, move no
key), against its baseline: the median of the baseline nights' values. Its noise is the largest of:

- its own night-to-night noise over its longer history (from the median and upper quartile of its absolute moves;
  a step moves one difference, so a past step does not widen it), widened by 1 + 1/sqrt(moves) for the few nights
  it is measured on,
- the noise its replays show within a night (their spread, as a standard error of their mean),
- a floor of :data:`NOISE_FLOOR` (0.2 %);

widened by the baseline's own uncertainty (a median of n nights). A move is a finding when it passes the relative
``threshold``, ``min_us`` and :data:`Z_GATE` noises; it blocks (a regression or improvement, exit 3) only with the
evidence a real change leaves (:mod:`warehouse.history.gate` gathers it), else it is *suspicious*.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from warehouse.history.rowstats import medians_over, row_medians, row_quantiles

Z_GATE = 5.0  # a move must pass this many noises of its series
CORROBORATE = 2.5  # another measurement agrees when it moved the same way by this many of its own noises...
CORROBORATE_SHARE = 1 / 3  # ... and by at least this share of the relative threshold
FAR = 2.0  # far beyond its noise: this many times Z_GATE and the threshold (a series nothing else corroborates)
NOISE_FLOOR = 0.002  # relative noise no measurement is quieter than
MEDIAN_VARIANCE = (math.pi / 2)  # the variance of a median of n normal draws is pi/2 sigma^2 / n


@dataclass
class Judged:
    """The statistics of every key of one table on one night (arrays over the keys)."""

    now: np.ndarray  # the night's figure, measured
    base: np.ndarray  # the baseline's median, measured
    rel: np.ndarray  # the relative move beyond the run-wide level (log scale: exp(d) - 1)
    z: np.ndarray  # |move| in noises of the series
    robust_rel: np.ndarray  # the same move of the night's figure with its one hiccuped replay taken out
    robust_z: np.ndarray
    sigma: np.ndarray  # relative noise of the series
    n_base: np.ndarray  # baseline nights with a figure
    iterations: np.ndarray  # the night's replays


def night_levels(values: np.ndarray, min_share: float = 0.5) -> np.ndarray:
    """Each night's (column's) run-wide level: the median over the rows of the row's value against its own median
    over the nights (rows with a figure on fewer than ``min_share`` of the nights left out); 1.0 where no row
    says."""
    v = np.where(np.isfinite(values) & (values > 0), values, np.nan)
    if not v.size:
        return np.ones(values.shape[1] if values.ndim == 2 else 0)
    keep = np.isfinite(v).sum(axis=1) >= max(1, min_share * v.shape[1])
    v = v[keep]
    if not len(v):
        return np.ones(values.shape[1])
    mid = row_medians(v)
    good = mid > 0
    with np.errstate(all="ignore"):
        lv = row_medians((v[good] / mid[good, None]).T)
    return np.where(np.isfinite(lv) & (lv > 0), lv, 1.0)


def log_sigma(seq: np.ndarray) -> np.ndarray:
    """Each row's night-to-night noise of its log values (the nights without a figure left out): the larger of
    what the median and the upper quartile of the absolute moves say (for normal noise they agree; a series whose
    moves are mostly tiny with a few real ones, which quantised or smooth figures give, fools the median alone into
    a noise far below the moves it makes)."""
    out = np.zeros(len(seq))
    with np.errstate(all="ignore"):
        moves = np.abs(np.diff(np.log(np.where(np.isfinite(seq) & (seq > 0), seq, np.nan)), axis=1))
    enough = np.isfinite(moves).sum(axis=1) >= 2 if moves.size else np.zeros(len(seq), dtype=bool)
    if enough.any():
        mid, q3 = row_quantiles(moves[enough], [0.5, 0.75])
        # (|difference of two normal draws| has median 0.6745 sigma sqrt 2, upper quartile 1.1503 sigma sqrt 2)
        out[enough] = np.maximum(mid / 0.6745, q3 / 1.1503) / math.sqrt(2)
    return out


def replay_sigma(values: np.ndarray, spreads: np.ndarray, iterations: np.ndarray) -> np.ndarray:
    """Each row's relative noise of a night's mean that its replays show: the spread (max - min) of k replays is
    about d2(k) sigma (d2 1.13, 1.69, 2.06, 2.33 for 2..5; ~3 beyond), the mean of k has sigma / sqrt(k)."""
    with np.errstate(all="ignore"):
        k = np.where(np.isfinite(iterations), iterations, 1.0)
        ok = np.isfinite(spreads) & np.isfinite(values) & (values > 0) & (k > 1)
        d2 = np.interp(k, [2, 3, 4, 5, 10], [1.13, 1.69, 2.06, 2.33, 3.08])
        each = np.where(ok, spreads / d2 / np.sqrt(k) / values, np.nan)
    med = row_medians(each)
    return np.where(np.isfinite(med), med, 0.0)


def judge(values: np.ndarray, spreads: np.ndarray, iterations: np.ndarray, levels: np.ndarray, cand: int,
          base_cols: list[np.ndarray], noise_cols: np.ndarray) -> Judged:
    """The candidate column ``cand`` of every row against the row's own baseline columns (``base_cols[i]``: the
    columns of row i's baseline, which a re-baselined key starts later), its noise over ``noise_cols``.
    ``levels``: each column's run-wide level. (The ``min_us`` floor is the caller's: an absolute move.)"""
    norm = values / levels[None, :]
    now = values[:, cand]
    now_n = norm[:, cand]
    n = len(values)
    everyone = np.arange(n)
    with np.errstate(all="ignore"):
        logs = np.where(np.isfinite(norm) & (norm > 0), np.log(norm), np.nan)
    base_log, n_base = medians_over(logs, everyone, base_cols)  # (the baseline: finite, positive nights)
    base_n = np.where(n_base > 0, np.exp(base_log), np.nan)
    base = np.where(n_base > 0, medians_over(values, everyone, base_cols)[0], np.nan)
    if len(noise_cols):
        # (a noise measured on few nights is itself uncertain, and more often under- than over-estimated where it
        # matters: widen it by 1 + 1/sqrt(moves), x1.4 on a first week's 6 moves, x1.2 on a month's 29)
        moves = np.maximum(np.isfinite(norm[:, noise_cols]).sum(axis=1) - 1, 1)
        own = log_sigma(norm[:, noise_cols]) * (1 + 1 / np.sqrt(moves))
    else:
        own = np.zeros(n)
    sigma = np.maximum.reduce([own,
                               replay_sigma(values[:, noise_cols], spreads[:, noise_cols],
                                            iterations[:, noise_cols]) if len(noise_cols) else np.zeros(n),
                               np.full(n, NOISE_FLOOR)])
    widen = np.sqrt(1 + MEDIAN_VARIANCE / np.maximum(n_base, 1))
    with np.errstate(all="ignore"):
        d = np.log(now_n / base_n)
        k = np.where(np.isfinite(iterations[:, cand]), iterations[:, cand], 1.0)
        # the night's figure as low as its replays allow: of k replays with mean m and spread s (max - min) the
        # fastest is at least m - (k - 1) s / k (exactly, for two). Hiccups only slow replays down, so whatever
        # hiccuped leaves this where it was; a change moves every replay, and it.
        sp = spreads[:, cand]
        robust_now = np.where((k > 1) & np.isfinite(sp), now - sp * (k - 1) / k, now)
        d_r = np.log(robust_now / levels[cand] / base_n)
    return Judged(now, base, np.expm1(d), np.abs(d) / (sigma * widen), np.expm1(d_r),
                  np.abs(d_r) / (sigma * widen), sigma, n_base, k)
