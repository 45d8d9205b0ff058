"""CSV -> warehouse: one transaction per file, streamed in chunks, idempotent by content hash."""
from __future__ import annotations

import contextlib
import json
import random
import time
import uuid
from functools import partial
from array import array
from dataclasses import dataclass, field
from datetime import datetime, UTC
from pathlib import Path
from collections.abc import Callable

from sqlalchemy import BigInteger, Connection, Engine, Integer, Table, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from warehouse.store import dialect
from warehouse.store import schema as t
from warehouse.registry.codes import ATTRIBUTION, HIST_HOW, code
from warehouse.capture.csvfile import FileScan
from warehouse.store.db import write_tx
from warehouse.capture.devicelog import resolve_freq
from warehouse.errors import WarehouseError
from warehouse.capture.files import shown
from warehouse.store import attribution
from warehouse.capture.alignment import SIGNPOST, HistoryTracker
from warehouse.runs.notices import captured_at, finish_warnings, future_capture
from warehouse.store.interning import Interner
from warehouse.store.perfstore import ShapeCache, column_rows, perf_arch
from warehouse.store.cells import compresses, static_ids_json
from warehouse.capture.packing import pack_cells
from warehouse.capture.prepared import REPLAY, ROW_TYPED, TYPED, Batch, Chunk
from warehouse.capture.rowprep import RowSource
from warehouse.workers import collector
from warehouse.workers.heap import trim_heap
from warehouse.capture.occurrence import Occurrences
from warehouse.registry.columns import AT
from warehouse.workers.fork import Aside
from warehouse.analysis.report import feed_parts, store_parts
from warehouse.analysis.reportscan import ReportFeed
from warehouse.analysis.rollups import KnownKeys, build_rollups
from warehouse.analysis.rollupcalc import OpCapture
from warehouse.capture.signposts import Attribution, SectionSpan
from warehouse.registry.contract import EAGER, TRACE
from warehouse.store.listing import check_names



@dataclass
class IngestResult:
    """What one file gave: the run id and counts, or ``existing`` when its content was already stored."""

    path: str
    run_id: int
    ops: int = 0
    signposts: int = 0
    sections: int = 0
    seconds: float = 0.0
    existing: bool = False
    warnings: list[str] = field(default_factory=list)


# The columns of an op row as _FileIngest builds it, in this order.
OP_COLUMNS = (["run_id", "row_no", "section_id", "pos", "place_id", "attribution", "occurrence",
               "marker_row", "op_code_id"] + [c.name for c in TYPED]
              + ["hist_place_id", "hist_how", "iteration", "iter_pos", "perf_shape_id"])
_BY_SIGNPOSTS = ATTRIBUTION["signpost"]  # (the report attributed an op by its own signposts)
_HOW_SIGNPOST = HIST_HOW[SIGNPOST]  # (history too)
_TRACE_ID = AT.trace_id
SIGNPOST_COLUMNS = ["run_id", "row_no", "name", "message", "host_ts", "kind"]


def _planner_columns(table: Table) -> list[str]:
    """The columns of ``table`` whose statistics a plan's estimates read: its keys (primary, foreign, indexed) and
    its small integer columns (device, iteration, position, attribution: what views filter and group by).
    Measures (float durations and cycles, 64-bit timestamps and counts) and free texts are left to autovacuum:
    no join order depends on them, and on a 27-column op table they were half of ANALYZE's time."""
    keys = {c.name for c in table.c if c.primary_key or c.foreign_keys}
    keys |= {c.name for ix in table.indexes for c in ix.columns}
    return [c.name for c in table.c
            if c.name in keys or (isinstance(c.type, Integer) and not isinstance(c.type, BigInteger))]


