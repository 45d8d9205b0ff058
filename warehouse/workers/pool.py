"""A pool of worker processes for work that needs a clean process each (``warehouse ingest --jobs N``).

The other children of the warehouse are forked (:mod:`.fork`): they share this process's memory and are cheap to
start. A pool's workers are started with ``spawn`` instead: they open databases of their own, and a forked child
would inherit this process's SQLite file descriptors, whose closing releases this process's locks. Every worker
dies with this process (:func:`warehouse.workers.children.die_with_parent`: a CI cancel kills the command, never
its workers, which would otherwise wait forever on the pool's queue), and leaving the pool's block by an exception
(SIGTERM, Ctrl-C, a consumer that stopped early) kills the workers rather than waiting for their work.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool as BrokenProcessPool  # (what a dead worker raises)

from warehouse.workers.children import pool_initializer


@contextlib.contextmanager
def worker_pool(jobs: int) -> Iterator[ProcessPoolExecutor]:
    """``jobs`` spawned worker processes that die with this one; waited for when the block ends normally, killed
    when it ends by an exception."""
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=pool_initializer, initargs=(os.getpid(),))
    try:
        yield pool
    except BaseException:
        _kill(pool)
        raise
    else:
        pool.shutdown(wait=True)


def _kill(pool: ProcessPoolExecutor) -> None:
    """Kill a pool's workers and reap them (``shutdown`` alone waits for the running work)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        try:
            p.kill()
        except (OSError, ValueError):
            pass
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join(5)
