"""Python's cycle collector during ingest: paused while a file streams, and kept off what a forked child shares.

Both are process-wide switches. Each is scoped so that nothing has to count its nesting: :func:`paused` restores
the state it found (an inner pause inside an outer one changes nothing), and a forked child freezes its own copy
of the objects (:func:`in_child`), which no other process sees and which ends with the child.
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The cycle collector off inside (as it was, after): ingest's stream makes and drops millions of tuples and
    lists, none in a cycle, and the collector's passes over them cost a twentieth of a 100k-op ingest's CPU. (The
    memory of the few cycles the database layers may leave is freed by the next collection after it.) Children
    are forked inside it: a collection in this process would write to every object it holds and so copy, page by
    page, what a fork shares."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def in_child() -> None:
    """Called first in a forked child: the objects it shares with its parent stay out of its own collections for
    its whole life (a collection would write to every one of them and copy, page by page, what the fork shares,
    about 8 MB)."""
    gc.freeze()
