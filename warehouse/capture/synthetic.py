"""Synthetic captures built from real ones, for benchmarks and tests: a large sectioned CSV, and nightly
series with injected slowdowns and noise."""
from __future__ import annotations

import csv
import random
from warehouse.registry.contract import EAGER, SECTION_ENDS, SECTIONS, TRACE
from datetime import datetime, timedelta
from pathlib import Path
from collections.abc import Callable, Iterator

KERNEL = "DEVICE KERNEL DURATION [ns]"


def _sections(rows: list[list[str]], name_i: int, type_i: int) -> tuple[list[list[str]], list[list[str]]]:
    """The rows inside ``eager`` .. ``eager_end`` and ``trace`` .. ``trace_end`` (signposts included)."""
    out: dict[str, list[list[str]]] = {EAGER: [], TRACE: []}
    cur = None
    for r in rows:
        if r[type_i] == "signpost" and r[name_i] in SECTIONS:
            cur = r[name_i]
            continue
        if r[type_i] == "signpost" and r[name_i] in SECTION_ENDS:
            cur = None
            continue
        if cur:
            out[cur].append(r)
    return out[EAGER], out[TRACE]


def scale_csv(src: Path, dst: Path, ops: int,
              mutate: Callable[[int, list[str], dict[str, int]], list[str]] | None = None) -> int:
    """Write ``dst``: the eager and trace sections of the sectioned CSV ``src`` repeated until the file holds
    about ``ops`` ops (half per section), signposts and attribution kept. ``mutate(i, row, index)`` may change
    each op row. Returns the number of op rows written."""
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    idx = {h: i for i, h in enumerate(header)}
    name_i, type_i = idx["OP CODE"] if "OP CODE" in idx else idx["OP NAME"], idx["OP TYPE"]
    eager, trace = _sections(body, name_i, type_i)
    per = sum(1 for r in eager if r[type_i] != "signpost") or 1
    reps = max(1, round(ops / 2 / per))

    def signpost(name: str) -> list[str]:
        r = [""] * len(header)
        r[name_i], r[type_i] = name, "signpost"
        return r

    written = 0
    with open(dst, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\r\n")
        w.writerow(header)
        for name, sec in ((EAGER, eager), (TRACE, trace)):
            w.writerow(signpost(name))
            for _ in range(reps):
                for r in sec:
                    if r[type_i] != "signpost":
                        if mutate is not None:
                            r = mutate(written, list(r), idx)
                        written += 1
                    w.writerow(r)
            w.writerow(signpost(name + "_end"))
    return written


def nightly_series(src: Path, folder: Path, nights: int, *, ops: int | None = None, noise: float = 0.02,
                   slow: dict[int, tuple[str, float]] | None = None, seed: int = 0) -> Iterator[Path]:
    """Write ``nights`` captures of ``src`` into ``folder`` (one a night, named with their capture time): each
    kernel duration jittered by +-``noise``, and on night ``n`` in ``slow`` every op whose op code contains
    ``slow[n][0]`` slowed by the factor ``slow[n][1]`` (from that night on)."""
    rng = random.Random(seed)
    slow = slow or {}
    active: list[tuple[str, float]] = []
    for n in range(nights):
        if n in slow:
            active.append(slow[n])

        def mutate(i: int, row: list[str], idx: dict[str, int]) -> list[str]:
            k = idx[KERNEL]
            if row[k]:
                v = float(row[k]) * (1 + rng.uniform(-noise, noise))
                for code, factor in active:
                    if code in row[idx.get("OP CODE", idx.get("OP NAME", 0))]:
                        v *= factor
                row[k] = str(int(v))
            return row
        when = datetime(2026, 1, 1, 2) + timedelta(days=n)
        dst = folder / f"ops_perf_results_{when:%Y_%m_%d_%H_%M_%S}.csv"
        scale_csv(src, dst, ops or 0, mutate)
        yield dst
