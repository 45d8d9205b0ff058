"""The application layer: one :class:`Warehouse` over a database URL. Every CLI command and every dashboard page
calls it, and notebooks and scripts get the same (a test patches it and walks every command and route).

    >>> from warehouse import Warehouse
    >>> wh = Warehouse("warehouse.db")              # or "postgresql+psycopg://user@host/warehouse"
    >>> wh.ingest("nightly/", label="resnet")       # files, folders, globs
    >>> wh.regressions(label="resnet").findings
    >>> wh.query("SELECT * FROM series_block WHERE label = :l", l="resnet")

Methods have explicit keyword arguments and return typed results (dataclasses with ``to_json()``: the document
the CLI prints with ``--format json``); :mod:`warehouse.render` turns each into text, Markdown or CSV. Errors are
:class:`warehouse.errors.WarehouseError` naming the method's own parameters (the CLI says its flags instead).
Reading methods never create nor change a database.
"""
from __future__ import annotations

import contextlib
import os
import sys
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from warehouse.capture.files import (DEFAULT_GLOB as DEFAULT_GLOB, output_stream as output_stream,  # (for adapters)
                                     shown as shown, write_output as write_output)
from warehouse.capture.ranklayout import HOST_TAG, RANK_TAG, captures
from warehouse.errors import InputError, UsageError, WarehouseError
from warehouse.workers import collector

if TYPE_CHECKING:  # (imported lazily at run time: a one-line answer pays only for what it uses)
    from sqlalchemy import Engine

    from warehouse.history.changes import ChangesResult
    from warehouse.history.farm import Farm
    from warehouse.history.opdiff import OpDiff
    from warehouse.history.compare import Comparison
    from warehouse.runs.copy import Copied
    from warehouse.runs.lake import LakeExport
    from warehouse.analysis.perf import PerfTable
    from warehouse.store.query import SqlResult
    from warehouse.history.gate import Gate
    from warehouse.store.listing import RunInfo
    from warehouse.history.trend import Trend as Trend  # (the dashboard's charts name it)
    from warehouse.history.changepoints import SeriesReport
    from warehouse.history.outside import OutsideResult
    from warehouse.history.triage import Decision
    from warehouse.capture.rowprep import RowSource


def database_error(e: BaseException) -> str | None:
    """What a database error means, on one line, when ``e`` is one (None otherwise). SQLAlchemy is imported only by
    the commands that use it, so it is looked for, not imported, here: a one-line answer never pays for it."""
    exc = sys.modules.get("sqlalchemy.exc")
    if exc is None or not isinstance(e, exc.DBAPIError):
        return None
    from warehouse.store import dialect  # (lazy: the database layer, loaded already when the error is one of its)
    return dialect.explain(e)


def detect_changes(values: Any, **options: Any) -> SeriesReport:
    """The history detector on one outside series of numbers (a list; NaN for a missing point): its steps
    (``index``: the first point of the new level), drifts and outliers. See
    :func:`warehouse.history.outside.detect_changes`; no warehouse is needed."""
    from warehouse.history.outside import detect_changes as detect
    return detect(values, **options)


def detect_file(path: str | Path, **options: Any) -> OutsideResult:
    """The history detector on every series of a CSV or JSON file (``warehouse changes --series FILE``)."""
    from warehouse.history.outside import detect_file as detect
    return detect(Path(path), **options)


def _one_or_many(run: str | int | Sequence[str | int]) -> list[str | int]:
    """A run reference, or several (the ranks of a multi-host capture), as a list."""
    return [run] if isinstance(run, (str, int)) else list(run)


@dataclass
class IngestOutcome:
    """One path's fate: stored as ``run_id`` (or ``existing``: its bytes were stored before, under
    ``kept_label``), or not (``error``: the others are still ingested)."""

    path: str
    run_id: int | None = None
    ops: int = 0
    sections: int = 0
    signposts: int = 0
    seconds: float = 0.0
    existing: bool = False
    kept_label: str | None = None  # an existing run's label, when another label was asked for
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    host: int | None = None  # a rank of a multi-host capture: the capture's id (rank 0's run) ...
    rank: int | None = None  # ... and its rank

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RunDetail:
    """One run for its page: the run, its sections, whether it has the oracle's (``sectioned``: what the
    OPT_BASELINE report summarises), and the runs before and after it among its label's."""

    run: RunInfo
    sections: list[dict[str, Any]]
    sectioned: bool
    previous: int | None
    next: int | None

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run.to_json(), "sections": self.sections, "sectioned": self.sectioned,
                "neighbours": {"previous": self.previous, "next": self.next}}


