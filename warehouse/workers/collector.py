"""Python's cycle collector during ingest, in nests that are safe: paused while a file streams, and frozen while a
forked child shares this process's memory.

Both are process-wide switches, and ingest's steps nest (a forked reader runs while the report's half is forked
aside): the innermost step to finish must not switch the collector back on, or thaw what an outer step froze.
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_frozen = 0  # freezes not yet thawed: the objects stay frozen until the last one is


def freeze() -> None:
    """Keep every object made so far out of collections until the matching :func:`thaw`: a forked child and this
    process share their pages, and a collection in either would write to every object and so copy, page by page,
    what the fork shares (about 8 MB)."""
    global _frozen
    gc.freeze()
    _frozen += 1


def thaw() -> None:
    """End one :func:`freeze`; the objects are collectable again when no freeze is left."""
    global _frozen
    _frozen = max(0, _frozen - 1)
    if _frozen == 0:
        gc.unfreeze()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The cycle collector off inside (as it was, after): ingest's stream makes and drops millions of tuples and
    lists, none in a cycle, and the collector's passes over them cost a twentieth of a 100k-op ingest's CPU. (The
    memory of the few cycles the database layers may leave is freed by the next collection after it.)"""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
