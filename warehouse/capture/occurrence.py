"""Each op's ``occurrence``: how many ops before it in its run share its section name, (block, layer) place and op
code (the third ``Conv2d`` of a layer in ``trace`` is occurrence 2, every night). Counted a batch at a time, by
numpy, in a table of 16 bytes a key: a million-op capture has some 400,000 keys, which a dict of tuples held in
57 MiB of its ingest's memory."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_PLACE_SHIFT = 24  # key = (place id << 24) | (op code id << 2) | section: op code ids stay under 2**22
_CODE_SHIFT = 2


class Occurrences:
    """The running count of each (section, place, op code) key of one run."""

    def __init__(self) -> None:
        self.keys = np.zeros(0, dtype=np.int64)  # sorted
        self.counts = np.zeros(0, dtype=np.int32)  # (a run has fewer than 2**31 ops)

    @staticmethod
    def key(section: Sequence[int], place: Sequence[int | None], code: Sequence[int]) -> np.ndarray:
        """The keys of ops given as columns: a section index (0: none), place id (None: no block or layer) and
        op code id."""
        p = np.array([0 if x is None else x for x in place], dtype=np.int64)
        c = np.array(code, dtype=np.int64)
        if len(c) and (int(c.max()) >= 1 << (_PLACE_SHIFT - _CODE_SHIFT) or int(p.min()) < 0):
            raise ValueError("op code id or place id out of the occurrence key's range")
        return (p << _PLACE_SHIFT) | (c << _CODE_SHIFT) | np.array(section, dtype=np.int64)

    def take(self, keys: np.ndarray) -> list[int]:
        """The occurrence of each of a batch's ops (``keys`` in file order), counting them."""
        n = len(keys)
        if not n:
            return []
        order = np.argsort(keys, kind="stable")  # (equal keys keep file order: the first is the lowest)
        sk = keys[order]
        first = np.ones(n, dtype=bool)
        first[1:] = sk[1:] != sk[:-1]
        starts = np.flatnonzero(first)
        sizes = np.diff(np.append(starts, n))
        rank = np.arange(n) - np.repeat(starts, sizes)
        uniq = sk[starts]
        at = np.searchsorted(self.keys, uniq)
        known = at < len(self.keys)
        known[known] = self.keys[at[known]] == uniq[known]
        base = np.zeros(len(uniq), dtype=np.int32)
        base[known] = self.counts[at[known]]
        occ = np.empty(n, dtype=np.int64)
        occ[order] = np.repeat(base, sizes) + rank
        self.counts[at[known]] += sizes[known].astype(np.int32)
        new = ~known
        if new.any():  # (the new keys go in at their places: the table stays sorted)
            self.keys = np.insert(self.keys, at[new], uniq[new])
            self.counts = np.insert(self.counts, at[new], sizes[new].astype(np.int32))
        return occ.tolist()