def _close_engines(attrs: dict[str, Any]) -> None:
    """Dispose of the engines a Warehouse holds (``attrs``: its ``__dict__``)."""
    for k in ("engine", "_write_engine", "_read_engine"):
        eng = attrs.pop(k, None)
        if eng is not None:
            eng.dispose()


class Warehouse:
    """A warehouse at ``url`` (a SQLite path or a SQLAlchemy URL; ``None``: ``$WAREHOUSE_DB`` or
    ``./warehouse.db``). Reading methods never create a database."""

    def __init__(self, url: str | None = None):
        self.url = url
        # (a Warehouse dropped without close() gives its connections back when it is collected, not when each
        # pooled connection is: a notebook's `Warehouse(url).query(...)` never leaves a server connection open)
        weakref.finalize(self, _close_engines, self.__dict__)

    # ------------------------------------------------------------------------------------------- engines
    @cached_property
    def engine(self) -> Engine:
        """The read-write engine (a new database is created at head when needed)."""
        from warehouse.store.db import open_db
        return open_db(self.url)

    def close(self) -> None:
        """Give back every database connection this Warehouse holds (it opens new ones when used again)."""
        _close_engines(self.__dict__)

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _writer(self) -> Engine:
        """A read-write engine on an existing warehouse (a writing command never creates one by accident)."""
        from warehouse.store.db import open_db
        if "engine" in self.__dict__:
            return self.__dict__["engine"]
        if "_write_engine" not in self.__dict__:
            self.__dict__["_write_engine"] = open_db(self.url, create=False)
        return self.__dict__["_write_engine"]

    def _reader(self) -> Engine:
        # reads never write: a read-only opening never recreates the views (a reader role could not, and a
        # dashboard host on another release would fight the writers over them); it warns when they are stale
        # (opened once and kept: a notebook's hundredth query costs the query, not a new engine)
        from warehouse.store.db import open_db
        if "engine" in self.__dict__:
            return self.__dict__["engine"]
        if "_read_engine" not in self.__dict__:
            self.__dict__["_read_engine"] = open_db(self.url, create=False, readonly=True)
        return self.__dict__["_read_engine"]

    def _light(self) -> contextlib.AbstractContextManager[Any]:
        """A connection of the light read path (:mod:`warehouse.store.lite`: no SQLAlchemy to import) while this
        Warehouse has no engine yet and the warehouse is a SQLite file at head; else None (use an engine)."""
        from warehouse.store.lite import reader
        if any(k in self.__dict__ for k in ("engine", "_read_engine", "_write_engine")):
            return contextlib.nullcontext(None)
        return reader(self.url)

    # ------------------------------------------------------------------------------------------- writing
    def ingest(self, paths: str | Path | Iterable[str | Path], *, label: str | None = None,
               tags: dict[str, str] | None = None, freq_mhz: float | None = None, glob: str | None = None,
               jobs: int = 1, progress: Callable[[int, int, int], None] | None = None,
               each: Callable[[IngestOutcome], None] | None = None) -> list[IngestOutcome]:
        """Store CSVs (files, folders searched recursively, globs) as runs; one :class:`IngestOutcome` per file
        (a file that fails is an outcome with ``error``; the others are still ingested). ``jobs`` > 1 ingests
        several files in that many worker processes (call it from a script's ``if __name__ == "__main__":``);
        0 picks by size (:func:`warehouse.runs.folder.auto_jobs`). ``progress(bytes done, bytes in all, files)``
        follows the bytes read; ``each(outcome)`` is called as each file is done. A multi-host capture laid out
        as ``tt-run --tracy`` writes it (``rank<N>`` folders) is linked as one (:mod:`warehouse.runs.ranks`): its
        outcomes come together once every rank is stored, or none is kept when one fails."""
        # (light imports only until the first file's reader is forked: see _read_ahead)
        from warehouse.capture.devicelog import check_freq_option
        from warehouse.capture.files import find_csvs
        from warehouse.store.listing import check_names

        check_names(label, tags)
        check_freq_option(freq_mhz)
        items = [str(paths)] if isinstance(paths, (str, Path)) else [str(p) for p in paths]
        out: list[IngestOutcome] = []

        def done(o: IngestOutcome) -> None:
            out.append(o)
            if each is not None:
                each(o)
        files: list[Path] = []
        for f in find_csvs(items, glob or DEFAULT_GLOB):
            if isinstance(f, InputError):
                done(IngestOutcome(f.path, error=str(f)))
            else:
                files.append(f)
        if not files:
            return out
        groups = captures(files)  # (multi-host captures: their outcomes held back until every rank is in)
        if groups:
            from warehouse.runs.ranks import capture_outcomes
        if groups and {HOST_TAG, RANK_TAG} & set(tags or {}):
            raise UsageError(f"--tag {HOST_TAG} / {RANK_TAG}: set by ingest on a multi-host capture's runs")
        report = capture_outcomes(self._writer, groups, done) if groups else done
        with collector.paused():  # (from the first reader's fork on: see warehouse.workers.collector)
            ahead = self._read_ahead(files, jobs)
            try:
                return self._ingest(files, out, report, label, tags, freq_mhz, jobs, progress, ahead)
            finally:
                if ahead is not None:
                    ahead.close()  # (a failure before its ingest, or a copy already stored: its worker stops)

    def link_ranks(self, runs: Iterable[str | int]) -> list[int]:
        """Make stored runs (in rank order) the ranks of one multi-host capture (files not laid out as
        ``tt-run --tracy`` writes them); their ids."""
        from warehouse.runs.ranks import link
        ids = [self.resolve(r) for r in runs]
        link(self._writer(), ids)
        return ids

    def ranks(self, run: str | int) -> list[int]:
        """The runs of the multi-host capture ``run`` belongs to, in rank order (``[run]`` for one host)."""
        from warehouse.runs.ranks import ranks
        rid = self.resolve(run)
        with self._reader().connect() as conn:
            return ranks(conn, rid)

    def rank_run(self, run: str | int, rank: int) -> int:
        """The run of rank ``rank`` of the multi-host capture ``run`` belongs to."""
        from warehouse.runs.ranks import rank_run
        rid = self.resolve(run)
        with self._reader().connect() as conn:
            return rank_run(conn, rid, rank)

    def _read_ahead(self, files: list[Path], jobs: int) -> RowSource | None:
        """Start reading the first file before the database layers are imported and the warehouse opened, when
        the files are ingested one after the other here (the reader's scan and first batches then cost the
        writer no wait: ~0.4 s of a 100k-op capture). Its chunks are packed for the back end the URL names; an
        ingest that finds otherwise reads the file again. The caller closes what it gives."""
        if len(files) > 1 and jobs != 1 or not isinstance(self.url, (str, type(None))):
            return None
        url = self.url or os.environ.get("WAREHOUSE_DB") or ""
        scheme = url.split("://")[0].split("+")[0].lower() if "://" in url else "sqlite"
        from warehouse.capture.rowprep import read_ahead
        return read_ahead(files[0], compress=scheme not in ("postgresql", "postgres"))

    def _ingest(self, files: list[Path], out: list[IngestOutcome], done: Callable[[IngestOutcome], None],
                label: str | None, tags: dict[str, str] | None, freq_mhz: float | None, jobs: int,
                progress: Callable[[int, int, int], None] | None, ahead: RowSource | None) -> list[IngestOutcome]:
        from warehouse.runs.folder import auto_jobs, ingest_files

        engine = self.engine

        def size(f: Path) -> int:
            try:
                return f.stat().st_size if f.is_file() else 0
            except OSError:
                return 0
        sizes = {f: size(f) for f in files}
        total = sum(sizes.values())
        base, before = {}, 0
        for f in files:  # bytes of the files before each: where its progress starts
            base[f], before = before, before + sizes[f]

        def moved(f: Path, n: int) -> None:
            if progress is not None:
                progress(base[f] + n, total, len(files))
        for f, r in ingest_files(engine, files, jobs or auto_jobs(list(sizes.values())), label=label, tags=tags,
                                 freq_mhz=freq_mhz, progress=moved, ahead=ahead):
            if isinstance(r, WarehouseError):  # this file failed; the others are still tried
                done(IngestOutcome(str(f), error=str(r)))
            else:
                kept = self._kept_label(r.run_id, label) if r.existing else None
                done(IngestOutcome(str(f), r.run_id, r.ops, r.sections, r.signposts, r.seconds, r.existing, kept,
                                   list(r.warnings)))
            moved(f, sizes[f])
        return out

    def _kept_label(self, run_id: int, label: str | None) -> str | None:
        """An existing run's label when it differs from the one asked for ('' for none), else None."""
        if label is None:
            return None
        from warehouse.store.listing import list_runs
        old = list_runs(self.engine, run_id=run_id)[0].label
        return None if old == label else (old or "")

    def tag(self, run: str | int, *, label: str | None = None, tags: dict[str, str] | None = None,
            untag: list[str] | None = None) -> dict[str, Any]:
        """Change a run's label (``''`` removes it) and tags; ``{"id", "label", "tags"}`` after."""
        from warehouse.store.listing import retag
        if label is None and not tags and not untag:
            raise UsageError("nothing to change: pass label, tags or untag")
        return retag(self._writer(), str(run), label=label, tags=tags, untag=untag)

    def triage(self, ident: str, status: str, *, note: str | None = None, label: str | None = None,
               who: str | None = None) -> Decision:
        """Record what was decided about a change (``c-...``), a gate finding (``r-...``) or a night
        (``run:ID``): acknowledged, expected or invalid."""
        from warehouse.history.lookup import find  # (lazy: the detectors, for one command only)
        from warehouse.history.triage import normalise, record  # (lazy: the database layers, see above)
        ident = normalise(ident)
        found = None if ident.startswith("run:") else find(self._reader(), ident, label)
        return record(self._writer(), ident, status, note=note, who=who, found=found)

    def untriage(self, ident: str) -> Decision:
        """Remove the decision about ``ident`` (what :meth:`triage` recorded); the decision removed."""
        from warehouse.history.triage import clear
        return clear(self._writer(), ident)

    def remove(self, run_ids: Iterable[int]) -> int:
        """Delete runs completely (ids from :meth:`resolve`); how many were deleted."""
        from warehouse.runs.maintenance import remove_runs
        return remove_runs(self._writer(), list(dict.fromkeys(run_ids)))

    def copy_to(self, dst: str, runs: list[str] | None = None,
                progress: Callable[[Copied], None] | None = None) -> list[Copied]:
        """Copy runs (ids or 'latest'; all when None) into the warehouse at ``dst``, lossless and idempotent."""
        from warehouse.runs.copy import copy_runs
        from warehouse.store.db import open_db
        target = open_db(dst)
        try:
            return copy_runs(self._reader(), target, runs or None, progress=progress)
        finally:
            target.dispose()  # (its connections given back: a notebook or the dashboard copies many times)

    def upgrade(self, revision: str = "head") -> str | None:
        """Upgrade (or create) the schema to ``revision``; the revision after."""
        from warehouse.store.db import current_revision, make_engine, upgrade
        engine = make_engine(self.url)
        try:
            upgrade(engine, revision)
            with engine.connect() as conn:
                return current_revision(conn)
        finally:
            engine.dispose()

    def create_reader(self, role: str, password: str | None = None) -> list[str]:
        """PostgreSQL: create (or refresh) a login that can only SELECT; what stays open to every role."""
        from warehouse.store.roles import create_reader
        return create_reader(self._writer(), role, password)

    # ------------------------------------------------------------------------------------------- runs
    def resolve(self, run: str | int, label: str | None = None) -> int:
        """The id of a run reference: a number, or ``latest`` (the newest capture, with ``label`` when given)."""
        from warehouse.store.listing import resolve_run
        with self._reader().connect() as conn:
            return resolve_run(conn, str(run), label)

    def runs(self, label: str | None = None, warnings: bool = False) -> list[RunInfo]:
        """Every run, oldest capture first, with tags, history attribution (and warnings)."""
        from warehouse.store.listing import list_runs
        with self._light() as conn:
            return list_runs(conn or self._reader(), label=label, warnings=warnings)

    def run(self, run: str | int) -> RunDetail:
        """One run with its warnings, its sections and the runs before and after it among its label's."""
        from warehouse.registry.contract import SECTIONS
        from sqlalchemy import text

        from warehouse.store.listing import list_runs
        run_id = self.resolve(run)
        eng = self._reader()
        info = list_runs(eng, warnings=True, run_id=run_id)[0]
        with eng.connect() as conn:
            sections = [dict(r) for r in conn.execute(text(
                "SELECT name, kind, ordinal, start_row, end_row FROM section WHERE run_id = :r ORDER BY ordinal"),
                {"r": run_id}).mappings()]
        ids = [r.id for r in list_runs(eng, label=info.label)] if info.label is not None else []
        at = ids.index(run_id) if run_id in ids else -1
        return RunDetail(info, sections, any(x["kind"] in SECTIONS for x in sections),
                         ids[at - 1] if at > 0 else None, ids[at + 1] if 0 <= at < len(ids) - 1 else None)

    def labels(self) -> list[str]:
        """Every label, sorted."""
        return [r["label"] for r in self.query("SELECT DISTINCT label FROM run WHERE label IS NOT NULL "
                                               "ORDER BY label")]

    def section_totals(self, run_ids: list[int]) -> dict[int, dict[str, float]]:
        """Kernel time (us per iteration, all devices) of each section of each run; ``''`` is the whole run."""
        if not run_ids:
            return {}
        out: dict[int, dict[str, float]] = {}
        ids = ", ".join(str(int(i)) for i in run_ids)
        for r in self.query("SELECT run_id, section, kernel_us FROM rollup WHERE grouping = 'section' AND "
                            f"device = -1 AND run_id IN ({ids})"):
            out.setdefault(r["run_id"], {})[r["section"]] = r["kernel_us"] or 0.0
        return out

    def export(self, run: str | int, out: IO[bytes]) -> int:
        """Write a run back as its original CSV (checked against its hash); the bytes written."""
        from warehouse.runs.export import export_run
        return export_run(self._reader(), self.resolve(run), out)

    def export_perfetto(self, run: str | int | Sequence[str | int], out: IO[bytes]) -> int:
        """Write a run's timeline as Chrome trace-event JSON (Perfetto, chrome://tracing) to ``out``; the number of
        op slices. Several runs (a multi-host capture's ranks, :meth:`ranks`): a process per rank and device. See
        :mod:`warehouse.runs.perfetto`."""
        from warehouse.runs.perfetto import write_trace
        ids = [self.resolve(r) for r in _one_or_many(run)]
        with self._reader().connect() as conn:
            return write_trace(conn, ids if len(ids) > 1 else ids[0], out)

    def export_lake(self, dest: str | Path, *, label: str | None = None,
                    progress: Callable[[int, int, int, bool], None] | None = None) -> LakeExport:
        """Export every run (of ``label``) into the Parquet lake at ``dest``, incrementally (see
        :mod:`warehouse.runs.lake`); ``progress(done, total, run_id, written)`` after each run."""
        from warehouse.runs.lake import export_lake
        return export_lake(self._reader(), dest, label=label, progress=progress)

    # ------------------------------------------------------------------------------------------- one run
    def report(self, run: str | int = "latest", label: str | None = None) -> dict[str, Any]:
        """The OPT_BASELINE report document of a run (as profile_summary.py writes it; its keys are its
        contract, so it stays a dict: :mod:`warehouse.render.report` prints it)."""
        with self._light() as conn:  # (a SQLite file at head: no SQLAlchemy to import)
            if conn is not None:
                from warehouse.store.reportdoc import report_doc
                from warehouse.store.listing import resolve_run
                doc = report_doc(conn, resolve_run(conn, str(run), label))
                if doc is not None:
                    return doc
        from warehouse.analysis.report import build_report
        return build_report(self._reader(), self.resolve(run, label))

    def perf_table(self, run: str | int | Sequence[str | int] = "latest", label: str | None = None, *,
                   section: str | None = None, start: str | None = None, end: str | None = None, merge: bool = True,
                   arch: str | None = None, sort: bool = True, id_range: str | None = None) -> PerfTable:
        """tt-perf-report's per-op table of a run: the ops of ``section`` (or after signpost ``start`` / before
        ``end``), devices merged unless not ``merge``, peaks of ``arch`` (default: the file's), sorted by host
        start unless not ``sort``; ``id_range`` (``5-10``, ``31-``, ``-12``): only those row IDs. Several runs
        (a list) are read as tt-perf-report reads several CSVs given together (the ranks of a multi-host capture:
        rows concatenated, device ids re-based; runs with different device counts are refused)."""
        from warehouse.analysis.perf import parse_id_range, perf_table
        ids = parse_id_range(id_range) if id_range is not None else None
        with self._reader().connect() as conn:
            from warehouse.store.listing import resolve_run
            runs = [resolve_run(conn, str(r), label) for r in _one_or_many(run)]
            return perf_table(conn, runs if len(runs) > 1 else runs[0], section=section, start=start, end=end,
                              merge=merge, arch=arch, sort=sort, id_range=ids)

    def perf_summary(self, table: PerfTable, by: str = "memory", per_device: bool = False) -> list[dict[str, Any]]:
        """tt-perf-report's summary (its stacked report) of a :meth:`perf_table`: device time and FLOPs % by op and
        input 0 layout (``by="memory"``), by op or by category; per device with ``per_device``."""
        from warehouse.analysis.perfsummary import stacked
        return stacked(table, by, per_device=per_device)

    def perf(self, run: str | int | Sequence[str | int] = "latest", label: str | None = None, *,
             section: str | None = None, start: str | None = None, end: str | None = None, merge: bool = True,
             arch: str | None = None, sort: bool = True, id_range: str | None = None) -> dict[str, Any]:
        """:meth:`perf_table` (same arguments) as a document: ``summary`` and ``rows`` (tt-perf-report's
        column names)."""
        from warehouse.analysis.perf import summary
        t = self.perf_table(run, label, section=section, start=start, end=end, merge=merge, arch=arch, sort=sort,
                            id_range=id_range)
        return {"summary": summary(t), "rows": t.rows}

    # ------------------------------------------------------------------------------------------- history
    def layers_in(self, block: str) -> list[str]:
        """The layers inside ``block`` (its c: layers, and its glue: ops of the block outside any layer), as the
        rollups name them; empty when no run has the block."""
        names = [r["layer"] for r in self.query(
            "SELECT DISTINCT layer FROM place WHERE block = :b AND layer IS NOT NULL AND layer <> '' "
            "ORDER BY layer", b=block)]
        glue = self.query("SELECT 1 AS x FROM rollup WHERE grouping = 'layer' AND key = :k LIMIT 1",
                          k=f"[{block} glue]")
        return names + ([f"[{block} glue]"] if glue else [])

    def compare(self, a: str | int, b: str | int, *, by: str = "layer", section: str | None = None,
                metric: str = "kernel", keys: list[str] | None = None) -> Comparison:
        """Run ``b`` against run ``a`` (ids or 'latest'), per key of grouping ``by`` in ``section`` (default:
        trace when present; 'all': the whole run), by ``metric``; only ``keys`` when given."""
        from warehouse.history.compare import compare_runs
        return compare_runs(self._reader(), str(a), str(b), by=by, section=section, metric=metric, keys=keys)

    def compare_ops(self, a: str | int, b: str | int, *, section: str | None = None) -> OpDiff:
        """Run ``b`` against run ``a`` op by op: their op sequences aligned per section and iteration, matched ops
        with their deltas, inserted and removed ops at their places. See :mod:`warehouse.history.opdiff`."""
        from warehouse.history.opdiff import diff_ops
        with self._reader().connect() as conn:
            return diff_ops(conn, self.resolve(a), self.resolve(b), section=section)

    def regressions(self, *, label: str | None = None, tags: dict[str, str] | None = None, last: int = 1,
                    window: int = 7, threshold: float = 0.05, min_us: float = 1.0, by: list[str] | None = None,
                    section: str | None = None, metrics: list[str] | None = None, keys: list[str] | None = None,
                    run: str | int | None = None, baseline_label: str | None = None,
                    baseline_tags: dict[str, str] | None = None) -> Gate:
        """The gate: each of the ``last`` newest runs (``label``, ``tags``) against the ``window`` valid runs
        before it, or one ``run`` against a baseline (``baseline_label`` / ``baseline_tags``); changes over
        ``threshold`` (a fraction) and ``min_us``. See :func:`warehouse.history.gate.find_regressions`."""
        from warehouse.history.gate import find_regressions
        return find_regressions(self._reader(), label=label, tags=tags, last=last, window=window,
                                threshold=threshold, min_us=min_us, by=by, section=section, metrics=metrics,
                                keys=keys, run=run, baseline_label=baseline_label, baseline_tags=baseline_tags)

    def changes(self, *, label: str | None = None, tags: dict[str, str] | None = None, since: str | None = None,
                until: str | None = None, fdr: float = 0.01, min_sigmas: float = 6.0, min_change: float = 0.01,
                min_us: float = 1.0, metrics: list[str] | None = None) -> ChangesResult:
        """The change points of a label's history, one per cause: a :class:`warehouse.history.changes.ChangesResult`
        (``.changes``, ``.outliers``, ``.to_json()``). See :func:`warehouse.history.changes.find_changes`."""
        from warehouse.history.changes import find_changes
        return find_changes(self._reader(), label=label, tags=tags, since=since, until=until, fdr=fdr,
                            min_sigmas=min_sigmas, min_change=min_change, min_us=min_us, metrics=metrics)

    def farm(self, *, labels: list[str] | None = None, bisect_cmd: str | None = None, **options: Any) -> Farm:
        """Every label's (or ``labels``') changes, grouped where one cause moved several, each with its last good
        and first bad runs and their commit tags. See :func:`warehouse.history.farm.find_farm`."""
        from warehouse.history.farm import find_farm
        return find_farm(self._reader(), labels=labels, bisect_cmd=bisect_cmd, **options)

    def trend(self, *, by: str = "block", section: str | None = None, top: int = 10, label: str | None = None,
              tags: dict[str, str] | None = None, last: int | None = None, metric: str = "kernel",
              keys: list[str] | None = None, all_models: bool = False) -> Trend:
        """A metric of ``keys`` (else the ``top`` keys of the newest run) over the ``last`` runs (None: all);
        runs of another model are left out unless ``all_models``."""
        from warehouse.history.trend import trend
        return trend(self._reader(), by=by, section=section, top=top, label=label, tags=tags, last=last,
                     metric=metric, keys=keys, all_models=all_models)

    def decisions(self, run_ids: list[int] | None = None) -> list[Decision]:
        """Every triage decision (about ``run_ids`` only, when given), oldest night first."""
        from warehouse.history.triage import decisions
        with self._reader().connect() as conn:
            return decisions(conn, run_ids)

    # ------------------------------------------------------------------------------------------- SQL
    @contextlib.contextmanager
    def sql(self, statement: str, *, timeout_s: float | None = 60.0, max_rows: int | None = 100_000,
            max_value_bytes: int | None = 16 << 20, max_result_bytes: int | None = 512 << 20
            ) -> Iterator[SqlResult]:
        """One read-only statement, streamed: ``with wh.sql(s) as res: res.columns, res.rows``. Refused: writes,
        ATTACH, COPY, SET, server functions; stopped after ``max_rows`` (``res.truncated``) or ``timeout_s``."""
        from warehouse.store.query import stream_sql
        with stream_sql(self._reader(), statement, timeout_s=timeout_s, max_rows=max_rows,
                        max_value_bytes=max_value_bytes, max_result_bytes=max_result_bytes) as res:
            yield res

    def query(self, sql: str, max_rows: int | None = None, **params: Any) -> list[dict[str, Any]]:
        """One read-only SELECT (``:name`` parameters); a list of dicts."""
        from warehouse.store.query import stream_sql
        with stream_sql(self._reader(), sql, params, max_rows=max_rows) as res:
            return [dict(zip(res.columns, r)) for r in res.rows]

    def frame(self, sql: str, **params: Any) -> Any:
        """:meth:`query` as a pandas DataFrame (needs pandas)."""
        import pandas as pd
        return pd.DataFrame(self.query(sql, **params))

    def schema(self) -> list[dict[str, Any]]:
        """Tables and views with their columns and declared types."""
        from warehouse.store.query import describe_schema
        return describe_schema(self._reader())

    # ------------------------------------------------------------------------------------------- upkeep
    def check(self, progress: Callable[[int, int], None] | None = None) -> list[str]:
        """Verify storage, counts, orphans, rollups, reports and exports; the problems found (none: ok)."""
        from warehouse.runs.maintenance import check_warehouse
        return check_warehouse(self._reader(), progress)

    def rebuild_series(self) -> int:
        """Build every run's history series (table ``run_series``) again from its rollups; how many runs."""
        from warehouse.runs.maintenance import rebuild_series
        return rebuild_series(self._writer())

    def check_schema(self) -> list[str]:
        """The differences between the tables and the models (alembic check)."""
        from warehouse.store.db import check_schema
        return check_schema(self._writer())

    def revision(self) -> tuple[str | None, str, bool]:
        """(the warehouse's revision or None, the code's head, whether this code knows the revision)."""
        from warehouse.store.db import current_revision, make_engine
        from warehouse.store.revisions import head_revision_fast, known_revisions
        engine = make_engine(self.url)
        try:
            with engine.connect() as conn:
                rev = current_revision(conn)
        finally:
            engine.dispose()
        return rev, head_revision_fast(), rev is None or rev in known_revisions()
