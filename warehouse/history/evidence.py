"""The evidence a real change leaves, which a hiccup does not: what lets the gate block on a move.

A move of one series on one night is a *finding*; it blocks (a regression or an improvement) only when something
else corroborates it, each a *channel* where the data has it:

- **eager and the trace**: they run the same ops, so a change moves both by the same share;
- **replays**: the trace's replays with the hiccuped one taken out still moved (hiccups only slow a replay);
- **devices**: the typical device of a key moved as the key did (a hiccup moves one);
- **(block, op code) pairs**: an op code's change moves it in every block it runs in;
- **its op codes**: a device's total moves with all of its op codes.

Where a series has two channels, two must agree (each alone is met by chance on a big model); where it has none (one
section, one iteration, one device), only a move far beyond its noise that no one-op hiccup can explain, or one that
holds two nights running.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from warehouse.history.changepoints import analyse
from warehouse.history.splits import MIN_AFTER, MIN_BEFORE
from warehouse.history.judge import CORROBORATE, CORROBORATE_SHARE, FAR, Z_GATE, Judged
from warehouse.history.series import ALL_DEVICES, Table
from warehouse.registry.contract import EAGER, TRACE
from warehouse.registry.measures import METRIC

PER_DEVICE = ("section", "op-code")  # groupings judged per device too (a slower device is named)
HICCUP_LEAST = 2.0  # a one-op hiccup slows its op by this much or more (what real captures and the generator show)


@dataclass
class Night:
    """What one checked night is judged against."""

    cand: int
    base: list[int]  # the baseline window (valid nights before it)
    noise: list[int]  # the longer stretch whose moves give each series' noise
    breaks: list[tuple[str, str, int]]  # (by, key, first night) of the steps acknowledged before it
    prev: int | None = None  # the night just before it in its own history (a PR's run has none)
    # a whole multi-host capture's night (warehouse.history.wholecapture): each night's runs, its ranks'
    members: dict[int, list[int]] | None = None


@dataclass
class Series:
    """One judged table of a night: its keys and their statistics."""

    section: str
    dim: str
    metric: str
    table: Table
    rows: np.ndarray  # the table's rows the candidate has
    j: Judged
    levels: np.ndarray  # each column's run-wide level


def established(s: Series, r: int, n: Night, threshold: float) -> bool:
    """Whether the night's level is one its history already holds: change-point analysis of the series' nights
    before it finds a change at least MIN_AFTER nights ago, and the night is at that new level. The gate judges a
    night against the level of the series' newest segment (a change is news on its first nights, not for good)."""
    cols = [c for c in (s.table.column(rid) for rid in n.noise) if c is not None]
    if len(cols) < MIN_BEFORE + MIN_AFTER:
        return False
    i = s.rows[r]
    hist = s.table.values[s.metric][i, cols] / s.levels[cols]
    res = analyse(hist, tau=Z_GATE, min_change=threshold / 2)
    if not res.steps:
        return False
    last = res.steps[-1]
    if len(cols) - last.index < MIN_AFTER:
        return False
    c = s.table.column(n.cand)
    now = s.table.values[s.metric][i, c] / s.levels[c]
    return bool(abs(math.log(now / last.after)) < math.log1p(threshold))


