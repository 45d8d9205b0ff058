"""The levels change detection divides by and the noise it measures: each night's run-wide level (the median over
many series of each one's value against its own median), a night's figure robust to one hiccuped replay, and the
noise a night's replays show."""
from __future__ import annotations

import math

import numpy as np

from warehouse.history.changepoints import clean, robust_sigma
from warehouse.history.rowstats import row_medians


class SeriesMedians:
    """Each series' median over its nights' positive figures, taken once however many levels read the series: the
    run-wide level and every block's and op code's level read the same (block, op code) pairs (a year of a big
    model: 6,570 pairs a metric, each read three times). Series are known by identity; the memo holds them, so an
    id is never reused while it is a key."""

    def __init__(self) -> None:
        self._at: dict[int, float] = {}
        self._held: list[np.ndarray] = []

    def of(self, series: list[np.ndarray]) -> np.ndarray:
        """The median of each series' finite positive values (NaN when none), in the order given."""
        new = {id(x): x for x in series if id(x) not in self._at}
        if new:
            v = np.vstack(list(new.values()))
            med = row_medians(np.where(np.isfinite(v) & (v > 0), v, np.nan), overwrite=True)
            self._at.update(zip(new, med.tolist()))
            self._held += new.values()
        return np.fromiter((self._at[id(x)] for x in series), dtype=float, count=len(series))


def _level(series: list[np.ndarray], n: int, medians: SeriesMedians | None = None) -> np.ndarray:
    """Each night's level: the median over series of the value against the series' own median (1 when no
    series has the night). Series with fewer than 90 % of the nights are left out."""
    if not series:
        return np.ones(n)
    v = np.vstack(series)
    ok = np.isfinite(v) & (v > 0)
    keep = ok.sum(axis=1) >= 0.9 * n
    v, ok = v[keep], ok[keep]
    med = (medians.of([x for x, k in zip(series, keep.tolist()) if k]) if medians is not None
           else row_medians(np.where(ok, v, np.nan), overwrite=True))
    good = med > 0
    if not good.any():
        return np.ones(n)
    # (each night over the series)
    lv = row_medians(np.where(ok[good], v[good] / med[good, None], np.nan).T, overwrite=True)
    return np.where(np.isfinite(lv) & (lv > 0), lv, 1.0)


def _levels(groups: list[list[np.ndarray]], n: int, medians: SeriesMedians | None = None) -> list[np.ndarray]:
    """:func:`_level` of each group of series, the same numbers, in a few array operations: a history asks for the
    level of every block's and op code's (block, op code) pairs, thousands of small groups (each pair in two of
    them: its block's and its op code's, so each distinct series is stacked once). Groups of one size have their
    nights' medians taken together."""
    out: list[np.ndarray] = [np.ones(n) for _ in groups]
    live = [i for i, g in enumerate(groups) if g]
    if not live:
        return out
    flat = [s for i in live for s in groups[i]]
    number: dict[int, int] = {}
    uniq: list[np.ndarray] = []
    for x in flat:
        if number.setdefault(id(x), len(uniq)) == len(uniq):
            uniq.append(x)
    which = np.fromiter((number[id(x)] for x in flat), dtype=np.intp, count=len(flat))
    u = np.vstack(uniq)
    u_ok = np.isfinite(u) & (u > 0)
    u_med = medians.of(uniq) if medians is not None else row_medians(np.where(u_ok, u, np.nan), overwrite=True)
    owner = np.concatenate([np.full(len(groups[i]), i) for i in live])
    good = np.nonzero((u_ok.sum(axis=1) >= 0.9 * n)[which] & (u_med[which] > 0))[0]
    if not len(good):
        return out
    # the rows kept, each group's together in its own order: indices only (the matrix is read once per width)
    good = good[np.argsort(owner[good], kind="stable")]
    ids, starts, counts = np.unique(owner[good], return_index=True, return_counts=True)
    for width in np.unique(counts):  # (groups of one size together: a block's pairs are often as many as another's)
        mine = np.nonzero(counts == width)[0]
        rows = which[good[(starts[mine][:, None] + np.arange(width)[None, :]).reshape(-1)]]
        with np.errstate(all="ignore"):
            ratio = np.where(u_ok[rows], u[rows] / u_med[rows, None], np.nan)
        stack = ratio.reshape(len(mine), int(width), n).transpose(0, 2, 1).reshape(len(mine) * n, int(width))
        lv = row_medians(stack, overwrite=True).reshape(len(mine), n)
        lv = np.where(np.isfinite(lv) & (lv > 0), lv, 1.0)
        for j, g in enumerate(mine):
            out[int(ids[g])] = lv[j]
    return out