# the tables that hold rows per run, with their planner's columns: the planner must know a new run's size in them
# (dialect.fresh_statistics)
PER_RUN_TABLES = {tb.name: _planner_columns(tb) for tb in t.metadata.sorted_tables if "run_id" in tb.c}
_PLACE, _HIST_PLACE = OP_COLUMNS.index("place_id"), OP_COLUMNS.index("hist_place_id")  # (in an op row's tuple)
_CODE, _OCCURRENCE = OP_COLUMNS.index("op_code_id"), OP_COLUMNS.index("occurrence")
_SECTION_INDEX = {EAGER: 1, TRACE: 2}  # (an op's section name in its occurrence key; 0: none)


class _FileIngest:
    """The state of one file's ingest inside its transaction: the second half of the pipeline (the first,
    :mod:`warehouse.capture.rowprep`, hands over the rows parsed and typed)."""

    def __init__(self, conn: Connection, source: RowSource, run_id: int):
        self.conn, self.source, self.run_id = conn, source, run_id
        self.compress = compresses(conn)
        self.intern = Interner(conn)
        self.attr = Attribution()
        self.ops: list[list] = []  # the batch's op rows (lists: _flush fills in the places interned last)
        self.pending: dict[tuple[str, str], int] = {}  # the batch's new (block, layer) pairs, their negative ids
        self.history_mark = 0  # (history's eager places from here on may be negative: see _resolve_pending)
        self._seg: tuple | None = None  # what the ops up to the next signpost share (see _segment)
        self.signposts: list[tuple] = []
        self.chunks: list[Chunk] = []
        self.pos: dict[str, int] = {}
        self.occurrences = Occurrences()  # (section, place, op code) -> ops so far
        self.sections = array("b")  # the batch's ops' sections (see _SECTION_INDEX), for their occurrences
        self.section_ids: dict[str, list[int]] = {EAGER: [], TRACE: []}
        self.n_ops = self.n_signposts = self.n_sections = 0
        self.rows_read = 0
        self.sha256 = ""  # of the bytes parsed, once they all are
        self.arch: str | None = None
        self.exact = True
        self.warnings: list[tuple[int | None, str | None, str]] = []
        self.history = HistoryTracker()
        self.shapes = ShapeCache()
        self.shape_of: dict[int, tuple[int, str]] = {}  # static tuple token -> perf_shape id, its fidelity
        self.feed = ReportFeed(conn)
        self.capture: OpCapture | None = OpCapture(OP_COLUMNS)  # (the rollups' input, dropped once they are built)
        self.keys = KnownKeys()  # (the rollups' keys, interned as the ops are written)
        self.trace_ids: set[tuple[str, str]] = set()  # the trace section's (trace id, replay session) pairs
        self.guards = contextlib.ExitStack()  # (settings of the stream, undone by release)
        self.plan = source.plan
        self._keep_per_op_state()

    def _store_section(self, span: SectionSpan) -> int:
        self.n_sections += 1
        return self.conn.execute(t.section.insert().values(
            run_id=self.run_id, name=span.name, kind=span.kind, ordinal=span.ordinal,
            start_row=span.start_row, end_row=span.end_row).returning(t.section.c.id)).scalar_one()

    def _signpost(self, row: tuple) -> None:
        row_no, name, _, _, msg, host = row
        ev = self.attr.signpost(row_no, name)
        if ev.warning:
            self.warnings.append((row_no, None, ev.warning))
        if ev.opened is not None:
            ev.opened.key = self._store_section(ev.opened)
            self.section_ids[ev.opened.kind].append(ev.opened.key)
        for span in ev.closed:
            if span.key is not None:
                self.conn.execute(update(t.section).where(t.section.c.id == span.key).values(end_row=span.end_row))
            else:
                span.key = self._store_section(span)
        if ev.promoted_row is not None:
            self._flush()
            self.conn.execute(update(t.signpost).where(t.signpost.c.run_id == self.run_id,
                                                        t.signpost.c.row_no == ev.promoted_row)
                              .values(kind="section_start"))
        self.signposts.append((self.run_id, row_no, name, msg, host, ev.kind))
        self.n_signposts += 1
        self._seg = None  # (the ops after it may be attributed otherwise)

    def _segment(self) -> tuple:
        """What every op up to the next signpost shares: its section (name, id), block and layer (as the file
        says them), its place id (None: no block or layer; a pair not interned yet has a negative id of this
        batch's, see :meth:`_pending`), the report's attribution code, its marker, and history's how for an op
        attributed by its own signposts."""
        a = self.attr
        sec = a.section
        pair = (a.block, a.layer)
        place = (self.intern.places_cache.get(pair) or self._pending(pair)) if (a.block or a.layer) else None
        own_how = _HOW_SIGNPOST if place else None
        return (sec.name if sec is not None else None, sec.key if sec is not None else None, a.block, a.layer,
                place, _BY_SIGNPOSTS if place else None, a.marker_row, own_how)

    def _pending(self, pair: tuple[str, str]) -> int:
        """A negative id for a (block, layer) pair that :meth:`_flush` interns with the batch's others (ops,
        history's eager places and its answers carry it until then, and are filled in)."""
        return self.pending.setdefault(pair, -2 - len(self.pending))

    def _op(self, row: tuple) -> None:
        """One op row: its attributions, occurrence and place, kept for :meth:`_flush` (the hot loop of the
        writing process, one call per op: what ops between two signposts share is worked out once, see
        :meth:`_segment`)."""
        row_no, name, tok, typed = row
        shape_id, fid = self.shape_of[tok]
        code_id = self.intern.codes.get(name)
        if code_id is None:
            code_id = self.intern.op_code(name)
        seg = self._seg
        if seg is None:
            seg = self._seg = self._segment()
        sec_name, sec_id, raw_block, raw_layer, place, attribution, marker, own_how = seg
        p: int | None
        if sec_name is not None:
            p = self.pos.get(sec_name, 0)
            self.pos[sec_name] = p + 1
        else:
            p = None
        if sec_name is None:
            hist_place, how, iteration, iter_pos = place, own_how, None, None
        else:
            self.feed.op(sec_name, p or 0, code_id, raw_block, raw_layer, typed, fid)
            if sec_name == TRACE:
                self.trace_ids.add((typed[_TRACE_ID] or "", typed[REPLAY] or ""))
                hist = self.history.trace_op(row_no, code_id, typed[REPLAY], place or 0, p or 0)
                hist_place, how, iteration, iter_pos = (hist.place or None, code(HIST_HOW, hist.how),
                                                        hist.iteration, hist.iter_pos)
            else:
                if sec_name == EAGER:
                    self.history.eager_op(code_id, place or 0)
                hist_place, how, iteration, iter_pos = place, own_how, 0, p
        self.ops.append([self.run_id, row_no, sec_id, p, place, attribution, 0, marker, code_id, *typed,
                         hist_place, how, iteration, iter_pos, shape_id])
        self.sections.append(_SECTION_INDEX.get(sec_name, 0))
        self.n_ops += 1

    def _resolve_pending(self) -> None:
        """Intern the batch's new (block, layer) pairs and put their ids where their negative ones are: in the
        op rows and in history's eager places."""
        pending, self.pending = self.pending, {}
        found = self.intern.places(set(pending))
        real = {neg: found[pair] for pair, neg in pending.items()}
        for o in self.ops:
            if (x := o[_PLACE]) is not None and x < 0:
                o[_PLACE] = real[x]
            if (x := o[_HIST_PLACE]) is not None and x < 0:
                o[_HIST_PLACE] = real[x]
        places = self.history.e_place
        for i in range(self.history_mark, len(places)):
            if places[i] < 0:
                places[i] = real[places[i]]
        self._seg = None  # (its place may have been one of them)

    def _combos(self, rows: list[tuple]) -> set[tuple[str, str, str]]:
        """The batch's (block, layer, op code) of history's attribution, as the rollups' keys read them (a place
        no longer cached is left to the end of the run, where its keys are found as any others)."""
        pair_of, names = self.intern.pair_of, self.intern.code_names
        out = set()
        for pid, cid in {(r[_HIST_PLACE], r[_CODE]) for r in rows}:
            pair = ("", "") if pid is None else pair_of.get(pid)
            if pair is not None:
                out.add((*pair, names[cid]))
        return out

    def _flush(self) -> None:
        if self.signposts:
            dialect.bulk_insert(self.conn, "signpost", SIGNPOST_COLUMNS, self.signposts)
            self.signposts = []
        if self.pending:
            self._resolve_pending()
        self.history_mark = len(self.history.e_place)  # (eager places before it are all interned)
        if self.ops:
            ops = self.ops
            occ = self.occurrences.take(Occurrences.key(self.sections, [o[_PLACE] for o in ops],
                                                        [o[_CODE] for o in ops]))
            for o, k in zip(ops, occ):
                o[_OCCURRENCE] = k
            self.sections = array("b")
            rows = list(map(tuple, ops))  # (SQLAlchemy's executemany takes tuples)
            dialect.bulk_insert(self.conn, "op", OP_COLUMNS, rows)
            if self.capture is not None:
                self.capture.add(rows)
            if not self.keys.given_up:
                self.keys.add(self.intern.connection(), self._combos(rows), len(ops))
            self.ops = []
        if self.chunks:
            self.intern.resolve_pending()
            ids = self.intern.ids
            self.conn.execute(t.cell_chunk.insert(), [
                {"run_id": self.run_id, **(c.packed or pack_cells(c.row_nos, c.texts, self.compress)),
                 "static_ids": static_ids_json([ids[k] for k in c.tokens])}
                for c in self.chunks])
            self.chunks = []
            self.intern.trim()

    def _batch(self, b: Batch) -> None:
        if b.keys:
            self.intern.learn(b.first_token, b.keys)
        if b.shapes:  # the batch's new shapes get their ids first: its op rows are then written as built
            self.shapes.learn(b.shapes)
            self.shapes.resolve(self.intern.connection())
            self.shape_of.update((tok, (self.shapes.ids[d], shape.fidelity or "")) for tok, d, shape in b.shapes)
            self.shapes.trim()
        for row in b.rows:
            if row[ROW_TYPED] is None:
                self._signpost(row)
            else:
                self._op(row)
        self.chunks += b.chunks
        self._flush()
        self.feed.flush()
        if b.forget:
            self.shape_of.clear()

    def _keep_per_op_state(self) -> None:
        """What the plan keeps per op for the run's end (:class:`warehouse.capture.plan.IngestPlan`): the report's
        section scans, the rollups' keys and inputs, or, past their budgets, nothing (they are read back from the
        database there, and memory stays flat)."""
        if not self.plan.report_fed:
            self.feed.give_up()
        if not self.plan.capture_ops:
            self.keys.give_up()
            if self.capture is not None:
                self.capture.give_up()
        if self.plan.big:
            # (its indexes are appended to in file order: a small page cache serves them, in 6 MiB less)
            self.guards.enter_context(dialect.small_sorts(self.conn, 2))
            self.intern.keep_pairs = False
            self.intern.pair_of.clear()

    def release(self) -> None:
        """Drop the per-op state of the streaming pass (some 30 MB for a million ops) before the rollups and the
        report parts are computed, so that their memory does not add to it."""
        self.guards.close()
        self.history = HistoryTracker()
        self.occurrences = Occurrences()
        self.pos = {}
        self.shapes = ShapeCache()
        self.shape_of = {}

    def run(self, progress: Callable[[int], None] | None) -> bool:
        """Stream every row into the database; returns whether the trace inherits the eager attribution (the
        oracle's rule: both op-code sequences are equal), which :meth:`attribute` then writes."""
        for b in self.source.batches():
            self._batch(b)
            if progress:
                progress(b.bytes_read)
        fin = self.source.finish
        assert fin is not None  # (set once the batches are exhausted)
        self.rows_read, self.arch, self.exact, self.sha256 = fin.rows_read, fin.arch, fin.exact, fin.sha256
        spans, warnings = self.attr.finish()
        for span in spans:
            self._store_section(span)
        # a custom section is known once it closes, so it was numbered by its end: number every section by its
        # start, as the column says (A_start, B_start, B_end, A_end: A before B)
        self.conn.execute(text(
            "UPDATE section SET ordinal = (SELECT COUNT(*) FROM section s2 WHERE s2.run_id = section.run_id "
            "AND (s2.start_row < section.start_row OR (s2.start_row = section.start_row AND s2.id <= section.id)))"
            " WHERE run_id = :r"), {"r": self.run_id})
        self.warnings += [(None, None, w) for w in warnings]
        self.warnings += [(row, h, f"{n} cell(s) are not finite numbers: stored as NULL, counted as 0"
                           + (f" (first at row {row})" if row is not None else ""))
                          for h, (n, row) in fin.unparsable.items()]
        # the reader's own warnings (duplicate columns, short rows) first, in row order with ours
        self.warnings = sorted([(w.row, w.column, w.message) for w in fin.warnings] + self.warnings,
                               key=lambda w: (w[0] is None, w[0] or 0))
        self.warnings += [(w.row, w.column, w.message) for w in fin.late_warnings]  # found at the end
        return self.history.e_codes == self.history.t_codes  # (every eager and trace op's code, in order)

    def attribute(self, same: bool) -> None:
        """The attributions only known at the file's end: the oracle's rule (``same``: the replay inherits block
        and layer of the eager op at the same position, only when both op-code sequences are identical), and
        history's corrections."""
        if same and len(self.history.t_codes):
            # Same op codes at every position: the eager op's occurrence is the replayed op's too.
            e = t.op.alias("e")
            with dialect.fresh_rows_join(self.conn):
                self.conn.execute(update(t.op)
                                  .where(t.op.c.section_id.in_(self.section_ids[TRACE]),
                                         e.c.section_id.in_(self.section_ids[EAGER]), e.c.pos == t.op.c.pos)
                                  .values(place_id=e.c.place_id, occurrence=e.c.occurrence,
                                          attribution=ATTRIBUTION["eager_position"]))
        written = attribution.apply(self.conn, self.run_id, self.history.finish())
        if self.capture is not None:
            for row, place_id, iteration, iter_pos in written:
                self.capture.fix(row, place_id, iteration, iter_pos)


