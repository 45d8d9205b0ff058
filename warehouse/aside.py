"""Work done in a forked process while this one goes on: the second core at the end of an ingest.

An ingest's stream uses both cores (:mod:`warehouse.rowprep` reads in a worker), but its tail is serial: the
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
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

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
        pid = os.fork()
        if pid == 0:  # the child: compute, send, and leave without running any of the parent's clean-up
            code = 0
            try:
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