def with_part_levels(parts: dict[tuple[str, str, str], list[dict[str, np.ndarray]]], metrics: list[str],
                     have: dict[tuple[str, str, str, str], np.ndarray], n: int, least: int,
                     medians: SeriesMedians | None = None) -> None:
    """Each block's and op code's level over its (block, op code) pairs (``parts``: its pairs' figures, when it has
    at least ``least``), all at once (:func:`_levels`), into ``have`` (those it has already are kept)."""
    wanted = [(*sgk, m) for sgk, inside in parts.items() if len(inside) >= least for m in metrics
              if m in inside[0] and (*sgk, m) not in have]
    have.update(zip(wanted, _levels([[p[w[3]] for p in parts[w[:3]]] for w in wanted], n, medians)))


def _without_outliers(level: np.ndarray) -> np.ndarray:
    """A level series with its one-night outliers replaced by their neighbours' level."""

    z = np.log(level)
    out, _ = clean(z, max(robust_sigma(z), 1e-4))
    return np.exp(out)


def _robust_night(d: dict[str, np.ndarray], metric: str) -> np.ndarray:
    """Each night's figure, robust to one hiccuped replay: the mean over the k replays less the spread / k. A
    hiccup (one replay slowed, which tt-metal's noise does a few times a night) raises the mean by its excess / k
    and the spread by its excess, so this takes it out exactly; a real change moves every replay and stays; a
    night of one replay is its value."""
    v, s, k = d[metric], d[f"{metric}_spread"], d["iterations"]
    adj = np.where((k > 1) & np.isfinite(s), s / np.maximum(k, 1), 0.0)
    return v - adj


def _replay_noise(d: dict[str, np.ndarray], metric: str) -> float:
    """Relative noise of a night's mean that its replays show: spread (max - min) of k replays is about
    d2(k) sigma (d2: 1.13, 1.69, 2.06, 2.33 for 2..5; ~3 beyond), and the mean of k has sigma / sqrt(k)."""
    k = d["iterations"]
    v, s = d[metric], d[f"{metric}_spread"]
    ok = np.isfinite(s) & np.isfinite(v) & (v > 0) & (k > 1)
    if ok.sum() < 3:
        return 0.0
    d2 = np.interp(k[ok], [2, 3, 4, 5, 10], [1.13, 1.69, 2.06, 2.33, 3.08])
    return float(np.median(s[ok] / d2 / np.sqrt(k[ok]) / v[ok]))


def _moved_itself(data: dict[tuple[str, str, str, int], dict[str, np.ndarray]], sgkd: tuple[str, str, str, int],
                  m: str, before: slice, after: slice, want: float) -> bool:
    """Whether a key's own figure, not divided by the run-wide level, moved from its nights ``before`` to its
    nights ``after`` by ``want`` at least, its way (a relative move: half the smallest change, signed as the
    change found). When the level moves and a figure does not (every op slower, a section's span the same), the
    figure over the level moves back: that is the run-wide change seen from a key that did not take part, which
    the whole run's finding names, not a change of the key."""
    if sgkd[1] in ("run", "device") or sgkd[3] >= 0 or sgkd not in data:
        return True
    v = _robust_night(data[sgkd], m)
    a, b = (float(row_medians(x[None, :])[0]) for x in (v[before], v[after]))  # (NaN for a week with none)
    move = b / a - 1 if a > 0 else math.nan  # (a count that was 0: no relative move to read)
    return bool(not math.isfinite(move) or move * want > 0 and abs(move) >= abs(want))
