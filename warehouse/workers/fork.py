"""Work done in a forked process while this one goes on: the second core at the end of an ingest.

An ingest's stream uses both cores (:mod:`warehouse.capture.rowprep` reads in a worker), but its tail is serial: the
rollups, then the report parts. The report parts' heavy half is pure Python over what the report feed holds
(no database), so a fork computes it while this process builds the rollups, and hands the result back pickled
through a pipe. Where forking is unsafe or impossible (no ``fork``; a process that runs threads, say a web app
calling the API: a forked child could wait forever on a lock another thread held) nothing is forked and the
caller computes in-process; a child that fails or dies is also answered by computing in-process, so the result
never depends on whether the fork happened.
"""
from __future__ import annotations

import gc
import os
import pickle
import signal
import struct
import threading
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any, Generic, TypeVar

from warehouse.workers.children import die_with_parent

T = TypeVar("T")


def can_fork() -> bool:
    """Whether this process may fork a child that runs Python: it has ``fork`` and runs no other thread (a forked
    child of a threaded process, say a web app calling the API, can wait forever on a lock another thread held)."""
    return hasattr(os, "fork") and threading.active_count() == 1


class Aside(Generic[T]):
    """``fn()`` computed in a forked child; :meth:`result` waits for it (None if it failed). Use as a context
    manager: leaving without :meth:`result` stops the child."""

    def __init__(self, fn: Callable[[], T]):
        self._pid: int | None = None
        self._fd: int | None = None
        if not can_fork():
            return
        r, w = os.pipe()
        # the objects we have stay out of collections meanwhile: a collection in either process would write to
        # every one of them and so copy, page by page, what the fork shares
        gc.freeze()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, and leave without running any of the parent's clean-up
            code = 0
            try:
                die_with_parent(parent)
                os.close(r)
                try:
                    data = pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException:  # noqa: BLE001 - the parent computes it again, and raises there if it must
                    data, code = b"", 1
                with os.fdopen(w, "wb") as f:
                    f.write(data)
            finally:
                os._exit(code)
        os.close(w)
        self._pid, self._fd = pid, r

    def result(self) -> T | None:
        """The child's result; None when nothing was forked or the child failed (compute it here then)."""
        if self._pid is None or self._fd is None:
            return None
        chunks = []
        with os.fdopen(self._fd, "rb") as f:
            self._fd = None
            while block := f.read(1 << 20):
                chunks.append(block)
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        gc.unfreeze()
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0 or not chunks:
            return None
        value: Any = pickle.loads(b"".join(chunks))
        return value

    def close(self) -> None:
        """Stop the child if it still runs (an error before :meth:`result`)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self._pid, 0)
            self._pid = None
            gc.unfreeze()

    def __enter__(self) -> Aside[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_FRAME = struct.Struct("<q")  # each item's pickled length before it; -1 ends a stream that completed


def streamed(make: Callable[[], Iterator[T]]) -> Iterator[T]:
    """The items of ``make()``, computed in a forked child and handed over one at a time as each is made, so
    that this process works on one item while the child makes the next. ``make`` must give the same items each
    time it is called: when nothing may be forked, or the child fails or dies after some items, this process
    calls it again and gives the rest itself (never an item twice, never one missing). Leaving the loop early
    stops the child."""
    if not can_fork():
        yield from make()
        return
    r, w = os.pipe()
    gc.freeze()  # (see Aside: collections would copy, page by page, what the fork shares)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: make, send, and leave without the parent's clean-up
        code = 0
        try:
            die_with_parent(parent)
            os.close(r)
            with os.fdopen(w, "wb", buffering=1 << 20) as f:
                try:
                    for made in make():
                        data = pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL)
                        f.write(_FRAME.pack(len(data)))
                        f.write(data)
                        f.flush()  # (the parent works on it while the next is made)
                    f.write(_FRAME.pack(-1))
                except BaseException:  # noqa: BLE001 - the parent makes the rest itself
                    code = 1
        finally:
            os._exit(code)
    os.close(w)
    given = 0
    complete = False
    try:
        with os.fdopen(r, "rb") as f:
            while len(head := f.read(_FRAME.size)) == _FRAME.size:
                (n,) = _FRAME.unpack(head)
                if n < 0:
                    complete = True
                    break
                data = f.read(n)
                if len(data) != n:
                    break  # (the child died in the middle of an item)
                item: T = pickle.loads(data)
                yield item
                given += 1
    finally:
        if not complete:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.waitpid(pid, 0)
        gc.unfreeze()
    if not complete:
        yield from islice(make(), given, None)
