"""Child processes that never outlive the command that started them.

A CI job that is cancelled sends SIGTERM, then SIGKILL, to the command it ran. A killed parent cannot stop its
children, and a child that waits on a pipe the parent held (a process pool's call queue: the child holds a writing
end of it too, so it never reads EOF) would wait forever, holding its memory. So every child the warehouse starts
calls :func:`die_with_parent` first: Linux's parent-death signal kills it the moment its parent goes, whatever
killed the parent, and a child whose parent was gone before it got there leaves at once.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _prctl_pdeathsig(sig: int) -> bool:
    """Ask the kernel for ``sig`` when our parent thread exits; False where that cannot be asked (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # (here: only children pay for it, not every one-line command that imports this module)
    import ctypes.util
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int, every_s: float = 0.5) -> None:
    """Elsewhere, a thread that looks for the parent every ``every_s`` and ends the process once it is gone."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(1)
    threading.Thread(target=watch, name="warehouse-parent-watch", daemon=True).start()


def die_with_parent(parent: int) -> None:
    """End this (child) process when ``parent``, the pid of the process that started it, ends: SIGKILL from the
    kernel on Linux (a child has no clean-up that matters: its parent's transaction is rolled back by the
    database, its scratch files are swept by the next command), a watching thread elsewhere."""
    if not _prctl_pdeathsig(signal.SIGKILL):
        _watch_parent(parent)
    if os.getppid() != parent:  # the parent went before the signal was asked for
        os._exit(1)


def pool_initializer(parent: int, then: Callable[[], None] | None = None) -> None:
    """A process pool's ``initializer``: :func:`die_with_parent`, then ``then()``."""
    die_with_parent(parent)
    if then is not None:
        then()


class Terminated(BaseException):
    """SIGTERM (a CI cancel, ``kill PID``) as an exception, so that ``finally`` blocks and context managers run:
    worker pools are stopped, scratch folders removed and the open transaction rolled back."""


@contextmanager
def terminate_as_exception() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread (outside the main thread, or when
    another handler is installed, nothing changes)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        yield
        return

    def raise_terminated(signum: int, frame: object) -> None:
        raise Terminated()
    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
