"""How one file goes in, decided once from its scan and passed down: every size cut-off of ingest in one place.

Every decision below holds one budget: an ingest's processes together stay under 150 MiB of memory (PSS summed,
every size from 10,000 to 1,000,000 ops: `scripts/bench.py --only-memory`), at the least CPU that allows. A
capture's size decides five things, each with its own reason:

- **worker** - whether the parse runs in a forked worker process on the other core. Decided from the file's size
  before anything is read (the worker itself scans the file, so this one decision cannot wait for the scan).
- **columnar** - whether pyarrow's columnar reader parses it (plain files of :data:`COLUMNAR_MIN_BYTES` or more,
  up to :data:`BIG_ROWS` rows) or the line reader does. Off by default: pyarrow's reader holds 25-95 MiB more.
- **big** - a file past :data:`BIG_ROWS` rows holds its memory flat: freed heap given back as it streams, and no
  per-op state kept for the run's end (the report's section scans, the rollups' keys and inputs are read back from
  the database there instead).
- **what the run's end keeps in memory** - below big, each end step keeps per-op state only while it fits the
  budget: the report's section scans (~60 bytes an op, and the fork that computes the report's parts from them
  while the rollups are written) up to :data:`FEED_MAX_OPS`, the rollups' by-id inputs (96 bytes an op) up to
  :data:`CAPTURE_MAX_OPS`; the report's parts read back in one pass up to :data:`REPORT_ONE_PASS_MAX_OPS`.
- **rollups in numpy or in SQL** - made once the run's op count is exact: in numpy up to :data:`NUMPY_MAX_OPS`
  ops, beyond by SQL alone (numpy's arrays grow with the run, SQLite's sorter spills to disk).

A wrong guess (the scan counts lines, which a quoted cell may span) costs time or memory, never a different run.
Tests set the module's cut-offs small to take a path on a small file; the plan reads them when it is made.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from warehouse.capture.csvfile import FileScan
from warehouse.workers.fork import can_fork

WORKER_MIN_BYTES = 4 << 20  # smaller files: a fork and a pipe cost more than the other core saves
# Files of this many bytes or more are read by the columnar path (warehouse.capture.arrowprep); None: never. Whole
# ingests of realistic captures (mkbig --unique), line path against columnar, wall / CPU / peak PSS of every
# process: dlv3 10k ops (16 MiB) 1.0 s / 1.4 s / 98 MiB against 1.1 s / 1.6 s / 191 MiB; 30k (49 MiB) 1.6 / 2.5 /
# 157 against 1.8 / 2.7 / 201; 60k (97 MiB) 2.9-3.0 s against 3.0-3.1 s; dlv3 100k (162 MiB) equal within noise;
# OFT 100k (149 MiB) 4.0-4.1 s against 3.8 s, 285 MiB against 310. pyarrow's reader holds 25-95 MiB more at every
# size (its libraries and its pool: 124 MiB of PSS at 100k against ~50) and gains under 10 % of the wall past
# ~100 MiB: no size fits the budget with it. Tests hold the two paths to the same batches on every corpus file.
COLUMNAR_MIN_BYTES: int | None = None
# Past this many rows a file is big: the process that writes is the slower half whichever way the file is read (a
# 1,000,000-op capture's stream: 15 s either way).
BIG_ROWS = 300_000
# The report's section scans kept while the ops stream, and their parts computed in a fork while the rollups are
# written; beyond, read back at the end in this process. Measured (line path, dlv3; wall / peak PSS): 20k ops
# 1.51 s / 131 MiB kept against 1.44 s / 100 MiB read back; 30k 1.79 / 156 against 2.03 / 106; 60k 2.89 / 227
# against 3.28 / 120; OFT 100k 4.23 / 286 against 4.54 / 130 (CPU 6.36 against 5.98 s).
FEED_MAX_OPS = 20_000
# A run of more ops has its report's parts read back in two passes (sums and tops, then the group tables: a
# million-op run's ~80,000 layers and its group tables are never held together) and its document compressed as it
# is made; up to this many, in one pass (OFT 100k, under cProfile: 1.30 s against 1.88 for two passes; the peak
# is not the report's at 149k ops: 162 MiB either way, 132 with the rollups' inputs read back).
REPORT_ONE_PASS_MAX_OPS = 150_000
# The rollups' by-id inputs kept as the ops stream (96 bytes an op, and numpy's groupings of them at the end);
# beyond, the by-id SQL reads the ops back. Peak PSS kept against read back: dlv3 108k ops (119k lines) 141 MiB;
# 149k ops 163 MiB against 132 (in 9.4 s against 11.2); 200k ops read back: 126 MiB.
CAPTURE_MAX_OPS = 120_000
# Rollups computed in numpy up to this many ops, beyond by SQL alone (no fork and no per-op state: in the measures
# below, the 300k tail's batches made in a fork peaked at 212 MiB, in this process at 171, by SQL alone at 121 in
# 21.3 s against 17.2 s; 200k in numpy at 126 MiB).
NUMPY_MAX_OPS = 200_000


def wants_worker(path: Path) -> bool:
    """Whether ``path`` is parsed in a worker process: a file of :data:`WORKER_MIN_BYTES` or more, where this
    platform can fork (a file that cannot be stat-ed is read in-process, and its reader names the problem)."""
    try:
        return os.stat(path).st_size >= WORKER_MIN_BYTES and can_fork()
    except OSError:
        return False


@dataclass(frozen=True)
class IngestPlan:
    """How one file goes in (see the module docstring): decided by :meth:`of` from its scan."""

    columnar: bool  # parsed by pyarrow's columnar reader (else by lines)
    big: bool  # memory held flat: heap trimmed while streaming, no per-op state kept for the run's end
    report_fed: bool  # the report's section scans made as the ops stream (else read back at the end)
    capture_ops: bool  # the rollups' by-id inputs kept as the ops stream (else read back)

    @classmethod
    def of(cls, scan: FileScan) -> IngestPlan:
        """The plan for a file of this scan (whether its parse runs in a worker is :func:`wants_worker`'s, made
        before the scan)."""
        rows = scan.lines
        big = rows > BIG_ROWS
        return cls(columnar=not big and _columnar(scan), big=big,
                   report_fed=not big and rows <= FEED_MAX_OPS, capture_ops=not big and rows <= CAPTURE_MAX_OPS)


def _columnar(scan: FileScan) -> bool:
    """A file of :data:`COLUMNAR_MIN_BYTES` or more as tt-metal writes it (no quote, NUL, blank line, CR alone or
    line end unlike the first), where pyarrow is installed."""
    if COLUMNAR_MIN_BYTES is None or scan.size < COLUMNAR_MIN_BYTES:
        return False
    if scan.quotes or scan.nuls or scan.bare_cr or scan.mixed_ends or scan.blank_line:
        return False
    try:
        import pyarrow.csv  # noqa: F401  (only whether it is there: the columnar reader imports it when it reads)
    except ImportError:
        return False
    return True
