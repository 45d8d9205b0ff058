"""`warehouse perf`: tt-perf-report's per-op table, from a stored run.

The static facts of each op (:mod:`warehouse.capture.perffacts`) were interned at ingest; this module adds what
depends on
the op's duration and on its neighbours, as tt-perf-report 1.4.1 does (``generate_perf_report``): rows sorted by
``HOST START TS``, an optional signpost window, devices merged (the slowest device's row per op; collectives get
the mean duration), the op-to-op gap kept only when both neighbours' durations are plausible, achieved DRAM GB/s
and TFLOPs against the architecture's peaks, and the Bound.

The per-row formulas exist twice, here for the command and in SQL for the ``op_perf`` view
(:func:`op_perf_view_sql`), side by side in this module; ``tests/test_perf.py`` holds them equal.
"""
from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import Connection, select

from warehouse.store import schema as t
from warehouse.errors import NotFound, UsageError
from warehouse.analysis.perfadvice import advice
from warehouse.capture.perffacts import (ARCHS, BOUND_PCT, COLLECTIVE, FIDELITIES, INVALID_GAP_NS, normalize_arch,
                                        sanitize)


# The CSV columns, in tt-perf-report's order (its --csv with --raw-op-codes).
COLUMNS = ["ID", "Total %", "Bound", "OP Code", "Device", "Device Time", "Op-to-Op Gap", "Cores", "DRAM", "DRAM %",
           "FLOPs", "FLOPs %", "Math Fidelity", "Output Datatype", "Input 0 Datatype", "Input 1 Datatype",
           "DRAM Sharded", "Input 0 Memory", "Inner Dim Block Size", "Output Subblock H", "Output Subblock W",
           "Global Call Count", "Sub Device ID", "Available Cores", "Op Category", "Bound Analysis", "Advice",
           "Raw OP Code"]


@dataclass
class _Row:
    """One row of the run as tt-perf-report's data frame holds it (only what the analysis reads)."""

    row_no: int
    host_ts: int | None
    signpost: bool
    op_type: str | None
    code: str
    device: int | None  # the DEVICE ID cell as a number (possibly negative)
    gcc: int | None
    kernel_ns: float | None
    gap_ns: float | None
    shape: dict | None  # the perf_shape row (None for signposts)
    span: tuple[float, float] | None = None  # FW start / end cycles (busy time), when the op has both
    part: int = 0  # which of the runs read together it comes from (their order: tt-perf-report's file index)


def invalid_duration(kernel_ns: float | None, gap_ns: float | None) -> bool:
    """tt-perf-report's implausible duration: missing or negative, or a large negative gap beside it."""
    if kernel_ns is None or kernel_ns < 0:
        return True
    return (gap_ns is not None and gap_ns < -INVALID_GAP_NS
            and abs(gap_ns) > max(kernel_ns * 0.5, INVALID_GAP_NS))


def _duration(r: _Row) -> float | None:
    return None if invalid_duration(r.kernel_ns, r.gap_ns) else r.kernel_ns


@dataclass
class Figures:
    """The timed figures of one op."""

    device_time_us: float | None = None
    cores: int | None = None
    dram_gbs: float | None = None
    dram_pct: float | None = None
    tflops: float | None = None
    flops_pct: float | None = None
    dram_bytes: float | None = None
    bound: str = ""
    invalid: bool = False


def figures(shape: dict, kernel_ns: float | None, gap_ns: float | None, arch: str) -> Figures:
    """Device time, achieved DRAM GB/s and TFLOPs, % of peak and Bound of an op (tt-perf-report: analyze_op,
    analyze_matmul, analyze_conv, add_derived_columns). The same formulas, in SQL: :func:`op_perf_view_sql`."""
    workers, sharded_cores, bandwidth, *peaks = ARCHS[arch]
    invalid = invalid_duration(kernel_ns, gap_ns)
    dur = None if invalid else kernel_ns
    f = Figures(device_time_us=dur / 1000 if dur is not None else None, cores=shape["cores"], invalid=invalid)
    dur_s = dur * 1e-9 if dur is not None and dur > 0 else None
    analysis = shape["analysis"]
    if analysis != "none":
        cores = sharded_cores if shape["dram_sharded"] and analysis == "full" else shape["cores"]
        f.cores = cores
        fid = shape["peak_fidelity"]
        peak = peaks[FIDELITIES.index(fid)] * 1e12 * cores if cores is not None and fid is not None else None
        flops = shape["flop_count"] / dur_s if dur_s and shape["flop_count"] is not None else None
        f.tflops = flops / 1e12 if flops is not None else None
        f.flops_pct = (flops / peak) * 100 if flops is not None and peak else None
        if analysis == "full" and dur_s is not None:
            f.dram_bytes = shape["dram_bytes"]
            if f.dram_bytes is not None and f.dram_bytes > 0:
                f.dram_gbs = (f.dram_bytes / dur_s) / 1e9
                f.dram_pct = (f.dram_gbs / bandwidth) * 100
        if analysis == "full" and f.dram_pct is not None and f.flops_pct is not None:
            f.bound = bound_of(f.dram_pct, f.flops_pct)
    if shape["is_host"]:
        f.bound, f.device_time_us = "HOST", None
    return f


