"""The trace-to-eager alignment of the history attribution: right on drifts, linear on long repetitive traces."""
from __future__ import annotations

import random

from warehouse.history import HistoryTracker, align


def test_align_handles_missing_extra_and_replaced_ops():
    a = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert align(a, a) == {i: i for i in range(9)}
    b = [1, 2, 4, 5, 6, 7, 8, 9]  # 3 missing
    assert align(a, b) == {0: 0, 1: 1, 2: 3, 3: 4, 4: 5, 5: 6, 6: 7, 7: 8}
    c = [1, 2, 3, 99, 4, 5, 6, 7, 8, 9]  # one extra op
    m = align(a, c)
    assert 3 not in m and m[4] == 3 and m[9] == 8
    d = [1, 2, 3, 77, 5, 6, 7, 8, 9]  # one op replaced
    m = align(a, d)
    assert 3 not in m and m[4] == 4 and len(m) == 8


def test_align_is_fast_on_long_repetitive_sequences():
    """A 50,000-op trace that repeats a 1,570-op pattern with one op missing per repeat (what made difflib take
    330 s): every op that has a partner is matched. (Speed is measured in scripts/bench.py, not here.)"""
    rng = random.Random(3)
    pattern = [rng.randrange(40) for _ in range(1570)]
    a = pattern * 32
    b = []
    for r in range(32):
        p = list(pattern)
        del p[rng.randrange(len(p))]
        b += p
    m = align(a, b)
    assert len(m) >= len(b) - 64  # a handful of ops near each drift may stay unmatched
    assert all(a[i] == b[j] for j, i in m.items())
    assert list(m.values()) == sorted(m.values())  # order kept


def test_tracker_replays_and_mismatch():
    t = HistoryTracker()
    for code, blk in [(1, "A"), (2, "A"), (3, "B")]:
        t.eager_op(code, blk, None)
    # three replays by session id; the second misses op 2
    seq = [(1, "1"), (2, "1"), (3, "1"), (1, "2"), (3, "2"), (1, "3"), (2, "3"), (3, "3")]
    got = [t.trace_op(row, code, rep, None, None, pos) for pos, (row, (code, rep)) in enumerate(
        zip(range(100, 108), seq))]
    assert [g.iteration for g in got] == [0, 0, 0, 1, 1, 2, 2, 2]
    fixes = dict(t.finish())
    assert fixes[104].block == "B" and fixes[104].how == "aligned" and fixes[104].iter_pos == 1
    assert got[0].how == "position" and got[7].block == "B"
