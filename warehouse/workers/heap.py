"""Giving freed memory back to the system during a long ingest.

A big file's ingest makes and drops millions of small objects (rows, tuples, parsed columns). The C allocator
keeps the pages they were freed from for the next allocations, so a process's resident memory follows its peak,
not what it holds: on a 1,000,000-op capture a third of the writing process's memory was pages freed and kept.
:func:`trim_heap` asks glibc to return them (``malloc_trim``); elsewhere it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache
from typing import Any


@cache
def _libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:  # (no C library to load: not Linux)
        return None


def trim_heap() -> None:
    """Return the C heap's free pages to the system (glibc's ``malloc_trim``; a no-op without it)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