def bound_of(dram_pct: float, flops_pct: float) -> str:
    """tt-perf-report's Bound of an op from its DRAM % and FLOPs %: each at or above ``BOUND_PCT`` bounds it."""
    dram_b, flop_b = dram_pct >= BOUND_PCT, flops_pct >= BOUND_PCT
    return "BOTH" if dram_b and flop_b else "DRAM" if dram_b else "FLOP" if flop_b else "SLOW"


@dataclass
class PerfTable:
    """The per-op table of a run, ready to render."""

    run_id: int  # the first run read (several: tt-perf-report given several CSVs, see :func:`perf_table`)
    arch: str
    worker_cores: int
    rows: list[dict] = field(default_factory=list)  # one dict per row, keyed by :data:`COLUMNS`
    device_ops: int = 0
    host_ops: int = 0
    signposts: int = 0
    merged: bool = False
    # per device: (busy wall us, the ops' spans summed, us): ops that run at once on sub-devices count once in
    # the first; tt-perf-report's totals are the second kind (its next release's Overlap column, issue #67)
    busy: dict[int, tuple[float, float]] = field(default_factory=dict)
    # the same per (device, sub-device id) of a partitioned grid (empty when no op names a sub-device)
    sub_busy: dict[tuple[int, str | None], tuple[float, float]] = field(default_factory=dict)
    run_ids: list[int] = field(default_factory=list)  # every run read, in order


def _load(conn: Connection, run_id: int) -> list[_Row]:
    o, c, s, sp = t.op.c, t.op_code.c, t.perf_shape, t.signpost.c
    shapes: dict[int, dict] = {}
    rows = []
    shape_ids: list[int | None] = []
    for q in conn.execute(select(o.row_no, o.host_start_ns, c.name, o.device_id, o.global_call_count,
                                 o.kernel_ns, o.op2op_ns, o.perf_shape_id, o.fw_start_cycle, o.fw_end_cycle)
                          .join_from(t.op, t.op_code, c.id == o.op_code_id).where(o.run_id == run_id)):
        span = (q[8], q[9]) if q[8] is not None and q[9] is not None and 0 < q[8] <= q[9] else None
        rows.append(_Row(q[0], q[1], False, None, q[2], q[3], q[4], q[5], q[6], None, span))
        shape_ids.append(q[7])
    id_list = list({i for i in shape_ids if i is not None})
    for k in range(0, len(id_list), 500):
        for m in conn.execute(select(s).where(s.c.id.in_(id_list[k:k + 500]))).mappings():
            shapes[m["id"]] = dict(m)
    for r, i in zip(rows, shape_ids):
        if i is None:
            raise NotFound(f"run {run_id} has no per-op facts for row {r.row_no}: run `warehouse db upgrade`")
        r.shape = shapes[i]
        r.op_type = r.shape["op_type"]
    for g in conn.execute(select(sp.row_no, sp.host_ts, sp.name).where(sp.run_id == run_id)):
        rows.append(_Row(g[0], g[1], True, "signpost", g[2], None, None, None, None, None))
    rows.sort(key=lambda r: r.row_no)
    return rows


