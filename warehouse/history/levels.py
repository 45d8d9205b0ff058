"""The levels change detection divides by and the noise it measures: each night's run-wide level (the median over
many series of each one's value against its own median), a night's figure robust to one hiccuped replay, and the
noise a night's replays show."""
from __future__ import annotations

import math

import numpy as np

from warehouse.history.changepoints import clean, robust_sigma
from warehouse.history.rowstats import row_medians
from warehouse.history.nightseries import LEVEL_METRICS, PairSeries


def _level(series: list[np.ndarray], n: int) -> np.ndarray:
    """Each night's level: the median over series of the value against the series' own median (1 when no
    series has the night). Series with fewer than 90 % of the nights are left out."""
    if not series:
        return np.ones(n)
    v = np.vstack(series)
    ok = np.isfinite(v) & (v > 0)
    keep = ok.sum(axis=1) >= 0.9 * n
    v, ok = v[keep], ok[keep]
    med = row_medians(np.where(ok, v, np.nan), overwrite=True)
    good = med > 0
    if not good.any():
        return np.ones(n)
    # (each night over the series)
    lv = row_medians(np.where(ok[good], v[good] / med[good, None], np.nan).T, overwrite=True)
    return np.where(np.isfinite(lv) & (lv > 0), lv, 1.0)


class PairTable:
    """A history's (block, op code) pairs for one metric as one matrix (pair x night), with what every level
    over them divides by taken once: each pair's median over its positive nights, whether the pair counts (90 % of
    the nights positive, a positive median), and each night's value against the pair's median. The run-wide level
    and every block's and op code's level read these rows (a year of a big model: 6,570 pairs, each in the
    run-wide level and in two part levels), so nothing is stacked or divided twice. The numbers are
    :func:`_level`'s for the same series."""

    def __init__(self, v: np.ndarray, n: int) -> None:
        """``v``: the pairs' figures (pair x night), only read."""
        self.n = n
        ok = np.isfinite(v) & (v > 0)
        med = row_medians(np.where(ok, v, np.nan), overwrite=True) if len(v) else np.empty(0)
        self.usable = (ok.sum(axis=1) >= 0.9 * n) & (med > 0)
        with np.errstate(all="ignore"):
            self.ratio = np.where(ok, v / med[:, None], np.nan)

    def level(self, rows: np.ndarray) -> np.ndarray:
        """Each night's level over the pairs ``rows`` (indices): :func:`_level` of their series."""
        rows = rows[self.usable[rows]]
        if not len(rows):
            return np.ones(self.n)
        lv = row_medians(self.ratio[rows].T, overwrite=True)  # (each night over the pairs)
        return np.where(np.isfinite(lv) & (lv > 0), lv, 1.0)

    def levels(self, groups: list[np.ndarray]) -> list[np.ndarray]:
        """:meth:`level` of each group of pairs (indices), in a few array operations: a history asks for the level
        of every block's and op code's pairs, thousands of small groups. Groups of one size have their nights'
        medians taken together."""
        n = self.n
        out: list[np.ndarray] = [np.ones(n) for _ in groups]
        live = [i for i, g in enumerate(groups) if len(g)]
        if not live:
            return out
        which = np.concatenate([groups[i] for i in live]).astype(np.intp)
        owner = np.repeat(np.array(live), [len(groups[i]) for i in live])
        good = np.nonzero(self.usable[which])[0]
        if not len(good):
            return out
        # the rows kept, each group's together in its own order: indices only (the matrix is read once per width)
        good = good[np.argsort(owner[good], kind="stable")]
        ids, starts, counts = np.unique(owner[good], return_index=True, return_counts=True)
        for width in np.unique(counts):  # (groups of one size together: a block's pairs are often as many as another's)
            mine = np.nonzero(counts == width)[0]
            rows = which[good[(starts[mine][:, None] + np.arange(width)[None, :]).reshape(-1)]]
            stack = self.ratio[rows].reshape(len(mine), int(width), n).transpose(0, 2, 1).reshape(
                len(mine) * n, int(width))
            lv = row_medians(stack, overwrite=True).reshape(len(mine), n)
            lv = np.where(np.isfinite(lv) & (lv > 0), lv, 1.0)
            for j, g in enumerate(mine):
                out[int(ids[g])] = lv[j]
        return out