def ingest_file(engine: Engine, path: Path, *, label: str | None = None, tags: dict[str, str] | None = None,
                freq_mhz: float | None = None, progress: Callable[[int], None] | None = None,
                meta: dict | None = None, worker: bool | RowSource | None = None) -> IngestResult:
    """Store one CSV as a run, whole or not at all. Content already stored gives ``existing=True``.

    The file's bytes are hashed as they are parsed: what is stored is exactly what was hashed, and a file that
    changes meanwhile is refused. The file is hashed first, before its rows are read, only when it may be stored
    already (a stored run has its size; a race with another ingest of the same content ends with the same
    answer, through the hash's unique key). Reading runs in a worker process for files that are worth it (see
    :class:`warehouse.capture.rowprep.RowSource`; ``worker`` forces either way, or is the file's reader started
    already by :func:`warehouse.capture.rowprep.read_ahead`, used when it packs chunks as this back end wants).
    ``meta`` overrides run columns (``warehouse copy`` keeps a run's hash, paths, times and frequency) and may carry
    ``warnings``, a list of ``(row, column, message)`` that replaces those found."""
    check_names(label, tags)
    try:
        with collector.paused():
            got = _ingest_file(engine, Path(path), label, tags, freq_mhz, progress, meta, worker)
        if not got.existing:
            dialect.fresh_statistics(engine, PER_RUN_TABLES, got.ops)  # (tonight's run is read at once)
        return got
    except WarehouseError:
        raise
    except Exception as e:  # anything else is this file's failure, never the command's (its transaction rolled back)
        msg = " ".join(str(e).split()) or type(e).__name__
        raise WarehouseError(f"{shown(path)}: could not be ingested ({type(e).__name__}: {msg[:300]}); nothing of "
                             "it was stored. Please report this with the file") from e


