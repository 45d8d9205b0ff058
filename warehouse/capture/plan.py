"""How one file goes in, decided once from its scan and passed down: every size cut-off of ingest in one place.

A capture's size decides four things, each with its own reason:

- **worker** - whether the parse runs in a forked worker process on the other core. Decided from the file's size
  before anything is read (the worker itself scans the file, so this one decision cannot wait for the scan).
- **columnar** - whether pyarrow's columnar reader parses it (plain files of a few MiB to :data:`BIG_ROWS` rows) or
  the line reader does (small files, where pyarrow's import costs more than it saves; odd files; big ones).
- **big** - a file past :data:`BIG_ROWS` rows holds its memory flat: the line reader (pyarrow's buffers are larger),
  freed heap given back as it streams, and no per-op state kept for the run's end (the report's section scans,
  the rollups' keys and inputs are read back from the database there instead).
- **what the run's end keeps in memory** - below big, each end step keeps per-op state only while its bytes an op
  times the ops fit the ingest's memory budget: the report's section scans (~60 bytes an op) up to
  :data:`FEED_MAX_OPS`, the rollups' by-id inputs (96 bytes an op) up to :data:`CAPTURE_MAX_OPS`. The rollups,
  made once the run's op count is exact, are computed in numpy up to :data:`NUMPY_MAX_OPS` ops (beyond, by SQL
  alone: numpy's arrays grow with the run).

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
# Files of this many bytes or more are read by the columnar path (warehouse.capture.arrowprep); None: never. A whole
# ingest of a realistic 100k-op capture: 3.5 s against 4.0 s by lines (the writer waits less for its batches);
# smaller files gain less than pyarrow's import costs (~65 ms). Tests hold the two paths to the same batches on
# every corpus file.
COLUMNAR_MIN_BYTES: int | None = 4 << 20
# Past this many rows a file is big: the process that writes is the slower half whichever way the file is read (a
# 1,000,000-op capture's stream: 15 s either way), and the line path's reader holds 50 MiB where pyarrow's held
# 110-130 MiB (its libraries and buffers).
BIG_ROWS = 300_000
FEED_MAX_OPS = 150_000  # the report's section scans kept while the ops stream (~60 bytes an op); beyond: read back
CAPTURE_MAX_OPS = 200_000  # the rollups' by-id inputs kept (96 bytes an op); beyond, the by-id SQL reads the ops back
NUMPY_MAX_OPS = 400_000  # rollups computed in numpy (arrays grow with the run); beyond, by SQL alone
ASIDE_ROWS = 10_000  # by-id rollup rows from which their batches are made in a forked process (fewer: not worth one)


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
