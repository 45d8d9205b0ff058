"""A run as a timeline: Chrome trace-event JSON, which the Perfetto UI (ui.perfetto.dev) and ``chrome://tracing``
open (``warehouse export RUN --format perfetto``).

One process per device (per rank and device on a multi-host capture); on it, a track of sections, a track of
blocks, and the ops: each op a complete ("X") slice from its FW start to its FW end cycle, in microseconds at the
run's chip frequency, counted from the run's first FW start; ops that overlap on a device (more than one command
queue) go on a further lane. Signposts are instant events at the FW start of the op that follows them. Each op
carries its op code, block, layer, cores, fidelity, kernel and FW ns and its CSV row as args. Ops without FW
cycles (host ops) are left out, and counted in the metadata.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import IO, Any

from sqlalchemy import Connection, text

OPS_SQL = """
SELECT o.row_no, o.device_id, o.fw_start_cycle, o.fw_end_cycle, o.kernel_ns, o.fw_ns, o.cores,
       c.name AS op_code, p.block, p.layer, s.name AS section
FROM op o JOIN op_code c ON c.id = o.op_code_id
LEFT JOIN place p ON p.id = COALESCE(o.hist_place_id, o.place_id)
LEFT JOIN section s ON s.id = o.section_id
WHERE o.run_id = :r AND o.fw_start_cycle IS NOT NULL AND o.fw_end_cycle IS NOT NULL
ORDER BY o.device_id, o.fw_start_cycle, o.row_no
"""


def write_trace(conn: Connection, run_id: int | list[int], out: IO[bytes]) -> int:
    """Write run ``run_id``'s timeline to ``out``; the number of op slices written. Several runs (the ranks of a
    multi-host capture, in rank order): one process per rank and device (``rank 1 device 2``), each rank's time
    counted from its own first FW start (hosts' cycle counters are not one clock)."""
    runs = [run_id] if isinstance(run_id, int) else list(run_id)
    events: list[dict[str, Any]] = []
    heads, slices = [], 0
    for rank, rid in enumerate(runs):
        evs, head = _run_events(conn, rid, rank if len(runs) > 1 else None)
        events += evs
        heads.append(head)
        slices += head["ops"]
    # (metadata first, then each track's events in time order: readers draw a track as it comes)
    events.sort(key=lambda e: (e["ph"] != "M", e["pid"], e.get("tid", -1), e.get("ts", 0.0)))
    first = heads[0]
    other: dict[str, Any] = {
        "run": runs[0], "file": first["file"], "label": first["label"], "freq_mhz": first["freq_mhz"],
        "ops_without_fw_cycles": sum(h["skipped"] for h in heads),
        "time": "microseconds from the run's first FW start" + (" (each rank's own)" if len(runs) > 1 else "")}
    if len(runs) > 1:
        other["ranks"] = [{"rank": k, "run": r, "file": h["file"], "freq_mhz": h["freq_mhz"]}
                          for k, (r, h) in enumerate(zip(runs, heads))]
    doc_head = {"displayTimeUnit": "ns", "otherData": other}
    out.write(b'{"traceEvents": [\n')
    for i, e in enumerate(events):
        out.write((json.dumps(e, allow_nan=False) + (",\n" if i < len(events) - 1 else "\n")).encode())
    out.write(b"], ")
    out.write(json.dumps(doc_head, allow_nan=False)[1:].encode())
    out.write(b"\n")
    return slices


def _run_events(conn: Connection, run_id: int, rank: int | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One run's trace events (``rank``: its processes named and numbered apart) and what the head says of it."""
    run = conn.execute(text("SELECT freq_mhz, file_name, label FROM run WHERE id = :r"), {"r": run_id}).one()
    freq = float(run.freq_mhz) if run.freq_mhz and math.isfinite(run.freq_mhz) and run.freq_mhz > 0 else 1000.0
    ops = [r._mapping for r in conn.execute(text(OPS_SQL), {"r": run_id})]
    skipped = conn.execute(text("SELECT COUNT(*) FROM op WHERE run_id = :r AND (fw_start_cycle IS NULL OR "
                                "fw_end_cycle IS NULL)"), {"r": run_id}).scalar_one()
    fidelity = _fidelity(conn, run_id)
    signposts = list(conn.execute(text("SELECT row_no, name FROM signpost WHERE run_id = :r ORDER BY row_no"),
                                  {"r": run_id}))
    t0 = min((o["fw_start_cycle"] for o in ops), default=0)

    def us(cycles: float) -> float:
        return round((cycles - t0) / freq, 3)  # (cycles / MHz: microseconds)
    events = list(_events(ops, fidelity, signposts, us, rank))
    return events, {"file": run.file_name, "label": run.label, "freq_mhz": freq, "skipped": int(skipped),
                    "ops": len(ops)}


def _fidelity(conn: Connection, run_id: int) -> dict[int, str]:
    """Each op's math fidelity by CSV row, where the run has the column (read through csv_cell)."""
    try:
        rows = conn.execute(text("SELECT row_no, value FROM csv_cell WHERE run_id = :r AND column_name = "
                                 "'MATH FIDELITY'"), {"r": run_id})
        return {int(r.row_no): str(r.value) for r in rows if r.value}
    except Exception:  # (a warehouse without the cell view's functions: no fidelity, still a timeline)
        return {}


def _events(ops: list[Any], fidelity: dict[int, str], signposts: list[Any], us: Any, rank: int | None
            ) -> Iterator[dict[str, Any]]:
    """The trace events, per device (of ``rank``, on a multi-host capture): names, then sections, blocks, ops
    (lanes), signposts."""
    by_dev: dict[int, list[Any]] = {}
    for o in ops:
        by_dev.setdefault(int(o["device_id"] if o["device_id"] is not None else -1), []).append(o)
    for dev, mine in sorted(by_dev.items()):
        pid = (dev if dev >= 0 else 10_000) + (rank or 0) * 100_000
        name = f"device {dev}" if dev >= 0 else "no device"
        yield {"name": "process_name", "ph": "M", "pid": pid,
               "args": {"name": name if rank is None else f"rank {rank} {name}"}}
        yield {"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}}
        for tid, name in ((0, "sections"), (1, "blocks")):
            yield {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}
        for tid, key in ((0, "section"), (1, "block")):
            yield from _spans(mine, key, pid, tid, us)
        lanes: list[float] = []  # each lane's end (us)
        named: set[int] = set()
        for o in mine:
            ts, end = us(o["fw_start_cycle"]), us(max(o["fw_end_cycle"], o["fw_start_cycle"]))
            lane = next((k for k, e in enumerate(lanes) if e <= ts), None)
            if lane is None:
                lanes.append(end)
                lane = len(lanes) - 1
            else:
                lanes[lane] = end
            tid = 2 + lane
            if tid not in named:
                named.add(tid)
                yield {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                       "args": {"name": "ops" if lane == 0 else f"ops (lane {lane + 1})"}}
            args = {"op_code": o["op_code"], "block": o["block"] or None, "layer": o["layer"] or None,
                    "section": o["section"], "cores": o["cores"], "fidelity": fidelity.get(int(o["row_no"])),
                    "kernel_ns": _finite(o["kernel_ns"]), "fw_ns": _finite(o["fw_ns"]), "row": int(o["row_no"])}
            yield {"name": o["op_code"], "cat": "op", "ph": "X", "pid": pid, "tid": tid, "ts": ts,
                   "dur": round(end - ts, 3), "args": {k: v for k, v in args.items() if v is not None}}
        # signposts: at the FW start of the first op after them on this device
        rows = [int(o["row_no"]) for o in mine]
        starts = [us(o["fw_start_cycle"]) for o in mine]
        order = sorted(range(len(rows)), key=lambda i: rows[i])
        k = 0
        for sp in signposts:
            while k < len(order) and rows[order[k]] < sp.row_no:
                k += 1
            if k < len(order):
                yield {"name": sp.name, "cat": "signpost", "ph": "i", "s": "p", "pid": pid, "tid": 0,
                       "ts": starts[order[k]]}


def _spans(ops: list[Any], key: str, pid: int, tid: int, us: Any) -> Iterator[dict[str, Any]]:
    """Enclosing slices: each stretch of consecutive ops (by start) that share ``key``, first start to last end
    (cut at the next stretch's start: slices on one track never overlap)."""
    spans: list[list[Any]] = []  # [name, start, end]
    for o in ops:
        k = o[key] or None
        s, e = us(o["fw_start_cycle"]), us(max(o["fw_end_cycle"], o["fw_start_cycle"]))
        if not spans or spans[-1][0] != k:
            spans.append([k, s, e])
        else:
            spans[-1][2] = max(spans[-1][2], e)
    for i, (name, start, end) in enumerate(spans):
        if name is None:
            continue
        if i + 1 < len(spans):
            end = min(end, spans[i + 1][1])
        yield {"name": name, "cat": key, "ph": "X", "pid": pid, "tid": tid, "ts": start,
               "dur": round(max(end - start, 0.0), 3)}


def _finite(v: Any) -> float | None:
    return float(v) if v is not None and math.isfinite(float(v)) else None