def _size_stored(conn: Connection, size: int) -> bool:
    """Whether a stored run's file has ``size`` bytes (only then can a file's content be stored already)."""
    return conn.execute(select(t.run.c.id).where(t.run.c.size_bytes == size).limit(1)).scalar() is not None


def _ingest_file(engine: Engine, path: Path, label: str | None, tags: dict[str, str] | None,
                 freq_mhz: float | None, progress: Callable[[int], None] | None, meta: dict | None,
                 worker: bool | RowSource | None) -> IngestResult:
    t0 = time.perf_counter()
    meta = dict(meta or {})
    warnings = meta.pop("warnings", None)  # taken out once: a retry must see the same meta
    compress = compresses(engine)
    # (the worker scans, then parses ahead while we check; maybe started already, see rowprep.read_ahead)
    ahead, forced = (worker, None) if isinstance(worker, RowSource) else (None, worker)
    if ahead is not None and ahead.compress != compress:
        ahead.close()  # (started already, but its chunks are packed for the other back end: read the file again)
        ahead = None
    source = ahead or RowSource(path, worker=forced, compress=compress)
    try:
        sha = meta.get("sha256") or source.scan.sha256
        with engine.connect() as conn:
            if not sha and _size_stored(conn, source.scan.size):  # (else its content cannot be stored: no hash yet)
                sha = source.hash_now()
            found = conn.execute(select(t.run.c.id).where(t.run.c.sha256 == sha)).scalar() if sha else None
        if found is not None:
            return IngestResult(shown(path), found, existing=True)
        scan = source.scan
        freq, freq_source, log_arch = resolve_freq(path, freq_mhz)
        # SQLite's busy timeout covers ordinary waits; a lock that outlasts it, a deadlock or a serialization
        # failure is retried whole (the failed try wrote nothing).
        attempts = 5
        for attempt in range(attempts):
            try:
                return _ingest_once(engine, _Request(path, sha, label, tags, freq, freq_source, log_arch, meta,
                                                     warnings, progress, t0), source, scan)
            except IntegrityError:
                # Two processes raced on the same content: the other one committed first.
                parsed = source.finish.sha256 if source.finish is not None else None
                with engine.connect() as conn:
                    found = conn.execute(select(t.run.c.id).where(t.run.c.sha256 == (sha or parsed))).scalar()
                if found is None:
                    raise
                return IngestResult(shown(path), found, existing=True)
            except DBAPIError as e:
                if not dialect.is_retryable(e) or attempt == attempts - 1:
                    raise WarehouseError(f"{shown(path)}: {dialect.explain(e)}") from None
                time.sleep(0.2 + random.random() * (1 + attempt))
                source.close()  # its rows were spent on the failed try: read them again
                source = RowSource(path, scan, worker=forced, compress=compress)
        raise AssertionError("unreachable")
    finally:
        source.close()


@dataclass
class _Request:
    """One file's ingest, as decided before its write transaction (a retry repeats it unchanged)."""

    path: Path
    sha: str  # the content's hash (or the copied run's)
    label: str | None
    tags: dict[str, str] | None
    freq: float  # MHz, and where it came from (option, device log, default)
    freq_source: str
    log_arch: str | None  # the device log's architecture, when it names one
    meta: dict  # run columns that override the file's (warehouse copy)
    warnings: list | None  # (row, column, message) that replace the ones found (warehouse copy)
    progress: Callable[[int], None] | None
    t0: float  # when the ingest began (perf_counter)


def _ingest_once(engine: Engine, req: _Request, source: RowSource, scan: FileScan) -> IngestResult:
    path, sha, meta, warnings, t0 = req.path, req.sha, req.meta, req.warnings, req.t0
    label, tags, freq, freq_source, log_arch, progress = (req.label, req.tags, req.freq, req.freq_source,
                                                          req.log_arch, req.progress)
    with write_tx(engine, inserts_only=True) as conn:
        found = conn.execute(select(t.run.c.id).where(t.run.c.sha256 == sha)).scalar() if sha else None
        if found is not None:  # another process stored it while we waited for the write lock
            return IngestResult(shown(path), found, existing=True)
        lay = source.layout
        now = datetime.now(UTC).replace(tzinfo=None)
        captured = captured_at(shown(path.name))
        if future_capture(captured, now):
            captured = None  # (ordered by its ingest time; finish_warnings says why)
        values = dict(
            # (a hash not known yet is the parse's, written at the end; until then a key of this transaction's)
            sha256=sha or f"pending-{uuid.uuid4().hex}", source_path=shown(path.absolute()),
            file_name=shown(path.name), size_bytes=scan.size,
            row_count=0, op_count=0, signpost_count=0, columns=json.dumps(lay.header, ensure_ascii=False),
            static_columns=json.dumps(lay.static_idx), name_column=lay.name_column, newline=lay.newline,
            final_newline=True, bom=lay.bom, export_exact=True, captured_at=captured,
            ingested_at=now, freq_mhz=freq,
            freq_source=freq_source, arch=log_arch, label=label, trace_matches_eager=False)
        values.update(meta)
        run_id = conn.execute(t.run.insert().values(**values).returning(t.run.c.id)).scalar_one()
        if tags:
            conn.execute(t.run_tag.insert(), [{"run_id": run_id, "key": k, "value": v} for k, v in tags.items()])
        conn.execute(t.run_column.insert(), column_rows(run_id, lay.header, lay.static_idx))
        job = _FileIngest(conn, source, run_id)
        try:
            same = job.run(progress)
        except BaseException:
            job.intern.close()
            job.guards.close()
            raise
        feed, job.feed = job.feed, None  # type: ignore[assignment]
        aside = feed.scannable(same)
        if aside:
            feed.ready()
        # the report parts' database-free half on the other core from here on, while the rest of the run's
        # attribution, its checks and its rollups are written here
        with Aside(partial(feed_parts, feed, same)) if aside else contextlib.nullcontext() as parts:
            try:
                job.attribute(same)
            finally:
                job.intern.close()
                job.guards.close()
            job.release()
            if job.plan.big:
                trim_heap()  # (what the stream's state held goes back before the rollups and report are made)

            def meanwhile() -> None:  # (once the rollups have read the run's ops)
                job.warnings = finish_warnings(conn, run_id, job.warnings, exact=job.exact, capture=job.capture,
                                               path=path, meta=meta, warnings=warnings)
                attribution.summarize(conn, run_id)
            with dialect.small_sorts(conn):
                try:  # (new rollup keys are interned as the file's other values are)
                    build_rollups(conn, run_id, meta.get("freq_mhz", freq), key_conn=job.intern.connection(),
                                  captured=job.capture, known=job.keys, meanwhile=meanwhile)
                finally:
                    job.intern.close()
                    job.capture = None
            got = parts.result() if parts else None  # (None: the child failed, or no fork here)
            if got is None and aside:
                got = feed_parts(feed, same)
            scans, pure = got or (None, None)
            if job.plan.big:
                trim_heap()  # (what the rollups' SQL held goes back before the report is read back)
            store_parts(conn, run_id, scans, pure, trace_ids=job.trace_ids)
        seconds = time.perf_counter() - t0
        final = dict(row_count=job.rows_read, op_count=job.n_ops, signpost_count=job.n_signposts,
                     final_newline=scan.final_newline, export_exact=job.exact,
                     trace_matches_eager=same, arch=log_arch or job.arch, seconds=seconds,
                     perf_arch=perf_arch(lay.header, job.arch), sha256=sha or job.sha256)
        final.update({k: v for k, v in meta.items() if k in final})
        conn.execute(update(t.run).where(t.run.c.id == run_id).values(**final))
    return IngestResult(shown(path), run_id, ops=job.n_ops, signposts=job.n_signposts, sections=job.n_sections,
                        seconds=seconds, warnings=[m for _, _, m in job.warnings])