class Pairs:
    """A history's (block, op code) pairs in the sections judged: a :class:`PairTable` a metric, the pairs each
    block and op code holds, and each one's level over its pairs (taken once: no pass changes them)."""

    def __init__(self, keys: list[tuple[str, str]], tables: dict[str, PairTable]) -> None:
        self.keys, self.tables = keys, tables
        groups: dict[tuple[str, str, str], list[int]] = {}
        for i, (s, k) in enumerate(self.keys):
            b, _, c = k.partition(" / ")
            groups.setdefault((s, "block", b), []).append(i)
            groups.setdefault((s, "op-code", c), []).append(i)
        self.groups = {sgk: np.array(ix, dtype=np.intp) for sgk, ix in groups.items()}
        self.part: dict[tuple[str, str, str, str], np.ndarray] = {}
        self._wide: dict[tuple[str, frozenset[tuple[str, str, str]]], np.ndarray] = {}

    @classmethod
    def of(cls, data: dict[tuple[str, str, str, int], dict[str, np.ndarray]], sections: list[str], n: int) -> Pairs:
        """The pairs of ``data`` in ``sections``."""
        held = [(s, k, d) for (s, g, k, _dev), d in data.items() if g == "block/op-code" and s in sections]
        return cls([(s, k) for s, k, _ in held],
                   {m: PairTable(np.vstack([d[m] for *_, d in held]) if held else np.empty((0, n)), n)
                    for m in LEVEL_METRICS})

    @classmethod
    def ready(cls, pairs: PairSeries, n: int, metrics: list[str], least: int) -> Pairs:
        """The pairs :func:`warehouse.history.series.fetch_pairs` read (every section), with what a first pass
        reads of them taken already: the run-wide levels over them all, the part levels of the blocks and op codes
        with ``least`` pairs. (A caller takes these while it reads the other series.)"""
        out = cls(pairs.keys, {m: PairTable(pairs.matrices[m], n) for m in LEVEL_METRICS})
        for m in LEVEL_METRICS:
            out.run_wide(m, set())
        out.with_part_levels(metrics, least)
        return out

    def run_wide(self, metric: str, moved: set[tuple[str, str, str]]) -> np.ndarray:
        """Each night's level of ``metric`` over every pair but those of the blocks and op codes in ``moved``."""
        known = self._wide.get((metric, frozenset(moved)))
        if known is not None:
            return known
        # (a moved block's or op code's pairs are its group's)
        left_out = [self.groups[sgk] for sgk in moved if sgk in self.groups]
        keep = np.arange(len(self.keys), dtype=np.intp)
        if left_out:
            keep = np.setdiff1d(keep, np.concatenate(left_out))
        got = self._wide[(metric, frozenset(moved))] = self.tables[metric].level(keep)
        return got

    def with_part_levels(self, metrics: list[str], least: int) -> None:
        """The level over its pairs of each block and op code with at least ``least`` of them, for each of
        ``metrics`` the pairs have, all at once (:meth:`PairTable.levels`); those taken already are kept."""
        for m in metrics:
            if m in self.tables:
                wanted = [sgk for sgk, ix in self.groups.items() if len(ix) >= least and (*sgk, m) not in self.part]
                got = self.tables[m].levels([self.groups[sgk] for sgk in wanted])
                self.part.update(((*sgk, m), lv) for sgk, lv in zip(wanted, got))


def _without_outliers(level: np.ndarray) -> np.ndarray:
    """A level series with its one-night outliers replaced by their neighbours' level."""

    z = np.log(level)
    out, _ = clean(z, max(robust_sigma(z), 1e-4))
    return np.exp(out)


def _robust_night(d: dict[str, np.ndarray], metric: str) -> np.ndarray:
    """Each night's figure, robust to one hiccuped replay (:func:`robust_nights` of one series)."""
    return robust_nights(d[metric], d[f"{metric}_spread"], d["iterations"])


def robust_nights(v: np.ndarray, s: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Each night's figure (``v``, a series or a matrix of them), robust to one hiccuped replay: the mean over the
    k replays less the spread / k. A hiccup (one replay slowed, which tt-metal's noise does a few times a night)
    raises the mean by its excess / k and the spread (``s``) by its excess, so this takes it out exactly; a real
    change moves every replay and stays; a night of one replay is its value."""
    adj = np.where((k > 1) & np.isfinite(s), s / np.maximum(k, 1), 0.0)
    return v - adj


def replay_noises(v: np.ndarray, s: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Each row's relative noise of a night's mean that its replays show (0 for a row with fewer than three nights
    of replays): spread (max - min) of k replays is about d2(k) sigma (d2: 1.13, 1.69, 2.06, 2.33 for 2..5; ~3
    beyond), and the mean of k has sigma / sqrt(k); the median over the row's nights."""
    ok = np.isfinite(s) & np.isfinite(v) & (v > 0) & (k > 1)
    d2 = np.interp(np.where(ok, k, 2.0), [2, 3, 4, 5, 10], [1.13, 1.69, 2.06, 2.33, 3.08])
    with np.errstate(all="ignore"):
        each = np.where(ok, s / d2 / np.sqrt(np.where(ok, k, 1.0)) / v, np.nan)
    return np.where(ok.sum(axis=1) >= 3, row_medians(each, overwrite=True), 0.0)


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
