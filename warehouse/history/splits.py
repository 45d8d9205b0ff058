"""Where a series splits: the two-sample statistic of every split of an interval on means (cumulative sums make
every split cheap), the seeded intervals a split is looked for in, and the split judged on lower quartiles (a few
hiccuped nights cannot move them), for one series or for many rows at once with the same numbers bit for bit.
:mod:`warehouse.history.changepoints` segments a series with them."""
from __future__ import annotations

import math

import numpy as np

from warehouse.history.rowstats import row_lower_quartiles

MIN_AFTER = 3  # nights a new level must hold before it is a change (fewer: the gate's business)
MIN_BEFORE = 5  # nights of the old level a change needs (a median of fewer is moved by two hiccups)...
MIN_FIRST = 1  # ...but at the start of what is in view (--since, a new model's first week) the old level is what it
# is: a change after fewer nights is still named at its own night (judged with the noise of so few), never later
SEED_DECAY = 0.5  # seeded binary segmentation: interval lengths halve, each scale's intervals overlap by half


def split_stats(z: np.ndarray, a: int, b: int, first: int = MIN_BEFORE) -> np.ndarray:
    """The two-sample statistic (unit noise) of every split k of z[a:b] into z[a:k], z[k:b]; NaN where a side is
    shorter than its minimum (``first`` nights before, :data:`MIN_AFTER` after)."""
    seg = z[a:b]
    n = len(seg)
    out = np.full(n, np.nan)
    if n < first + MIN_AFTER:
        return out
    c = np.cumsum(seg)
    k = np.arange(first, n - MIN_AFTER + 1)
    left = c[k - 1] / k
    right = (c[-1] - c[k - 1]) / (n - k)
    out[k] = np.abs(right - left) / np.sqrt(1.0 / k + 1.0 / (n - k))
    return out


def best_split_rows(z: np.ndarray, first: int = MIN_BEFORE) -> np.ndarray:
    """For every row of ``z`` (one length, at least ``first + MIN_AFTER`` nights, all finite), the split that
    :func:`split_stats` ranks first over the whole row: the same operations, so the same bits and first maximum."""
    n = z.shape[1]
    c = np.cumsum(z, axis=1)
    k = np.arange(first, n - MIN_AFTER + 1)
    ck = c[:, first - 1:n - MIN_AFTER]  # (c[:, k - 1], a view)
    stat = c[:, -1:] - ck
    stat /= n - k
    stat -= ck / k
    np.abs(stat, out=stat)
    stat /= np.sqrt(1.0 / k + 1.0 / (n - k))
    return first + np.argmax(stat, axis=1)


