"""Statistics of every row of a (series x night) matrix at once, NaN where a night has no figure: what the history
engine computes for 100,000s of keys a night, where numpy's NaN-aware functions go row by row in Python."""
from __future__ import annotations

import bottleneck as bn
import numpy as np

from warehouse.workers import threads

_LEAST = 500_000  # values of a matrix worth a thread of their own (a row's median: ~20 ns a value)


def row_medians(m: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """The median of the finite values of each row of ``m`` (NaN for a row with none): the same number as
    ``np.median`` of the row's finite values (the middle value, or the mean of the two middle ones), for every row
    at once. The rows of one count of finite values are partitioned together at their middle (a partition puts
    NaN last, as a sort does, and leaves at each index what a sort would: a full sort costs several times more),
    unless the rows have many counts (then one sort of them all costs less). ``overwrite``: ``m`` is the caller's
    scratch copy, which may be partitioned in place."""
    if m.ndim != 2 or not m.shape[0] or not m.shape[1]:
        return np.full(m.shape[0] if m.ndim == 2 else 0, np.nan)
    if not np.isinf(m).any():
        # (bottleneck's quickselect a row, in C: the same middle values, the two middle ones' mean the same
        # double, in half the time of a partition per count; it would count an infinity as a value). Each row
        # is its own: a big matrix's rows are split between the cores.
        halves = threads.by_rows(lambda a, b: bn.nanmedian(m[a:b], axis=1), len(m), least=_LEAST // m.shape[1] + 1)
        return halves[0] if len(halves) == 1 else np.concatenate(halves)
    cnt = np.isfinite(m).sum(axis=1)
    counts = np.unique(cnt)
    if len(counts) > 4:  # (holes everywhere: one sort beats a partition per count)
        s = np.sort(m, axis=1)
        rows = np.arange(len(s))
        lo_v = s[rows, np.maximum(cnt - 1, 0) // 2]
        hi_v = s[rows, np.minimum(cnt // 2, s.shape[1] - 1)]
        with np.errstate(all="ignore"):
            out = np.where(cnt % 2 == 1, lo_v, (lo_v + hi_v) / 2)
        out[cnt == 0] = np.nan
        return out
    out = np.full(len(m), np.nan)
    for c in counts:
        if c == 0:
            continue
        rows = np.nonzero(cnt == c)[0]
        lo, hi = (int(c) - 1) // 2, min(int(c) // 2, m.shape[1] - 1)
        # (partitioned in place: a fancy-indexed copy is this function's own, and so is m when overwritable)
        part = m[rows] if len(rows) != len(m) else m if overwrite else m.copy()
        part.partition(sorted({lo, hi}), axis=1)
        a, b = part[:, lo], part[:, hi]
        with np.errstate(all="ignore"):
            out[rows] = a if c % 2 == 1 else (a + b) / 2
    return out


def row_quantiles(m: np.ndarray, qs: list[float]) -> list[np.ndarray]:
    """Each row's quantiles ``qs`` of its finite values, as ``np.nanquantile(m, q, axis=1)`` gives them (linear
    interpolation between the order statistics), for every row at once (numpy's NaN-aware quantile goes row by
    row in Python: 100,000s of keys a night)."""
    if m.ndim != 2 or not m.shape[0] or not m.shape[1]:
        return [np.full(m.shape[0] if m.ndim == 2 else 0, np.nan) for _ in qs]
    s = np.sort(m, axis=1)
    cnt = np.isfinite(s).sum(axis=1)
    rows = np.arange(len(s))
    out = []
    for q in qs:
        pos = q * np.maximum(cnt - 1, 0)
        lo = np.floor(pos).astype(np.intp)
        hi = np.minimum(lo + 1, np.maximum(cnt - 1, 0))
        a, b = s[rows, lo], s[rows, hi]
        with np.errstate(all="ignore"):
            v = a + (b - a) * (pos - lo)
        v[cnt == 0] = np.nan
        out.append(v)
    return out


def medians_over(values: np.ndarray, rows: np.ndarray, cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """For each k, the median of the finite values of ``values[rows[k], cols[k]]`` (NaN when none) and how many
    there are: rows that share their columns (every key but a re-baselined one) in one :func:`row_medians`."""
    med = np.full(len(rows), np.nan)
    cnt = np.zeros(len(rows), dtype=int)
    groups: dict[bytes, list[int]] = {}
    for k, c in enumerate(cols):
        groups.setdefault(np.asarray(c, dtype=np.intp).tobytes(), []).append(k)
    for ks in groups.values():
        c = np.asarray(cols[ks[0]], dtype=np.intp)
        if len(c):
            part = values[np.asarray(rows)[ks]][:, c]
            med[ks] = row_medians(part)
            cnt[ks] = np.isfinite(part).sum(axis=1)
    return med, cnt


def row_lower_quartiles(m: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """``np.percentile(m, 25, axis=1)`` of a matrix with no NaN, bit for bit (numpy's linear method: the order
    statistics either side of (n - 1) / 4, and its two-sided interpolation), in one partition: numpy's own
    costs 85 us a call in Python, and history asks it for thousands of row groups a night. ``overwrite``: ``m``
    is the caller's scratch copy, partitioned in place (its rows' order is lost)."""
    n = m.shape[1]
    virtual = n * 0.25 + (1 + 0.25 * (1 - 1 - 1)) - 1  # (numpy's expression for the linear method)
    lo = int(np.floor(virtual))
    hi = min(lo + 1, n - 1)
    gamma = virtual - lo
    part = m if overwrite else m.copy()
    part.partition(sorted({lo, hi}), axis=1)
    a, b = part[:, lo], part[:, hi]
    diff = b - a
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma
