"""The OPT_BASELINE report (JSON + Markdown) of a run, from the database alone.

The contract is ``profile_summary.py`` (the user's summariser): the same keys in the same order, the same rows in
the same order, the same strings, and float sums to the last bit. Floating-point addition is not associative,
so the sums are accumulated here, in Python, over one ordered read of the ``op_detail`` view (section, then
position): that gives the oracle's exact numbers, and so its order of near-tied rows, on every back end and
whatever the physical order of the rows. It is also one read instead of eight GROUP BY sorts. The summary
views (``section_summary``, ``by_*``, ``layer_cost_split``) compute the same tables in SQL for users; a test
holds them equal to this report.

The parts computed from ops are computed once, at ingest, and stored in ``run_report`` (a report then costs a
few kilobytes of reading, not every op); ``warehouse check`` computes them again and compares.
"""
from __future__ import annotations

import heapq
import json
import statistics
from array import array
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from sqlalchemy import Connection, Engine, func, select, text

from warehouse.registry.contract import FEW_CORES, SECTIONS, TOP
from warehouse.capture import plan
from warehouse.store import dialect
from warehouse.store import schema as t

from warehouse.store.cells import compresses
from warehouse.workers.heap import trim_heap
from warehouse.capture.packing import pack_pieces, pack_text, unpack_text
from warehouse.store.db import read_snapshot
from warehouse.store.reportdoc import report_doc
from warehouse.analysis.reportscan import (_KEYS, _SELECT, _SPLIT, BLOCK, CODE, CORES, END, FID, FW, GAP, GROUPS, KERN,  # noqa: F401
                                           LAYER, POS, START, ReportFeed, _dumps, _list_json, _pieces, _Raw,
                                           _SectionScan, _Sums)



def _scan(conn: Connection, run_id: int, section: str, compute: dict[int, bool], groups: bool = True,
          layers: bool = True, groups_only: bool = False) -> _SectionScan:
    """The ops of one section, in file order, read in batches from the driver's own cursor (the report touches
    every op of a run; SQLAlchemy's row objects would cost a tenth of its time). Position order is file order
    within a section name, and (run_id, row_no) is indexed: no sort is needed. ``groups``, ``layers``,
    ``groups_only``: what is kept (see :class:`_SectionScan`)."""
    mark = dialect.paramstyle_mark(conn)
    scan = _SectionScan(groups, layers)
    cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cur.execute(f"SELECT {_SELECT} FROM op_detail WHERE run_id = {mark} AND section = {mark} ORDER BY row_no",
                    (run_id, section))
        while batch := cur.fetchmany(1000):
            scan.add(batch, compute, groups_only)
    finally:
        cur.close()
    return scan


def _read_back(conn: Connection, run_id: int, section: str, compute: dict[int, bool],
               raw: bool) -> tuple[_SectionScan, _Pure]:
    """A section's scan and its :func:`_pure` part from the database; a big run's (over
    :data:`~warehouse.capture.plan.REPORT_ONE_PASS_MAX_OPS` ops) in two reads of its ops, the sums, tops and layer
    split first, then the group tables, so that a million-op run's ~80,000 layers and its group tables' keys
    (15 MB each) are never held together."""
    big = conn.execute(select(func.count()).select_from(t.op).where(t.op.c.run_id == run_id)).scalar_one() \
        > plan.REPORT_ONE_PASS_MAX_OPS
    if not big:
        x = _scan(conn, run_id, section, compute)
        return x, _pure(x, raw)
    x = _scan(conn, run_id, section, compute, groups=False)
    order, gap_order, sums, split = _tops_sums_split(x, raw)
    trim_heap()
    g = _scan(conn, run_id, section, compute, layers=False, groups_only=True)
    tables = g.group_tables(sums[0] or 1.0, raw)
    return x, (order, gap_order, tables, split, sums)


def _ops_at(conn: Connection, run_id: int, section: str, positions: set[int]) -> dict[int, Any]:
    """The few ops the top tables print, by position, with their shapes and memory configs."""
    if not positions:
        return {}
    return {r[0]: r for r in conn.execute(text(
        "SELECT pos, op_code_id, block, layer, fw_us, cores, fidelity, input0_shape, input0_memory, "
        f"output0_memory FROM op_detail WHERE run_id = :r AND section = :s AND pos IN "
        f"({', '.join(str(i) for i in sorted(positions))})"), {"r": run_id, "s": section})}