def seeded_intervals(a: int, b: int, shortest: int = MIN_BEFORE + MIN_AFTER) -> list[tuple[int, int]]:
    """The intervals of ``[a, b)`` a split is looked for in: the whole, then at each scale intervals of half the
    length before, overlapping by half (seeded binary segmentation, Kovacs et al. 2020). A change that is undone a
    few nights later (a regression fixed again) moves the means of the whole series little, but it is the only
    change inside some shorter interval: the split of that interval finds it."""
    out = [(a, b)]
    length = b - a
    while True:
        length = int(length * SEED_DECAY)
        if length < shortest:
            return out
        step = max(1, length // 2)
        starts = list(range(a, b - length + 1, step))
        if starts[-1] != b - length:
            starts.append(b - length)
        out += [(s, s + length) for s in starts]


def best_split(z: np.ndarray, a: int, b: int, sigma: float, first: int) -> tuple[int, int, int, float] | None:
    """The best split of ``z[a:b]`` over its seeded intervals: in each interval the split that separates the means
    most (cumulative sums make every split cheap), judged on lower quartiles (:func:`median_z`: a few hiccuped
    nights cannot move them); the interval whose split is judged strongest wins (the first in seeded order of
    equals). ``(interval start, split, interval end, statistic)``, None when no interval can be split. A split
    keeps the segment's minimum sides: ``first`` nights before it from ``a``, MIN_AFTER after it within its
    interval. The intervals of one length are judged together (:func:`_judged_windows`)."""
    intervals = seeded_intervals(a, b)
    judged = np.full(len(intervals), -np.inf)
    splits = np.zeros(len(intervals), dtype=np.intp)
    by_shape: dict[tuple[int, int], list[int]] = {}
    for i, (s, e) in enumerate(intervals):  # (the nights before the split, counted from a, reach ``first``)
        by_shape.setdefault((e - s, max(first - (s - a), 1)), []).append(i)
    for (length, lo), which in by_shape.items():
        if length < lo + MIN_AFTER:
            continue
        starts = np.array([intervals[i][0] for i in which])
        win = np.take(z, (starts[:, None] + np.arange(length)[None, :]).ravel()).reshape(-1, length)
        ks, judged[which] = _judged_windows(win, lo, np.full(len(which), sigma))
        splits[which] = starts + ks
    if not np.isfinite(judged).any():
        return None
    at = int(np.argmax(judged))
    return intervals[at][0], int(splits[at]), intervals[at][1], float(judged[at])


def _judged_windows(win: np.ndarray, lo: int, sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ``win`` (windows of one length, noise ``sigma`` each), the split on means (at least ``lo``
    nights before it) and its statistic on lower quartiles, :func:`median_z`'s number bit for bit. The rows that
    split at one night are judged together (np.percentile's numbers without its overhead: their copies are
    partitioned in place)."""
    length = win.shape[1]
    ks = best_split_rows(win, lo)
    judged = np.full(len(win), np.nan)
    order = np.argsort(ks, kind="stable")  # (the windows of each split together, in their order)
    for at in np.split(order, np.flatnonzero(np.diff(ks[order])) + 1):
        k = int(ks[at[0]])
        lo_b = row_lower_quartiles(win[at, :k], overwrite=True)
        lo_a = row_lower_quartiles(win[at, k:], overwrite=True)
        judged[at] = np.abs(lo_a - lo_b) / (1.3626 * sigma[at] * math.sqrt(1 / k + 1 / (length - k)))
    return ks, judged


def median_z(before: np.ndarray, after: np.ndarray, sigma: float) -> float:
    """The split's statistic on medians (a median's noise is 1.2533 sigma / sqrt n): the split is chosen on means,
    which cumulative sums make cheap, and judged on medians, which a few hiccuped nights cannot move."""
    if not len(before) or not len(after) or sigma <= 0:
        return 0.0
    # the lower quartile, not the median: slow nights (the noise is one-sided) move it least; its noise is
    # 1.3626 sigma / sqrt n
    lo_a, lo_b = lower_quartile(after), lower_quartile(before)
    return float(abs(lo_a - lo_b) / (1.3626 * sigma * math.sqrt(1 / len(before) + 1 / len(after))))


def lower_quartile(x: np.ndarray) -> float:
    """``np.percentile(x, 25)`` of a series with no NaN, bit for bit, without its overhead (segmentation asks for
    thousands)."""
    return float(row_lower_quartiles(x[None, :])[0])


_BATCH = 8_000_000  # values of interval windows judged at once (64 MB of doubles)


def best_splits_rows(zc: np.ndarray, sigma: np.ndarray) -> list[tuple[int, int, int, float] | None]:
    """:func:`best_split` of every row of ``zc`` (cleaned series of one length, noise ``sigma``) over the whole
    row, the same answers: in each seeded interval the split on means, judged on lower quartiles; the interval
    judged strongest (the first in seeded order of equals), None for a row no interval can split. The intervals
    of one length are judged together, as rows of their own (a year has 72 intervals of 11 nights: one at a time,
    the rows that split at each night cost a partition call of their own), in batches of rows that bound the
    memory."""
    rows, n = zc.shape
    intervals = seeded_intervals(0, n)
    judged = np.full((rows, len(intervals)), -np.inf)  # (row x interval, in seeded order)
    splits = np.zeros((rows, len(intervals)), dtype=np.intp)
    by_shape: dict[tuple[int, int], list[int]] = {}
    for i, (s0, e0) in enumerate(intervals):
        by_shape.setdefault((e0 - s0, max(MIN_FIRST - s0, 1)), []).append(i)
    for (length, lo), which in by_shape.items():
        if length < lo + MIN_AFTER:
            continue
        starts = np.array([intervals[i][0] for i in which])
        cols = starts[:, None] + np.arange(length)[None, :]
        step = max(1, _BATCH // cols.size)
        for r0 in range(0, rows, step):
            win = np.take(zc[r0:r0 + step], cols.ravel(), axis=1).reshape(-1, length)  # (row, interval) x night
            ks, got = _judged_windows(win, lo, np.repeat(sigma[r0:r0 + step], len(which)))
            judged[r0:r0 + step, which] = np.where(np.isnan(got), -np.inf, got).reshape(-1, len(which))
            splits[r0:r0 + step, which] = starts + ks.reshape(-1, len(which))
    at = np.argmax(judged, axis=1) if len(intervals) else np.zeros(rows, dtype=np.intp)
    out: list[tuple[int, int, int, float] | None] = []
    for r, i in enumerate(at.tolist()):
        z = float(judged[r, i]) if len(intervals) else -math.inf
        out.append((intervals[i][0], int(splits[r, i]), intervals[i][1], z) if math.isfinite(z) else None)
    return out
