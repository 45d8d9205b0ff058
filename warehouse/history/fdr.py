"""How clear a move must be to be a change: the false-discovery threshold over every series of a history, and the
evidence of the other sections for a step just under it.

Every series' best split gives a p-value (the best of its splits, Bonferroni over them); the Benjamini-Hochberg
rule at the false-discovery rate picks the smallest statistic that counts, never below ``min_sigmas``. Eager and
trace run the same ops separately, each with noise of its own: a step one section shows just under the threshold
(at most ``TWO_SECTIONS_MARGIN`` sigmas, never under what the Benjamini-Hochberg rule accepts) is kept when the
sections' statistics for that very night, combined as independent evidence (Stouffer: their sum over the square
root of their number, a section that moved the other way counting against), reach the threshold.
"""
from __future__ import annotations

import math
from warehouse.history.splits import MIN_AFTER, MIN_BEFORE

# how far under the threshold a step may be and still be judged with the other sections' evidence (a small block's
# +5 % on a farm of cards of four speeds, replayed 1 to 3 times a night: 5.5 sigmas in the trace, 3.5 in eager)
TWO_SECTIONS_MARGIN = 1.0


def p_value(z: float, n: int) -> float:
    """The p-value of the best of ``n`` splits reaching ``z`` (two-sided normal, Bonferroni over the splits)."""
    return min(1.0, max(1, n - MIN_BEFORE - MIN_AFTER + 1) * math.erfc(z / math.sqrt(2)))


def bh_cut(best: list[tuple[float, int]], fdr: float) -> float:
    """The smallest split statistic the Benjamini-Hochberg rule at ``fdr`` accepts over all series (``best``: each
    series' best statistic and its length); infinite when it accepts none."""
    # (by p, and among equal ones the larger z first: p-values that underflow to 0, which noise-free counts give,
    # must not make the cut the largest z of all)
    ps = sorted(((p_value(z, n), z) for z, n in best), key=lambda pz: (pz[0], -pz[1]))
    m = len(ps)
    cut = math.inf
    for i, (p, z) in enumerate(ps, 1):
        if p <= fdr * i / m:
            cut = z
    return cut


def thresholds(best: list[tuple[float, int]], fdr: float, floor: float) -> tuple[float, float]:
    """The statistic a change needs (the Benjamini-Hochberg cut, never below ``floor``), and the lower one a step
    needs to be judged with the other sections' evidence (``TWO_SECTIONS_MARGIN`` under it, never under the cut;
    infinite when the rule accepts none)."""
    if not best:
        return floor, math.inf
    cut = bh_cut(best, fdr)
    return max(floor, cut), max(floor - TWO_SECTIONS_MARGIN, cut)


def combined(zs: list[float]) -> float:
    """Independent statistics of one move combined (Stouffer): their sum over the square root of their number."""
    return sum(zs) / math.sqrt(len(zs)) if zs else 0.0