def evidence(s: Series, r: int, index: dict[tuple[str, str, str], Series], threshold: float, n: Night
             ) -> list[str]:
    """What corroborates the move of row ``r`` of ``s`` (empty: none, a suspicious move)."""
    j = s.j
    up = j.rel[r] > 0
    key, dev = s.table.keys[s.rows[r]]
    out = []

    def agrees(rel: float, z: float) -> bool:
        return bool(np.isfinite(rel) and (rel > 0) == up and abs(rel) >= CORROBORATE_SHARE * threshold
                    and z >= CORROBORATE)
    # (op-to-op gaps are the host's, which a trace replay leaves out: eager and the trace do not share them)
    other = {EAGER: TRACE, TRACE: EAGER}.get(s.section) if s.metric != "op2op" else None
    o = index.get((other, s.dim, s.metric)) if other else None
    at = [q for q, i in enumerate(o.rows) if o.table.keys[i] == (key, dev)] if o is not None else []
    if o is not None:
        if at and agrees(float(o.j.rel[at[0]]), float(o.j.z[at[0]])) and _same_move(j, r, o.j, at[0]):
            out.append("eager and trace")
    if j.iterations[r] > 1 and np.isfinite(j.robust_rel[r]) and (j.robust_rel[r] > 0) == up \
            and abs(j.robust_rel[r]) > threshold and j.robust_z[r] >= Z_GATE:
        out.append(f"{int(j.iterations[r])} replays")
    channels = int(bool(at)) + int(j.iterations[r] > 1)  # (numpy's booleans add as or)
    move = float(np.log1p(j.rel[r]))
    if dev == ALL_DEVICES and s.dim in PER_DEVICE:
        # a key's devices: a real change moves them alike (their median moves as the key did), a hiccup one
        devs = [q for q, i in enumerate(s.rows) if s.table.keys[i][0] == key and s.table.keys[i][1] != ALL_DEVICES]
        channels += int(len(devs) > 1)
        if len(devs) > 1 and _typical(j, devs, move):
            out.append(f"{len(devs)} devices")
    if s.dim == "section" and key == "total" and dev != ALL_DEVICES:
        oc = index.get((s.section, "op-code", s.metric))
        if oc is not None:  # a device's total: its op codes (a slower device slows them all, a hiccup one op)
            codes = [q for q, i in enumerate(oc.rows) if oc.table.keys[i][1] == dev]
            channels += int(len(codes) > 1)
            if len(codes) > 1 and _typical(oc.j, codes, move):
                out.append(f"its {len(codes)} op codes")
    if s.dim == "op-code" and dev == ALL_DEVICES:
        p = index.get((s.section, "block/op-code", s.metric))
        if p is not None:
            # an op code's change moves it in every block it runs in (their median moves as it did), a hiccup in
            # one block. (A block's own pairs are no such channel: one op code inside it may be its whole change.)
            mine = [q for q, i in enumerate(p.rows) if _pair_of(p.table.keys[i][0], s.dim, key)]
            channels += int(len(mine) > 1)
            if len(mine) > 1 and _typical(p.j, mine, move):
                out.append(f"its {len(mine)} (block, op code) pairs")
    # a series nothing else can corroborate (one section, one iteration, one device, one pair): its size alone,
    # far beyond its noise (where anything could corroborate, a hiccup's size is no evidence)
    if not channels and j.z[r] >= FAR * Z_GATE and abs(j.rel[r]) >= FAR * threshold:
        # ... and no one-op hiccup (x2 or more, a few a night on a big model): a one-op key's doubling is red once
        # it holds two nights running.
        if _beyond_a_hiccup(s, r, n) or persists(s, r, n, threshold):
            return ["far beyond its noise"]
        return []
    # Two channels where two exist: each alone is met by chance on a big model (a hiccup in eager and one in the
    # trace, hiccups in both of two replays); a real change moves every measurement of its ops. Where eager and
    # the trace are all there is, their moves must be alike within a tenth (hiccups of one op in each, on the
    # same night, come a few times a month on a big model with many hiccups, by unrelated amounts)
    if channels == 1 and out == ["eager and trace"] and not _same_move(j, r, o.j, at[0], 0.10):  # type: ignore
        return []
    return out if len(out) >= min(2, channels) else []