def _in_section(conn: Connection, run_id: int, section: str, rows: list[_Row]) -> list[_Row]:
    """The rows inside every span of the section named ``section`` (eager, trace or a custom pair)."""
    sc = t.section.c
    spans = conn.execute(select(sc.start_row, sc.end_row).where(sc.run_id == run_id, sc.name == section)).all()
    if not spans:
        names = conn.execute(select(sc.name).where(sc.run_id == run_id).distinct()).scalars().all()
        raise UsageError(f"run {run_id} has no section {section!r}; its sections: {', '.join(sorted(names)) or 'none'}")
    return [r for r in rows if any(a < r.row_no and (b is None or r.row_no < b) for a, b in spans)]


def _by_host_start(rows: list[_Row]) -> list[_Row]:
    """The rows sorted by HOST START TS, missing ones last, as tt-perf-report sorts them (pandas
    ``sort_values``: numpy's quicksort over the column, int64, or float64 when a cell is missing): equal
    timestamps (trace replays keep their capture time) come in numpy's order, as there."""
    import numpy as np

    present = [i for i, r in enumerate(rows) if r.host_ts is not None]
    missing = [i for i, r in enumerate(rows) if r.host_ts is None]
    values = np.array([rows[i].host_ts for i in present], dtype=np.float64 if missing else np.int64)
    return [rows[present[j]] for j in values.argsort(kind="quicksort")] + [rows[i] for i in missing]


def _window(rows: list[_Row], start: str | None, end: str | None) -> list[_Row]:
    """tt-perf-report's signpost window (filter_by_signpost): the rows after the first ``start`` signpost and
    before the first ``end`` one (the second when both are the same name), by file position, signposts dropped."""
    signposts = [r for r in rows if r.signpost]
    out = rows
    for name, after in ((start, True), (end, False)):
        if not name:
            continue
        hits = [r.row_no for r in signposts if r.code == name]
        index = 1 if (not after and start == end) else 0
        if len(hits) <= index:
            names = sorted({r.code for r in signposts})
            shown = ", ".join(names[:8]) + (f" (and {len(names) - 8} more)" if len(names) > 8 else "")
            raise UsageError(f"signpost {name!r} not found" + (" twice" if index else "")
                             + f"; the run's signposts: {shown or 'none'}")
        at = hits[index]
        out = [r for r in out if (r.row_no > at if after else r.row_no < at) and not r.signpost]
    return out


def _device(r: _Row) -> int | None:
    """The row's usable device id (tt-perf-report's get_int: whole and not negative)."""
    return r.device if r.device is not None and r.device >= 0 else None


def _merge(rows: list[_Row]) -> list[_Row]:
    """tt-perf-report's device merge (merge_device_rows): the i-th op of every device is one row; the slowest
    device's row stands for it, a collective gets the mean duration; other rows stay as they are."""
    by_device: dict[int, deque[tuple[int, _Row]]] = defaultdict(deque)
    others: list[tuple[int, _Row]] = []
    for order, r in enumerate(rows):
        dev = _device(r)
        if r.op_type == "tt_dnn_device" and dev is not None:
            by_device[dev].append((order, r))
        else:
            others.append((order, r))
    devices = sorted(by_device)
    merged: list[tuple[int, _Row]] = []
    while devices and max(len(by_device[d]) for d in devices) > 0:
        blocks: list[tuple[int, _Row]] = []
        name = None
        for d in devices:
            if not by_device[d]:
                continue
            head = by_device[d][0][1].code
            if name is None:
                name = head
            elif head != name:
                continue
            blocks.append(by_device[d].popleft())
        if not blocks:
            break
        assert name is not None
        if any(k in name for k in COLLECTIVE):
            durations = [d for d in (_duration(b[1]) for b in blocks) if d is not None]
            base = replace(blocks[0][1], kernel_ns=sum(durations) / len(durations) if durations else None)
        else:
            base = max(blocks, key=lambda b: d if (d := _duration(b[1])) is not None else -1)[1]
        merged.append((min(b[0] for b in blocks), base))
    return [r for _, r in sorted(merged + others, key=lambda x: x[0])]


def parse_id_range(value: str) -> tuple[int | None, int | None]:
    """tt-perf-report's ``--id-range``: ``START-END``, ``START-`` or ``-END`` (commas allowed in the numbers)."""
    parts = value.split("-")
    try:
        if len(parts) != 2 or not any(p.strip() for p in parts):
            raise ValueError
        a, b = (int(p.replace(",", "")) if p.strip() else None for p in parts)
    except ValueError:
        raise UsageError(f"--id-range {value!r}: use START-END, START- or -END (row IDs, such as 5-10)") from None
    return a, b