SORT_IN_MEMORY = 200_000  # gaps sorted here up to this many (a few MB); beyond, the database sorts them


def _gap_median(conn: Connection, run_id: int, section: str, gaps: array, n: int) -> float:
    """``statistics.median`` of the section's ``n`` positive op-to-op gaps after its first op (``gaps``: all of
    the section's, in file order). Up to :data:`SORT_IN_MEMORY` of them are sorted here; beyond, the middle one or
    two are picked by the database's sort (which spills to disk) rather than by sorting a million floats here,
    within an ingest's memory budget. Both give the same value: the same order statistics, the same arithmetic."""
    if n <= SORT_IN_MEMORY:
        return _positive_gap_median(gaps)
    mid = conn.execute(text(
        "SELECT op2op_us FROM op_detail WHERE run_id = :r AND section = :s AND pos > 0 AND op2op_us > 0 "
        "ORDER BY op2op_us LIMIT :k OFFSET :o"), {"r": run_id, "s": section, "k": 2 - n % 2, "o": (n - 1) // 2}
    ).scalars().all()
    return mid[0] if n % 2 == 1 else (mid[0] + mid[1]) / 2


def _tally_median(tally: dict[float, int]) -> float:
    """``statistics.median`` of the values counted in ``tally`` (the same value, by the same arithmetic)."""
    n = sum(tally.values())
    values = sorted(tally)

    def kth(k: int) -> float:  # the k-th smallest value (0-based)
        for v in values:
            k -= tally[v]
            if k < 0:
                return v
        raise IndexError(k)
    if n % 2 == 1:
        return kth(n // 2)
    return (kth(n // 2 - 1) + kth(n // 2)) / 2


# The half of a section's part that needs no database (see :func:`pure_parts`): its top op and gap positions,
# group tables and layer cost split.
# (and the section's sums, the number of its positive gaps after the first op and, when few enough to be sorted
# here, their median: see _gap_median)
_Pure = tuple[list[int], list[int], dict[str, Any], dict[str, Any], tuple[float, float, float, int, float | None]]


def _sums(x: _SectionScan) -> tuple[float, float, float, int, float | None]:
    """The section's kernel, FW and op-to-op sums (Python's ``sum`` over them, the oracle's), the number of its
    positive gaps after the first op, and their median when they are few enough to be sorted here (else None)."""
    n_nz = sum(1 for g in islice(x.gaps, 1, None) if g > 0)
    median = None
    if 0 < n_nz <= SORT_IN_MEMORY:  # (a million-op section's are sorted by the database, not held here)
        median = _positive_gap_median(x.gaps)
    return sum(x.kern), sum(x.fw), sum(x.gaps), n_nz, median


def _positive_gap_median(gaps: array) -> float:
    """``statistics.median`` of the positive op-to-op gaps after a section's first op, sorted here."""
    return statistics.median(sorted(g for g in islice(gaps, 1, None) if g > 0))


def _tops_sums_split(x: _SectionScan, raw: bool
                     ) -> tuple[list[int], list[int], tuple[float, float, float, int, float | None], dict[str, Any]]:
    """A section's top op and gap positions, its sums and its layer cost split; the layers it was made from are
    let go (a million-op section's are 15 MB, gone before its group tables are made)."""
    kern, gaps, n = x.kern, x.gaps, len(x.kern)
    # heapq.nsmallest is sorted(...)[:TOP], ties included, without sorting every op
    order = heapq.nsmallest(TOP, range(n), key=lambda i: -kern[i])
    gap_order = heapq.nsmallest(TOP, range(1, n), key=lambda i: -gaps[i])
    sums = _sums(x)
    split = x.precision_split(raw)
    x.layers, x.lay_id, x.lay_kern, x.lay_comp = {}, array("i"), array("d"), bytearray()
    return order, gap_order, sums, split


def _pure(x: _SectionScan, raw: bool) -> _Pure:
    order, gap_order, sums, split = _tops_sums_split(x, raw)
    # (the group tables made, then what they were made from let go before the next section is read)
    tables = x.group_tables(sums[0] or 1.0, raw)
    x.groups = ()
    return order, gap_order, tables, split, sums


def feed_parts(feed: ReportFeed, same: bool) -> tuple[dict[str, _SectionScan], dict[str, _Pure]] | None:
    """The scans of a ``feed`` (made :meth:`ReportFeed.ready`: no database is needed) and their
    :func:`pure_parts`, the scans holding only what :func:`store_parts` reads of them besides (their group
    tables and layers are in the pure parts, and stay out of the pipe); None when the database must be read.
    Ingest computes this in a forked process while it builds the rollups."""
    scans = feed.scans(same)
    if scans is None:
        return None
    return scans, pure_parts(scans)  # (which lets go of the scans' tables: they stay out of the pipe)


def pure_parts(scans: dict[str, _SectionScan]) -> dict[str, _Pure]:
    """What :func:`store_parts` computes from the ``scans`` without the database (most of its time): ingest
    computes it in a forked process (:mod:`warehouse.workers.fork`) while it builds the rollups."""
    return {s: _pure(scans[s], raw=True) for s in SECTIONS}


def _section(conn: Connection, run_id: int, section: str, codes: dict[int, tuple[str, str, bool]],
             freq: float, scan: _SectionScan | None = None, raw: bool = False,
             pure: _Pure | None = None) -> dict[str, Any]:
    if scan is None:
        scan, pure = _read_back(conn, run_id, section, {i: c[2] for i, c in codes.items()}, raw)
    x = scan
    kern, gaps, n = x.kern, x.gaps, len(x.kern)
    span = (x.end - x.start) / freq if x.start is not None and x.end is not None else None
    order, gap_order, tables, split, (kern_sum, fw_sum, gap_sum, n_nz, median) = pure or _pure(x, raw)
    at = _ops_at(conn, run_id, section, set(order) | set(gap_order) | {i - 1 for i in gap_order})
    top_ops = [{"index": i, "op": codes[at[i][1]][0], "block": at[i][2], "layer": at[i][3],
                "kernel_us": round(kern[i], 1), "fw_us": round(at[i][4], 1), "cores": int(at[i][5]),
                "fidelity": at[i][6], "input0": at[i][7], "in0_mem": at[i][8], "out0_mem": at[i][9]}
               for i in order]
    top_gaps = [{"index": i, "op": codes[at[i][1]][0], "after": codes[at[i - 1][1]][0],
                 "gap_us": round(gaps[i], 1), "block": at[i][2], "layer": at[i][3]} for i in gap_order]
    if n_nz and median is None:
        median = _gap_median(conn, run_id, section, gaps, n_nz)
    out: dict[str, Any] = {"ops": n, "kernel_sum_us": round(kern_sum, 1), "fw_sum_us": round(fw_sum, 1),
           "op2op_sum_us": round(gap_sum, 1), "op2op_median_us": round(median, 2) if median is not None else None,
           "span_us": round(span, 1) if span else None, "freq_mhz": freq,
           "cores_median": _tally_median(x.cores) if n else None,
           "ops_below_120_cores": sum(k for c, k in x.cores.items() if 0 < c < FEW_CORES), "fidelity": dict(x.fid)}
    out.update(tables)
    out.update(top_ops=top_ops, top_gaps=top_gaps, precision_split=split)
    return out


def compute_parts(conn: Connection, run_id: int, freq: float,
                  scans: dict[str, _SectionScan] | None = None) -> dict[str, Any]:
    """The part of the report that comes from a run's ops (trace ids, replay sessions, the eager and trace
    sections), computed from the database in file order (or from ``scans`` fed at ingest, see
    :class:`ReportFeed`)."""
    return dict(_parts(conn, run_id, freq, scans, raw=False))


def parts_json(conn: Connection, run_id: int, freq: float, scans: dict[str, _SectionScan] | None = None,
               pure: dict[str, _Pure] | None = None, trace_ids: set[tuple[str, str]] | None = None) -> str:
    """``json.dumps(compute_parts(...), ensure_ascii=False)``, each section dumped as soon as it is computed and
    its big tables a row at a time (the memory of a million-op ingest's end); ``pure``: :func:`pure_parts` of
    the ``scans``, computed already."""
    return _dumps(_parts(conn, run_id, freq, scans, raw=True, pure=pure, trace_ids=trace_ids))


def _parts(conn: Connection, run_id: int, freq: float, scans: dict[str, _SectionScan] | None, raw: bool,
           pure: dict[str, _Pure] | None = None, trace_ids: set[tuple[str, str]] | None = None
           ) -> Iterator[tuple[str, Any]]:
    ids = trace_ids if trace_ids is not None else conn.execute(text(
        "SELECT DISTINCT trace_id, replay_session FROM op_detail WHERE run_id = :r AND section = 'trace'"),
        {"r": run_id}).all()
    codes = {i: (n, c, bool(x)) for i, n, c, x in conn.execute(
        text("SELECT id, name, category, is_compute FROM op_code"))}
    yield "trace_ids", sorted({r[0] for r in ids})
    yield "replay_sessions", sorted({r[1] for r in ids})
    for s in SECTIONS:
        if scans is None:
            trim_heap()  # (a section read back: what the last one held goes back first)
        yield s, _section(conn, run_id, s, codes, freq, scans[s] if scans else None, raw, pure[s] if pure else None)


def store_parts(conn: Connection, run_id: int, scans: dict[str, _SectionScan] | None = None,
                pure: dict[str, _Pure] | None = None, trace_ids: set[tuple[str, str]] | None = None) -> None:
    """Compute and store a run's report parts (at ingest, in the file's transaction, from the ``scans`` it fed,
    and ``pure``, :func:`pure_parts` of them when it was computed aside; and by migration 0007): `report` then
    reads a few kilobytes instead of every op. JSON keeps floats to the last bit and keys in order, so the
    stored document is the computed one. ``trace_ids``: the trace section's (trace id, replay session) pairs as
    ingest met them (else read)."""
    freq = float(conn.execute(select(t.run.c.freq_mhz).where(t.run.c.id == run_id)).scalar_one())
    conn.execute(t.run_report.delete().where(t.run_report.c.run_id == run_id))
    with dialect.small_sorts(conn):  # (a small page cache: a million-op ingest stays within its memory budget)
        pieces = _pieces(_parts(conn, run_id, freq, scans, raw=True, pure=pure, trace_ids=trace_ids))
        big = scans is None and conn.execute(select(func.count()).select_from(t.op).where(
            t.op.c.run_id == run_id)).scalar_one() > plan.REPORT_ONE_PASS_MAX_OPS
        if big and compresses(conn):  # (a big run's document, compressed as it is made: the same bytes again)
            packed, size = pack_pieces(pieces)
        else:  # (a 100,000-op run's parts: 4.3 MB of JSON, 0.4 MB packed)
            packed, size = pack_text("".join(pieces), compresses(conn))
    conn.execute(t.run_report.insert().values(run_id=run_id, raw_size=size, doc=packed))


def backfill_parts(conn: Connection) -> int:
    """Store the report parts of every run that has none (runs stored before migration 0007); returns how many."""
    missing = list(conn.execute(text("SELECT id FROM run WHERE id NOT IN (SELECT run_id FROM run_report) "
                                     "ORDER BY id")).scalars())
    for run_id in missing:
        store_parts(conn, run_id)
    return len(missing)


def check_parts(conn: Connection, step: Callable[[], None] | None = None) -> list[str]:
    """Problems: runs whose stored report parts are missing or differ from parts computed again from their ops
    (``step`` is called after each run)."""
    problems = []
    stored = {r: unpack_text(d, n) for r, d, n in conn.execute(
        select(t.run_report.c.run_id, t.run_report.c.doc, t.run_report.c.raw_size)).all()}
    for run_id, freq in conn.execute(select(t.run.c.id, t.run.c.freq_mhz).order_by(t.run.c.id)).all():
        if run_id not in stored:
            problems.append(f"run {run_id}: no stored report parts (`warehouse db upgrade` builds them)")
        else:
            # compared as JSON text: the same keys, order and digits (and NaN equals NaN)
            doc = {k: json.dumps(v) for k, v in json.loads(stored[run_id]).items()}
            fresh = {k: json.dumps(v) for k, v in compute_parts(conn, run_id, float(freq)).items()}
            if doc != fresh:
                where = next((k for k in fresh if doc.get(k) != fresh[k]), "keys")
                problems.append(f"run {run_id}: the stored report disagrees with its ops (first: {where})")
        if step:
            step()
    return problems


def build_report(engine: Engine, run_id: int) -> dict[str, Any]:
    """The oracle's JSON document for a stored run: the run's own facts and its stored report parts (one
    snapshot: a run deleted meanwhile is not found, never half-read). A run without stored parts (a part deleted
    by hand) gets them computed from its ops, as they would have been stored."""

    with read_snapshot(engine) as conn:
        doc = report_doc(conn, run_id, compute=compute_parts)
    assert doc is not None  # (with ``compute`` given)
    return doc