def _beyond_a_hiccup(s: Series, r: int, n: Night) -> bool:
    """Whether row ``r``'s move is no one-op hiccup: a key of several ops (a hiccup is one op), or a one-op key
    that moved by less than a hiccup does (x2 or more; a code change usually moves an op by tens of per cent). A
    count or a utilisation is no sum of durations, and always is."""
    m = METRIC[s.metric]
    if not (m.stored and m.unit == "us") or s.table.ops is None or s.j.rel[r] < 0:
        return True
    c = s.table.column(n.cand)
    i = s.rows[r]
    ops = float(s.table.ops[i, c]) if c is not None else math.nan
    if s.table.iterations is not None and c is not None and math.isfinite(float(s.table.iterations[i, c])):
        ops *= float(s.table.iterations[i, c])
    return bool(math.isfinite(ops) and (ops >= 2 or float(s.j.rel[r]) < HICCUP_LEAST - 1))


def persists(s: Series, r: int, n: Night, threshold: float) -> bool:
    """Whether the night before ``n`` (in the same history) moved row ``r`` of ``s`` the same way, by at least half
    the move and beyond the threshold (both against the same baseline, each night beyond its run-wide level)."""
    c, p = s.table.column(n.cand), s.table.column(n.prev) if n.prev is not None else None
    if c is None or p is None:
        return False
    i, j = s.rows[r], s.j
    now_n = s.table.values[s.metric][i, c] / s.levels[c]
    prev_n = s.table.values[s.metric][i, p] / s.levels[p]
    with np.errstate(all="ignore"):
        d_now = math.log1p(float(j.rel[r]))
        d_prev = math.log(prev_n / now_n) + d_now  # (the prior night against the same baseline)
    return bool(math.isfinite(d_prev) and d_prev * d_now > 0 and abs(d_prev) >= 0.5 * abs(d_now)
                and abs(d_prev) >= math.log1p(threshold))


def _same_move(a: Judged, i: int, b: Judged, k: int, slack: float = 0.25) -> bool:
    """Whether two sections' moves are the same change: eager and the trace run the same ops, so a change of
    them moves both by the same share (within their noise, or ``slack`` of the move); a hiccup in each, which
    five times the usual hiccups make common on a big model, moves them by unrelated amounts."""
    da, db = math.log1p(float(a.rel[i])), math.log1p(float(b.rel[k]))
    room = max(3 * math.hypot(float(a.sigma[i]), float(b.sigma[k])), slack * max(abs(da), abs(db)))
    return abs(da - db) <= room


def _typical(j: Judged, rows: list[int], move: float) -> bool:
    """Whether the typical one of ``rows`` (their median) moved the same way by at least half of ``move`` (log
    units): a change of a key moves its parts alike; a hiccup moves one part, and the median not at all."""
    d = np.log1p(j.rel[rows])
    ok = np.isfinite(d)
    if ok.sum() < 2:
        return False
    # (the typical part as a strict majority of them sees it: the lower median in the move's direction. Of two
    # parts, both must move; the plain median of two is their mean, which one hiccuped part moves by half)
    ranked = np.sort(d[ok] * (1 if move >= 0 else -1))
    mid = float(ranked[(len(ranked) - 1) // 2]) * (1 if move >= 0 else -1)
    # (and beyond what a median of so many noisy parts moves by itself: 1.2533 sigma / sqrt n)
    noise = 1.2533 * float(np.median(j.sigma[rows][ok])) / math.sqrt(int(ok.sum()))
    return mid * move > 0 and abs(mid) >= 0.5 * abs(move) and abs(mid) >= CORROBORATE * noise


def _pair_of(pair: str, dim: str, key: str) -> bool:
    b, _, c = pair.partition(" / ")
    return b == key if dim == "block" else c == key


def share(c: dict[str, Any]) -> float:
    """A contributor's move as a log share of its baseline (a count, which may start at none, as count + 1)."""
    now, before = c["value_us"], c["value_us"] - c["delta_us"]
    if before > 0 and now > 0:
        return math.log(now / before)
    return math.log((now + 1) / (before + 1)) if now >= 0 and before >= 0 else 0.0