def _arch_of(run_id: int, perf_arch: str | None, arch: str | None) -> str:
    if arch is not None:
        a = normalize_arch(arch)
        if a is None:
            raise UsageError(f"unknown architecture {arch!r}: use one of {', '.join(ARCHS)}")
        return a
    if perf_arch is None:
        raise NotFound(f"run {run_id} names an architecture tt-perf-report does not know: pass --arch "
                       f"(one of {', '.join(ARCHS)})")
    return perf_arch


def _device_count(rows: list[_Row]) -> int | None:
    """tt-perf-report's devices in one file: the largest usable DEVICE ID + 1 (None when no row names one)."""
    ids = [d for r in rows if (d := _device(r)) is not None]
    return max(ids) + 1 if ids else None


def _read_together(conn: Connection, run_ids: list[int], row_counts: list[int], section: str | None
                   ) -> list[_Row]:
    """The rows of the runs as tt-perf-report reads several CSVs (``merge_perf_traces``): concatenated in the
    order given, row IDs running on, and the usable device ids of the k-th moved up by k times the device count
    of the first run naming one; a run with another device count is refused, as tt-perf-report refuses it."""
    out: list[_Row] = []
    offset, per_run, first = 0, None, None
    for k, (run_id, count) in enumerate(zip(run_ids, row_counts)):
        rows = _load(conn, run_id)
        devices = _device_count(rows)
        if devices is not None and per_run is None:
            per_run, first = devices, run_id
        elif devices is not None and devices != per_run:
            raise UsageError(f"run {run_id} reports {devices} device(s) (max DEVICE ID {devices - 1}), expected "
                             f"{per_run} as run {first}: runs read together must have as many devices each")
        if section is not None:
            rows = _in_section(conn, run_id, section, rows)
        for r in rows:
            r.row_no += offset
            r.part = k
            if k and r.device is not None and r.device >= 0:  # (a negative id stays: no device, as there)
                r.device = r.device + k * (per_run or 0)
        out += rows
        offset += count
    return out


def perf_table(conn: Connection, run_id: int | list[int], *, merge: bool = True, section: str | None = None,
               start: str | None = None, end: str | None = None, arch: str | None = None,
               sort: bool = True, id_range: tuple[int | None, int | None] | None = None) -> PerfTable:
    """tt-perf-report's per-op table of a stored run: the whole run (signpost rows included, as with its
    ``--ignore-signposts``), or the rows of ``section``, or those between two signposts; ``id_range``: only the
    rows whose ID is in it (its ``--id-range``: the first one's op-to-op gap dropped, Total % of the rows kept).
    Several runs (the ranks of a multi-host capture: one file per host) are read as tt-perf-report reads their
    CSVs given together (:func:`_read_together`); the architecture is the first run's."""
    run_ids = [run_id] if isinstance(run_id, int) else list(run_id)
    r_ = t.run.c
    facts = {q[0]: q[1:] for q in conn.execute(select(r_.id, r_.perf_arch, r_.freq_mhz, r_.row_count)
                                                .where(r_.id.in_(run_ids)))}
    for i in run_ids:
        if i not in facts:
            raise NotFound(f"no run {i}; `warehouse runs` lists them")
    if len(set(run_ids)) < len(run_ids):
        raise UsageError("a run is named twice: name each rank's run once")
    a = _arch_of(run_ids[0], facts[run_ids[0]][0], arch)
    rows = _read_together(conn, run_ids, [facts[i][2] for i in run_ids], section)
    if sort:
        rows = _by_host_start(rows)
    rows = _window(rows, start, end)
    table = PerfTable(run_ids[0], a, ARCHS[a][0], run_ids=run_ids)
    for k, i in enumerate(run_ids):  # each run's cycles at its own clock
        mine = [r for r in rows if r.part == k]
        table.busy.update(busy_time(mine, facts[i][1]))
        table.sub_busy.update(_sub_device_busy(mine, facts[i][1]))
    table.busy = dict(sorted(table.busy.items(), key=lambda kv: _busy_order(kv[0])))
    table.sub_busy = dict(sorted(table.sub_busy.items(), key=lambda kv: _busy_order(kv[0])))
    budgets = [r.shape["available_cores"] for r in rows if r.shape and r.shape["available_cores"]]
    table.worker_cores = max(budgets) if budgets else ARCHS[a][0]
    devices = {r.device for r in rows if r.device is not None}
    if not (not merge and len(devices) > 1) and devices:
        rows = _merge(rows)
        table.merged = len(devices) > 1
    table.rows = _analyse(rows, a, table)
    if id_range is not None:
        lo, hi = id_range
        table.rows = [r for r in table.rows if (lo is None or r["ID"] >= lo) and (hi is None or r["ID"] <= hi)]
        if table.rows:
            table.rows[0]["Op-to-Op Gap"] = None
        _total_pct(table.rows)
    return table


