"""Work done in a forked process while this one goes on: the second core of an ingest.

One mechanism forks every child (:class:`Child`): a pipe from the child, the child's collector kept off what it
shares with this process, the child dying with its parent and leaving without running any of the parent's
clean-up. On it: the file's reader during the stream (:class:`warehouse.capture.rowprep.RowSource`) and one result
computed aside (:class:`Aside`).

An ingest's stream uses both cores (:mod:`warehouse.capture.rowprep` reads in a worker), but its tail is serial: the
rollups, then the report parts. The report parts' heavy half is pure Python over what the report feed holds
(no database), so for a run small enough to keep its feed (:data:`warehouse.capture.plan.FEED_MAX_OPS`) a fork
computes it while this process builds the rollups, and hands the result back pickled through a pipe. A new
warehouse's schema is made in a fork too (:func:`warehouse.store.db.open_db`: the migrations' libraries stay out
of this process). Where forking is unsafe or impossible (no ``fork``; a process that runs threads, say a web app
calling the API: a forked child could wait forever on a lock another thread held) nothing is forked and the
caller computes in-process; a child that fails or dies is also answered by computing in-process, so the result
never depends on whether the fork happened.
"""
from __future__ import annotations

import os
import pickle
import signal
import struct
import threading
from typing import BinaryIO
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from warehouse.workers import collector
from warehouse.workers.children import die_with_parent

T = TypeVar("T")


def can_fork() -> bool:
    """Whether this process may fork a child that runs Python: it has ``fork`` and runs no other thread (a forked
    child of a threaded process, say a web app calling the API, can wait forever on a lock another thread held)."""
    return hasattr(os, "fork") and threading.active_count() == 1


class Child:
    """A forked child that runs ``target(out)``, ``out`` the writing end of a pipe whose reading end this process
    has as :attr:`pipe`. The child exits 0 when ``target`` returns, 1 when it raises; it never runs the parent's
    clean-up (atexit, buffered files, the database's connections) and dies with its parent. The objects the two
    share stay out of the child's collections (:func:`warehouse.workers.collector.in_child`); fork inside
    :func:`warehouse.workers.collector.paused` to keep them out of this process's too. Call :meth:`wait` or
    :meth:`stop` once."""

    def __init__(self, target: Callable[[BinaryIO], None], buffering: int = -1):
        r, w = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child
            code = 0
            try:
                collector.in_child()
                die_with_parent(parent)
                os.close(r)
                with os.fdopen(w, "wb", buffering=buffering) as out:
                    target(out)
            except BaseException:  # noqa: BLE001 - the parent sees the exit status (and what was written)
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        self.pid: int | None = pid
        self.pipe: BinaryIO = os.fdopen(r, "rb")
        self.exitcode: int | None = None  # (once waited for: the exit status, or minus the signal that ended it)

    def wait(self) -> int:
        """Wait for the child to end; its exit status (minus the signal's number when a signal ended it)."""
        if self.pid is not None:
            _, status = os.waitpid(self.pid, 0)
            self.pid = None
            self.exitcode = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
            self.pipe.close()
        assert self.exitcode is not None
        return self.exitcode

    def stop(self) -> None:
        """End the child now if it still runs (its pipe closed, then SIGKILL), and wait for it."""
        if self.pid is not None:
            self.pipe.close()
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.wait()

    @property
    def alive(self) -> bool:
        """Whether the child has not been waited for."""
        return self.pid is not None


_FRAME = struct.Struct("<q")  # each item's pickled length before it; -1 ends a stream that completed


def send_item(out: BinaryIO, item: Any) -> None:
    """Write one item to a child's pipe, pickled after its length (see :func:`recv_item`)."""
    data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_FRAME.pack(len(data)))
    out.write(data)


def send_end(out: BinaryIO) -> None:
    """Mark a stream of items complete (the reader tells it from a child that died between items)."""
    out.write(_FRAME.pack(-1))


class StreamEnded(Exception):
    """The pipe ended without :func:`send_end`: the child died (between items or in the middle of one)."""


_END = object()


def recv_item(pipe: BinaryIO) -> Any:
    """The next item :func:`send_item` wrote; ``_END`` after :func:`send_end`; :class:`StreamEnded` when the pipe
    ended without it."""
    head = pipe.read(_FRAME.size)
    if len(head) != _FRAME.size:
        raise StreamEnded
    (n,) = _FRAME.unpack(head)
    if n < 0:
        return _END
    data = pipe.read(n)
    if len(data) != n:
        raise StreamEnded
    return pickle.loads(data)


def ended(item: Any) -> bool:
    """Whether :func:`recv_item` read the end of a complete stream."""
    return item is _END


class Aside(Generic[T]):
    """``fn()`` computed in a forked child; :meth:`result` waits for it (None if it failed). Use as a context
    manager: leaving without :meth:`result` stops the child."""

    def __init__(self, fn: Callable[[], T]):
        self._child: Child | None = None
        if can_fork():
            def compute(out: BinaryIO) -> None:
                out.write(pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL))
            self._child = Child(compute)

    def result(self) -> T | None:
        """The child's result; None when nothing was forked or the child failed (compute it here then)."""
        child, self._child = self._child, None
        if child is None:
            return None
        chunks = []
        while block := child.pipe.read(1 << 20):
            chunks.append(block)
        if child.wait() != 0 or not chunks:
            return None
        value: Any = pickle.loads(b"".join(chunks))
        return value

    def close(self) -> None:
        """Stop the child if it still runs (an error before :meth:`result`)."""
        if self._child is not None:
            self._child.stop()
            self._child = None

    def __enter__(self) -> Aside[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
