"""The process-wide tricks of an ingest hold in any nesting: the cycle collector paused and restored as it was
found, a forked child's collector kept off what it shares with its parent (and the parent's untouched), and a
pool's workers killed when its block ends by an exception."""
from __future__ import annotations

import gc
import os
import sys
import threading
import time

import numpy as np
import pytest

from warehouse.workers import collector, threads
from warehouse.workers.fork import Aside, Child, can_fork
from warehouse.workers.pool import worker_pool


def test_paused_restores_what_it_found_at_every_depth():
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # (the inner pause leaves the outer one's state)
    assert gc.isenabled()
    gc.disable()
    try:
        with collector.paused():
            pass
        assert not gc.isenabled()  # (a collector found off stays off)
    finally:
        gc.enable()


@pytest.mark.skipif(not can_fork(), reason="needs fork and a single thread")
def test_a_child_freezes_its_own_objects_and_never_the_parents():
    before = gc.get_freeze_count()

    def report(out):
        out.write(str(gc.get_freeze_count()).encode())
    child = Child(report)
    frozen_in_child = int(child.pipe.read() or b"0")
    assert child.wait() == 0
    assert frozen_in_child > 0  # (everything it inherited stays out of its collections)
    assert gc.get_freeze_count() == before  # (the parent's collector is as it was)


@pytest.mark.skipif(not can_fork(), reason="needs fork and a single thread")
def test_children_may_end_in_any_order_inside_one_pause():
    with collector.paused():
        with Aside(lambda: os.getpid()) as outer:
            with Aside(lambda: list(range(5))) as inner:
                items = inner.result()
            got = outer.result()
        assert items == [0, 1, 2, 3, 4] and got not in (None, os.getpid())
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == 0


def _sleep(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_pool_left_by_an_exception_kills_its_workers():
    pids: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        with worker_pool(2) as pool:
            pids = [pool.submit(_sleep, 0).result() for _ in range(2)]
            pool.submit(_sleep, 60)
            raise KeyboardInterrupt
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in pids):
        time.sleep(0.05)
    assert pids and not any(os.path.exists(f"/proc/{p}") for p in pids)


def test_a_pool_left_normally_waits_for_its_work():
    with worker_pool(1) as pool:
        job = pool.submit(_sleep, 0.2)
    assert job.done() and job.result() > 0


def test_rows_split_between_threads_give_the_answers_of_one_pass_and_leave_no_thread(monkeypatch):
    """Row-wise work on two cores is the one-pass answer in row order, and its threads are gone when it returns
    (the fork helper forks only a process of one thread)."""
    from warehouse.history.changepoints import prepare, prepare_many
    from warehouse.history.rowstats import row_medians

    monkeypatch.setattr(threads, "cores", lambda: 2)
    rng = np.random.default_rng(5)
    m = rng.normal(size=(41, 30))
    before = threading.active_count()
    got = threads.by_rows(lambda a, b: (a, b, m[a:b].sum(axis=1)), len(m), least=10)
    assert [(a, b) for a, b, _ in got] == [(0, 20), (20, 41)]
    assert np.array_equal(np.concatenate([x for *_, x in got]), m.sum(axis=1))
    assert threads.by_rows(lambda a, b: (a, b), 9, least=10) == [(0, 9)]
    assert threading.active_count() == before
    # the history's users of it: medians of a matrix, and series prepared together, split or not
    monkeypatch.setattr(threads, "LEAST_ROWS", 10)
    wide = rng.normal(size=(3000, 400))
    assert np.array_equal(row_medians(wide), np.median(wide, axis=1))
    series = [100 * np.exp(rng.normal(0, 0.01, 40)) * np.where(np.arange(40) >= 25 + i % 5, 1.05, 1.0)
              for i in range(60)]
    for x, p in zip(series, prepare_many(series, floor=1e-4)):
        want = prepare(x, floor=1e-4)
        assert np.array_equal(want.zc, p.zc) and want.bad == p.bad and want.split == p.split
        assert (want.sigma, want.best_z) == (got_z := (p.sigma, p.best_z)), got_z
    assert threading.active_count() == before


@pytest.mark.parametrize("cores", [1, 2])
def test_two_calls_together_give_both_answers_and_leave_no_thread(monkeypatch, cores):
    """Two calls at once (the history's pairs' levels beside the read of its other series): each call's answer in
    the order given, the second in a thread of its own on two cores, a call's error raised, no thread left."""
    monkeypatch.setattr(threads, "cores", lambda: cores)
    before = threading.active_count()
    seen: list[str] = []
    main = threading.current_thread().name
    first, second = threads.together(lambda: threading.current_thread().name,
                                     lambda: threading.current_thread().name)
    assert first == main and (second == main) == (cores == 1)
    a, b = threads.together(lambda: seen.append("a") or 1, lambda: seen.append("b") or "two")
    assert (a, b) == (1, "two") and sorted(seen) == ["a", "b"]
    with pytest.raises(ZeroDivisionError):
        threads.together(lambda: 1, lambda: 1 // 0)
    assert threading.active_count() == before