def _device_id(r: _Row) -> Any:
    return int(r.device) if r.device is not None else None


def _device_and_sub_device(r: _Row) -> Any:
    return (int(r.device), r.shape["sub_device"] if r.shape else None) if r.device is not None else None


def _sub_device_busy(rows: list[_Row], freq_mhz: float) -> dict[Any, tuple[float, float]]:
    """:func:`busy_time` per device and sub-device, when any op names a sub-device (else none)."""
    if not any(r.shape and r.shape["sub_device"] is not None for r in rows):
        return {}
    return busy_time(rows, freq_mhz, _device_and_sub_device)


def _busy_order(key: Any) -> tuple[int, str]:
    # devices in number order (2 before 10); with a sub-device (text, or None), by device then sub-device
    return (key, "") if isinstance(key, int) else (key[0], str(key[1]))


def busy_time(rows: list[_Row], freq_mhz: float, key: Callable[[_Row], Any] = _device_id
              ) -> dict[Any, tuple[float, float]]:
    """Per device (or per ``key`` of an op: its device and sub-device), the wall time its ops (of ``rows``) kept
    it busy, from their FW start / end cycles at ``freq_mhz``: the union of their spans, and the spans summed
    (they differ by the time ops overlapped, as ops on disjoint sub-devices do)."""
    spans: dict[Any, list[tuple[float, float]]] = {}
    for r in rows:
        if r.span is not None and (k := key(r)) is not None:
            spans.setdefault(k, []).append(r.span)
    out = {}
    for dev, sp in sorted(spans.items(), key=lambda kv: _busy_order(kv[0])):
        sp.sort()
        union = 0.0
        start, end = sp[0]
        for a, b in sp[1:]:
            if a > end:  # (a gap: the busy stretch so far ends)
                union += end - start
                start, end = a, b
            else:
                end = max(end, b)
        union += end - start
        summed = sum(b - a for a, b in sp)
        out[dev] = (union / freq_mhz, summed / freq_mhz) if freq_mhz else (0.0, 0.0)
    return out


def _analyse(rows: list[_Row], arch: str, table: PerfTable) -> list[dict]:
    out: list[dict] = []
    prev_invalid: bool | None = None
    for r in rows:
        shape = r.shape or {}
        if r.signpost:
            out.append(_signpost_row(r, table.worker_cores))
            table.signposts += 1
            continue
        f = figures(shape, r.kernel_ns, r.gap_ns, arch)
        gap = None
        if (prev_invalid is not None and r.gap_ns is not None and r.gap_ns >= 0
                and not ((f.invalid or prev_invalid) and abs(r.gap_ns) > INVALID_GAP_NS)):
            gap = r.gap_ns / 1000
        prev_invalid = f.invalid
        dev = _device(r)
        out.append({
            "ID": r.row_no + 1, "Total %": None, "Bound": f.bound, "OP Code": shape["label"], "Device": dev,
            "Device Time": f.device_time_us, "Op-to-Op Gap": gap, "Cores": f.cores, "DRAM": f.dram_gbs,
            "DRAM %": f.dram_pct, "FLOPs": f.tflops, "FLOPs %": f.flops_pct, "Math Fidelity": shape["math_fidelity"],
            "Output Datatype": shape["out_dtype"], "Input 0 Datatype": shape["in0_dtype"],
            "Input 1 Datatype": shape["in1_dtype"], "DRAM Sharded": bool(shape["dram_sharded"]),
            "Input 0 Memory": shape["in0_memory"], "Inner Dim Block Size": shape["inner_block"],
            "Output Subblock H": shape["subblock_h"], "Output Subblock W": shape["subblock_w"],
            "Global Call Count": r.gcc, "Sub Device ID": shape["sub_device"],
            "Available Cores": shape["available_cores"] or table.worker_cores, "Op Category": shape["category"],
            "Bound Analysis": shape["analysis"], "Raw OP Code": r.code})
        out[-1]["Advice"] = advice(out[-1])
        if shape["is_host"]:
            table.host_ops += 1
        else:
            table.device_ops += 1
    _total_pct(out)
    return out


