"""What ingest notices about a capture and stores as the run's warnings: a file name whose time is no time or lies in
the future, measurements that cannot be right (negative durations, FW ends before starts, kernels over a second),
cells that are not numbers, export that cannot give the bytes back, at most :data:`MAX_WARNINGS` a run.

Some of them say the capture is not a whole measurement: a section that never closed, a row cut short, a last replay
with fewer ops than the others, device ops without durations, negative or absurd durations. Those are stored with
``invalid`` set (:func:`is_invalid`): the gate exits 4 on such a night and every history command leaves it out.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
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


# How far a capture time may lie after the moment the file is ingested (clocks of different machines, time zones)
FUTURE_SLACK = timedelta(days=1)


def future_capture(captured: datetime | None, now: datetime) -> str | None:
    """Why a capture time in the file name cannot be right because it lies in the future, when it does: such a
    run would be every history's newest night for good (a real night after it never judged)."""
    if captured is not None and captured > now + FUTURE_SLACK:
        return (f"the file name's capture time {captured:%Y-%m-%d %H:%M} is after the time it was ingested "
                f"({now:%Y-%m-%d %H:%M}): the run takes the place of the night it was ingested on (rename the file to "
                "fix it)")
    return None


def captured_at_problem(file_name: str) -> str | None:
    """Why a capture time in the file name (``_2026_02_30_...``) is no time, when it is none."""
    m = _CAPTURED.search(file_name)
    if m and captured_at(file_name) is None:
        return (f"the file name's capture time {m.group(0).strip('_')} is not a real date and time; the run is "
                "placed as the night it was ingested on (rename the file to fix it)")
    return None


Warning = tuple[int | None, str | None, str]  # (row, column, what), as stored in run_warning

# The warnings that make a capture invalid, by what they say (the sentences of the reader, the attribution and the
# checks below; revision 0018 marked the stored ones by the same words). A custom section left open is no crash:
# people's own markers are often unbalanced ("OftNet module" .. "OftNet finished"); eager or trace left open is.
_INVALID = re.compile(r"section '(?:eager|trace)'.* never closed|padded with empty cells|negative kernel durations|"
                      r"negative FW durations|cut short|hold different numbers of ops|have no kernel duration|"
                      r"kernel durations over an hour")


def is_invalid(message: str) -> bool:
    """Whether a warning says the capture is no whole measurement (see the module docstring)."""
    return bool(_INVALID.search(message))


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
    out += incomplete(conn, run_id)
    if (bad_time := captured_at_problem(shown(path.name))) and "captured_at" not in meta:
        out.append((None, None, bad_time))
    now = datetime.now(UTC).replace(tzinfo=None)
    if "captured_at" not in meta and (ahead := future_capture(captured_at(shown(path.name)), now)):
        out.append((None, None, ahead))
    if warnings is not None:
        out = list(warnings)
    if len(out) > MAX_WARNINGS:  # a damaged file can warn on every row: keep the first ones
        extra = len(out) - MAX_WARNINGS
        out = out[:MAX_WARNINGS] + [(None, None, f"{extra} more warning(s) not stored; the first {MAX_WARNINGS} are")]
    if out:
        conn.execute(t.run_warning.insert(), [{"run_id": run_id, "row_no": r, "column_name": c, "message": m,
                                               "invalid": is_invalid(m)} for r, c, m in out])
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
    ("kernel_ns > 3.6e12", "DEVICE KERNEL DURATION [ns]", "kernel durations over an hour (not a measurement: the night "
     "is an invalid capture)", lambda c: c["kernel_ns"] > 3.6e12),
    ("kernel_ns > 1e9 AND kernel_ns <= 3.6e12", "DEVICE KERNEL DURATION [ns]", "kernel durations over a second",
     lambda c: (c["kernel_ns"] > 1e9) & (c["kernel_ns"] <= 3.6e12)),
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


def incomplete(conn: Connection, run_id: int) -> list[Warning]:
    """Warnings for a capture whose file shows it is incomplete in a way no single row does: a traced section whose
    last replay has fewer ops than the others (cut short), replays that hold different numbers of ops, device ops
    without a kernel duration in a run whose other device ops have one. (A trace that closes with fewer replays than
    usual is whole: each replay is judged per iteration.)"""
    out: list[Warning] = []
    per: dict[str, list[tuple[int, int]]] = {}
    for name, it, n in conn.execute(text(
            "SELECT s.name, o.iteration, COUNT(*) FROM op o JOIN section s ON s.id = o.section_id "
            "WHERE o.run_id = :r AND o.iteration IS NOT NULL GROUP BY s.name, o.iteration ORDER BY s.name, "
            "o.iteration"), {"r": run_id}):
        per.setdefault(name, []).append((int(it), int(n)))
    for name, counts in per.items():
        if len(counts) < 2:
            continue
        ns = [n for _, n in counts]
        most = max(ns)
        if ns[-1] < most and all(n == most for n in ns[:-1]):
            out.append((None, None, f"the last replay of section {name!r} (iteration {counts[-1][0]}) has {ns[-1]} "
                                    f"of the {most} ops of the others: the capture was cut short"))
        elif len(set(ns)) > 1:
            out.append((None, None, f"the replays of section {name!r} hold different numbers of ops "
                                    f"({', '.join(map(str, ns))}): a replay is incomplete"))
    lost, timed = conn.execute(text(
        "SELECT SUM(CASE WHEN kernel_ns IS NULL THEN 1 ELSE 0 END), SUM(CASE WHEN kernel_ns IS NOT NULL THEN 1 ELSE 0 "
        "END) FROM op WHERE run_id = :r AND device_id IS NOT NULL"), {"r": run_id}).one()
    if lost and timed:
        first = conn.execute(text("SELECT MIN(row_no) FROM op WHERE run_id = :r AND device_id IS NOT NULL AND "
                                  "kernel_ns IS NULL"), {"r": run_id}).scalar()
        out.append((first, "DEVICE KERNEL DURATION [ns]",
                    f"{lost} device op(s) have no kernel duration while {timed} do (first at row {first}): the device "
                    "profiler lost part of the capture"))
    return out
