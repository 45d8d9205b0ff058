"""What ingest notices about a capture and stores as the run's warnings: a file name whose time is no time,
measurements that cannot be right (negative durations, FW ends before starts, kernels over a second), cells that are
not numbers, export that cannot give the bytes back, at most :data:`MAX_WARNINGS` a run."""
from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text

from warehouse.analysis.rollupcalc import OpCapture
from warehouse.capture.files import shown
from warehouse.store import schema as t

MAX_WARNINGS = 1000  # stored per run


_CAPTURED = re.compile(r"_(\d{4})_(\d{2})_(\d{2})_(\d{2})_(\d{2})_(\d{2})")


def captured_at(file_name: str) -> datetime | None:
    """The capture time tt-metal puts in the file name (``_YYYY_MM_DD_HH_MM_SS``), if any."""
    m = _CAPTURED.search(file_name)
    if not m:
        return None
    try:
        y, mo, d, h, mi, s = (int(g) for g in m.groups())
        return datetime(y, mo, d, h, mi, s)
    except ValueError:
        return None


def captured_at_problem(file_name: str) -> str | None:
    """Why a capture time in the file name (``_2026_02_30_...``) is no time, when it is none."""
    m = _CAPTURED.search(file_name)
    if m and captured_at(file_name) is None:
        return (f"the file name's capture time {m.group(0).strip('_')} is not a real date and time; the run is "
                "ordered by its ingest time instead (rename the file to fix it)")
    return None


Warning = tuple[int | None, str | None, str]  # (row, column, what), as stored in run_warning


def finish_warnings(conn: Connection, run_id: int, found: list[Warning], *, exact: bool,
                    capture: OpCapture | None, path: Path, meta: dict, warnings: list | None) -> list[Warning]:
    """Store the run's warnings: ``found`` (the reader's and the attribution's), export that is not exact,
    implausible measurements, a file name whose time is no time (or ``warnings``, which replace them all: a copied
    run keeps its own), at most MAX_WARNINGS. Returns what was stored."""
    out = list(found)
    if not exact:
        out.append((None, None, "export will give the same cells but not the same bytes (quoting, line ends that "
                                "differ from the first line's, a CR alone, or rows padded or skipped)"))
    out += implausible(conn, run_id, capture)
    if (bad_time := captured_at_problem(shown(path.name))) and "captured_at" not in meta:
        out.append((None, None, bad_time))
    if warnings is not None:
        out = list(warnings)
    if len(out) > MAX_WARNINGS:  # a damaged file can warn on every row: keep the first ones
        extra = len(out) - MAX_WARNINGS
        out = out[:MAX_WARNINGS] + [(None, None, f"{extra} more warning(s) not stored; the first {MAX_WARNINGS} are")]
    if out:
        conn.execute(t.run_warning.insert(), [{"run_id": run_id, "row_no": r, "column_name": c, "message": m}
                                              for r, c, m in out])
    return out


# Measurements that cannot be right, or that a sum would hide: (SQL condition, column, what it means), and the
# same condition over the columns ingest kept (NaN for NULL: every comparison with it is false, as in SQL).
_IMPLAUSIBLE: list[tuple[str, str, str, Callable[[dict], Any]]] = [
    ("kernel_ns < 0", "DEVICE KERNEL DURATION [ns]", "negative kernel durations (not a measurement: the night is an "
     "invalid capture)", lambda c: c["kernel_ns"] < 0),
    ("fw_ns < 0", "DEVICE FW DURATION [ns]", "negative FW durations (not a measurement: the night is an invalid "
     "capture)", lambda c: c["fw_ns"] < 0),
    ("op2op_ns < 0", "OP TO OP LATENCY [ns]", "negative op-to-op latencies (cycles from different sessions?)",
     lambda c: c["op2op_ns"] < 0),
    ("kernel_ns > 1e9", "DEVICE KERNEL DURATION [ns]", "kernel durations over a second",
     lambda c: c["kernel_ns"] > 1e9),
    ("kernel_ns > fw_ns AND fw_ns > 0", "DEVICE KERNEL DURATION [ns]", "kernel durations longer than the FW duration",
     lambda c: (c["kernel_ns"] > c["fw_ns"]) & (c["fw_ns"] > 0)),
    ("fw_end_cycle < fw_start_cycle AND fw_end_cycle > 0", "DEVICE FW END CYCLE", "FW end cycles before the start",
     lambda c: (c["fw_end_cycle"] < c["fw_start_cycle"]) & (c["fw_end_cycle"] > 0)),
    ("device_id < 0", "DEVICE ID", "a negative device id (counted in the all-devices figures, not as a device)",
     lambda c: c["device_id"] < 0),
]


def implausible(conn: Connection, run_id: int, captured: OpCapture | None = None
                ) -> list[tuple[int | None, str | None, str]]:
    """Run warnings for implausible measurements (counted, with the first row): they are stored and summed as
    the file says, but never silently. From the columns ingest kept (``captured``), else one pass of SQL."""
    cols = captured.columns() if captured is not None else None
    found: list[tuple[int, int | None]] = []
    if cols is not None:
        import numpy as np

        for _, _, _, hit in _IMPLAUSIBLE:
            rows = cols["row_no"][hit(cols)]
            found.append((len(rows), int(np.min(rows)) if len(rows) else None))
    else:  # one pass over the run's ops for all the conditions
        sums = ", ".join(f"SUM(CASE WHEN {cond} THEN 1 ELSE 0 END), MIN(CASE WHEN {cond} THEN row_no END)"
                         for cond, _, _, _ in _IMPLAUSIBLE)
        got = conn.execute(text(f"SELECT {sums} FROM op WHERE run_id = :r"), {"r": run_id}).one()
        found = [(got[2 * k] or 0, got[2 * k + 1]) for k in range(len(_IMPLAUSIBLE))]
    out: list[tuple[int | None, str | None, str]] = []
    for (n, first), (_, column, what, _) in zip(found, _IMPLAUSIBLE):
        if n:
            out.append((first, column, f"{n} op(s) with {what}; stored and summed as the file says "
                                       f"(first at row {first})"))
    return out