def _total_pct(out: list[dict]) -> None:
    """Each row's share of the rows' device time and op-to-op gaps together (tt-perf-report's Total %)."""
    total = sum(x["Device Time"] for x in out if x["Device Time"] is not None) \
        + sum(x["Op-to-Op Gap"] for x in out if x["Op-to-Op Gap"] is not None)
    for x in out:
        x["Total %"] = None
        if x["Device Time"] is None and x["Op-to-Op Gap"] is None:
            continue
        if total:
            x["Total %"] = ((x["Device Time"] or 0) + (x["Op-to-Op Gap"] or 0)) / total * 100


def _signpost_row(r: _Row, workers: int) -> dict:
    row = dict.fromkeys(COLUMNS)
    row.update({"ID": r.row_no + 1, "Bound": "", "OP Code": f"{sanitize(r.code)} (signpost)", "Math Fidelity": "",
                "DRAM Sharded": False, "Available Cores": workers, "Bound Analysis": "none", "Raw OP Code": r.code})
    row["Advice"] = advice(row)
    return row


# ---------------------------------------------------------------------------------------------------- rendering
# The terminal / Markdown table: tt-perf-report's visible columns, formatted as it formats them (thousands
# separators, units, 0 or 1 decimals). CSV and JSON keep every column and the numbers in full.
VISIBLE = [("ID", None, 0), ("Total %", "%", 1), ("Bound", None, None), ("OP Code", None, None),
           ("Device", None, 0), ("Device Time", "μs", 0), ("Op-to-Op Gap", "μs", 0), ("Cores", None, 0),
           ("DRAM", "GB/s", 0), ("DRAM %", "%", 1), ("FLOPs", "TFLOPs", 1), ("FLOPs %", "%", 1),
           ("Math Fidelity", None, None)]


def summary(table: PerfTable) -> dict:
    """Counts and totals of the table: device / host ops and signposts, summed device time and op-to-op gaps."""
    return {"run_id": table.run_id, "run_ids": table.run_ids or [table.run_id], "arch": table.arch,
            "worker_cores": table.worker_cores,
            "devices_merged": table.merged, "device_ops": table.device_ops, "host_ops": table.host_ops,
            "signposts": table.signposts,
            "device_time_us": sum(r["Device Time"] or 0 for r in table.rows),
            "op_to_op_us": sum(r["Op-to-Op Gap"] or 0 for r in table.rows),
            "devices": [{"device": d, "busy_us": busy, "spans_sum_us": summed, "overlap_us": summed - busy}
                        for d, (busy, summed) in table.busy.items()],
            "sub_devices": sub_devices(table)}


def sub_devices(table: PerfTable) -> list[dict]:
    """Totals per device and sub-device of a partitioned grid (none when no op names a sub-device): its ops, their
    device time summed (as tt-perf-report sums it, as though they ran one after another), the wall time they kept
    it busy (their FW spans' union: what the sub-device cost), and the worker core budgets its ops had."""
    if not table.sub_busy:
        return []
    per: dict[tuple[Any, Any], dict] = {}
    for row in table.rows:
        if row["Device"] is None or (row["OP Code"] or "").endswith("(signpost)"):
            continue
        g = per.setdefault((int(row["Device"]), row["Sub Device ID"]), {"ops": 0, "device_time_us": 0.0,
                                                                        "cores": set()})
        g["ops"] += 1
        g["device_time_us"] += row["Device Time"] or 0.0
        if row["Available Cores"] is not None:
            g["cores"].add(int(row["Available Cores"]))
    out = []
    for (dev, sub), g in sorted(per.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        busy, summed = table.sub_busy.get((dev, sub), (0.0, 0.0))
        out.append({"device": dev, "sub_device": sub, "ops": g["ops"], "device_time_us": g["device_time_us"],
                    "busy_us": busy, "spans_sum_us": summed, "worker_cores": sorted(g["cores"], reverse=True)})
    return out
