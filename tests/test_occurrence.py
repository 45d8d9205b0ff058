"""Ops' occurrences counted a batch at a time by numpy (warehouse.capture.occurrence) are the running counts a dict of
keys gives, whatever the batches' sizes and the keys' order."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warehouse.capture.occurrence import Occurrences


def _by_dict(ops: list[tuple[int, int | None, int]]) -> list[int]:
    seen: dict[tuple, int] = {}
    out = []
    for op in ops:
        out.append(seen.get(op, 0))
        seen[op] = out[-1] + 1
    return out


def _batched(ops: list[tuple[int, int | None, int]], cuts: list[int]) -> list[int]:
    occ = Occurrences()
    out: list[int] = []
    start = 0
    for end in [*sorted(cuts), len(ops)]:
        part = ops[start:end]
        if part:
            sec, place, code = zip(*part)
            out += occ.take(Occurrences.key(sec, place, code))
        start = max(start, end)
    return out


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 2), st.one_of(st.none(), st.integers(1, 6)), st.integers(1, 5)),
                max_size=80),
       st.lists(st.integers(0, 80), max_size=6))
def test_batched_counts_are_the_running_counts(ops, cuts):
    assert _batched(ops, cuts) == _by_dict(ops)


def test_many_keys_across_many_batches():
    rng = random.Random(5)
    ops = [(rng.randrange(3), rng.choice([None, *range(1, 3000)]), rng.randrange(1, 40)) for _ in range(20_000)]
    assert _batched(ops, list(range(0, 20_000, 1999))) == _by_dict(ops)


def test_ids_beyond_the_keys_range_are_refused():
    with pytest.raises(ValueError):
        Occurrences.key([0], [1], [1 << 22])
    Occurrences.key([2], [2 ** 38], [(1 << 22) - 1])  # (the largest fit)
