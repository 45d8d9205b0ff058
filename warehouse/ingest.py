"""CSV -> warehouse: one transaction per file, streamed in chunks, idempotent by content hash."""
from __future__ import annotations

import glob
import json
import math
import re
import time
from array import array
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Iterator

from sqlalchemy import Connection, Engine, select, text, update
from sqlalchemy.exc import IntegrityError

from warehouse import schema as t
from warehouse.categories import category, is_compute
from warehouse.csvfile import LONG_TEXT, CsvReader, Layout, digest, encode_inline, sha256_of
from warehouse.db import write_tx
from warehouse.devicelog import resolve_freq
from warehouse.errors import InputError, UsageError
from warehouse.signposts import Attribution, SectionSpan

CHUNK = 5000
_CAPTURED = re.compile(r"_(\d{4})_(\d{2})_(\d{2})_(\d{2})_(\d{2})_(\d{2})")
_INT64 = 2 ** 63


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


def find_csvs(paths: Iterable[str]) -> Iterator[Path]:
    """Files as given; folders searched recursively for ``ops_perf_results*.csv``; globs expanded.
    A path that matches nothing is yielded as is, so that ingest reports it missing."""
    seen: set[Path] = set()
    for p in paths:
        matches = [Path(m) for m in sorted(glob.glob(p, recursive=True))] if glob.has_magic(p) else [Path(p)]
        if not matches:
            matches = [Path(p)]
        for m in matches:
            found = sorted(m.rglob("ops_perf_results*.csv")) if m.is_dir() else [m]
            for f in found:
                if f.resolve() not in seen:
                    seen.add(f.resolve())
                    yield f


def captured_at(file_name: str) -> datetime | None:
    """The capture time tt-metal puts in the file name (``_YYYY_MM_DD_HH_MM_SS``), if any."""
    m = _CAPTURED.search(file_name)
    if not m:
        return None
    try:
        return datetime(*(int(g) for g in m.groups()))
    except ValueError:
        return None


def _float(s: str) -> float | None:
    """A duration or cycle cell; None when empty or not a finite number (the report counts it as 0)."""
    if not s:
        return None
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _int(s: str) -> int | None:
    if not s:
        return None
    try:
        v = int(s)
    except ValueError:
        f = _float(s)
        if f is None or not f.is_integer():
            return None
        v = int(f)
    return v if -_INT64 <= v < _INT64 else None


def _logical(v: str) -> str:
    """'32[16]' (padded[logical]) -> '16'; '7' -> '7'; anything else '?' (as the oracle)."""
    m = re.match(r"\s*([0-9]+)(?:\[([0-9]+)\])?", v)
    return (m.group(2) or m.group(1)) if m else "?"


class _Cells:
    """Typed values of one row, by header name."""

    def __init__(self, layout: Layout):
        c = layout.col
        self.name = c(layout.name_column)
        self.op_type = c("OP TYPE")
        self.attributes = c("ATTRIBUTES")
        self.host_start = c("HOST START TS")
        self.cols = {k: c(v) for k, v in {
            "device_id": "DEVICE ID", "global_call_count": "GLOBAL CALL COUNT",
            "kernel_ns": "DEVICE KERNEL DURATION [ns]", "fw_ns": "DEVICE FW DURATION [ns]",
            "op2op_ns": "OP TO OP LATENCY [ns]", "fw_start_cycle": "DEVICE FW START CYCLE",
            "fw_end_cycle": "DEVICE FW END CYCLE", "host_start_ns": "HOST START TS", "host_end_ns": "HOST END TS",
            "cores": "CORE COUNT", "fidelity": "MATH FIDELITY", "trace_id": "METAL TRACE ID",
            "replay_session": "METAL TRACE REPLAY SESSION ID", "input0_memory": "INPUT_0_MEMORY",
            "output0_memory": "OUTPUT_0_MEMORY", "arch": "DEVICE ARCH"}.items()}
        # The oracle reads INPUT_0_<d>_PAD[LOGICAL] when it is non-empty, else INPUT_0_<d>.
        self.shape = [(c(f"INPUT_0_{d}_PAD[LOGICAL]"), c(f"INPUT_0_{d}")) for d in "WZYX"]
        self.ints = ("device_id", "global_call_count", "host_start_ns", "host_end_ns", "cores")
        self.floats = ("kernel_ns", "fw_ns", "op2op_ns", "fw_start_cycle", "fw_end_cycle")
        self.texts = ("fidelity", "trace_id", "replay_session", "input0_memory", "output0_memory")

    def typed(self, cells: list[str]) -> dict:
        cols = self.cols
        out: dict = {}
        for k in self.floats:
            i = cols[k]
            out[k] = _float(cells[i].strip()) if i is not None else None
        for k in self.ints:
            i = cols[k]
            out[k] = _int(cells[i].strip()) if i is not None else None
        for k in self.texts:
            i = cols[k]
            out[k] = (cells[i].strip() or None) if i is not None else None
        dims = []
        for pad, plain in self.shape:
            v = (cells[pad] if pad is not None else "") or (cells[plain] if plain is not None else "")
            dims.append(_logical(v))
        out["input0_shape"] = "x".join(dims)
        out["op_type"] = cells[self.op_type] if self.op_type is not None else None
        return out


class _Interner:
    """Get-or-create ids of interned strings, cell tuples and op codes, cached for the whole file."""

    def __init__(self, conn: Connection, layout: Layout):
        self.conn = conn
        self.static_idx = layout.static_idx
        self.texts: dict[str, int] = {}
        self.tuples: dict[tuple, int] = {}
        self.codes: dict[str, tuple[int, bool]] = {}
        dialect = conn.dialect.name
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        elif dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:  # pragma: no cover - other back ends are not supported yet
            raise UsageError(f"back end {dialect!r} is not supported (use SQLite or PostgreSQL)")
        self._insert = insert

    def _get_or_create(self, table, key_col, key, values: dict) -> int:
        q = select(table.c.id).where(key_col == key)
        found = self.conn.execute(q).scalar()
        if found is None:
            self.conn.execute(self._insert(table).values(**values).on_conflict_do_nothing())
            found = self.conn.execute(q).scalar_one()
        return found

    def text_id(self, s: str) -> int:
        i = self.texts.get(s)
        if i is None:
            d = digest(s)
            i = self.texts[s] = self._get_or_create(t.text_value, t.text_value.c.digest, d,
                                                    {"digest": d, "value": s})
        return i

    def tuple_id(self, cells: list[str]) -> int:
        key = tuple([cells[i] for i in self.static_idx])
        i = self.tuples.get(key)
        if i is None:
            enc = json.dumps([self.text_id(c) if len(c) > LONG_TEXT else c for c in key], ensure_ascii=False)
            d = digest(enc)
            i = self.tuples[key] = self._get_or_create(t.cell_tuple, t.cell_tuple.c.digest, d,
                                                       {"digest": d, "cells": enc})
        return i

    def op_code(self, name: str) -> tuple[int, bool]:
        v = self.codes.get(name)
        if v is None:
            comp = is_compute(name)
            i = self._get_or_create(t.op_code, t.op_code.c.name, name,
                                    {"name": name, "category": category(name), "is_compute": comp})
            v = self.codes[name] = (i, comp)
        return v


class _FileIngest:
    """The state of one file's ingest inside its transaction."""

    def __init__(self, conn: Connection, reader: CsvReader, run_id: int):
        self.conn, self.reader, self.run_id = conn, reader, run_id
        self.layout = reader.layout
        self.cells = _Cells(self.layout)
        self.intern = _Interner(conn, self.layout)
        self.attr = Attribution()
        self.volatile_idx = self.layout.volatile_idx
        self.ops: list[dict] = []
        self.signposts: list[dict] = []
        self.pos: dict[str, int] = {}
        self.codes: dict[str, array] = {"eager": array("q"), "trace": array("q")}
        self.section_ids: dict[str, list[int]] = {"eager": [], "trace": []}
        self.n_ops = self.n_signposts = self.n_sections = 0
        self.warnings: list[tuple[int | None, str | None, str]] = []
        self.arch: str | None = None

    def _store_section(self, span: SectionSpan) -> int:
        self.n_sections += 1
        return self.conn.execute(t.section.insert().values(
            run_id=self.run_id, name=span.name, kind=span.kind, ordinal=span.ordinal,
            start_row=span.start_row, end_row=span.end_row).returning(t.section.c.id)).scalar_one()

    def _signpost(self, row_no: int, cells: list[str]) -> None:
        c = self.cells
        name = cells[c.name]
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
        msg = cells[c.attributes].strip() if c.attributes is not None else ""
        self.signposts.append({
            "run_id": self.run_id, "row_no": row_no, "name": name, "message": msg or None,
            "host_ts": _int(cells[c.host_start].strip()) if c.host_start is not None else None,
            "kind": ev.kind, "static_id": self.intern.tuple_id(cells),
            "cells": encode_inline([cells[i] for i in self.volatile_idx])})
        self.n_signposts += 1

    def _op(self, row_no: int, cells: list[str]) -> None:
        a = self.attr
        name = cells[self.cells.name]
        code_id, _ = self.intern.op_code(name)
        rec = self.cells.typed(cells)
        sec = a.section
        if sec is not None:
            p = self.pos.get(sec.name, 0)
            self.pos[sec.name] = p + 1
            self.codes[sec.name].append(code_id)
            rec.update(section_id=sec.key, pos=p, block=a.block or None, layer=a.layer or None,
                       attribution="signpost" if (a.block or a.layer) else None)
        else:
            rec.update(section_id=None, pos=None, block=a.block or None, layer=a.layer or None,
                       attribution="signpost" if (a.block or a.layer) else None)
        if self.arch is None:
            i = self.cells.cols["arch"]
            self.arch = (cells[i].strip() or None) if i is not None else None
        rec.update(run_id=self.run_id, row_no=row_no, marker_row=a.marker_row, op_code_id=code_id,
                   static_id=self.intern.tuple_id(cells),
                   cells=encode_inline([cells[i] for i in self.volatile_idx]))
        self.ops.append(rec)
        self.n_ops += 1

    def _flush(self) -> None:
        if self.signposts:
            self.conn.execute(t.signpost.insert(), self.signposts)
            self.signposts = []
        if self.ops:
            self.conn.execute(t.op.insert(), self.ops)
            self.ops = []

    def run(self, progress: Callable[[int], None] | None) -> bool:
        """Stream every row into the database; returns whether the trace inherits the eager attribution."""
        name_i = self.cells.name
        type_i = self.cells.op_type
        for row_no, cells in self.reader.rows():
            if type_i is not None and cells[type_i] == "signpost":
                self._signpost(row_no, cells)
            else:
                self._op(row_no, cells)
            if len(self.ops) >= CHUNK:
                self._flush()
                if progress:
                    progress(self.reader.bytes_read)
        self._flush()
        spans, warnings = self.attr.finish()
        for span in spans:
            self._store_section(span)
        self.warnings += [(None, None, w) for w in warnings]
        # the reader's own warnings (duplicate columns, short rows) first, in row order with ours
        self.warnings = sorted([(w.row, w.column, w.message) for w in self.reader.warnings] + self.warnings,
                               key=lambda w: (w[0] is None, w[0] or 0))
        return self._inherit_trace()

    def _inherit_trace(self) -> bool:
        """The oracle's rule: the replay inherits block and layer of the eager op at the same position, only
        when both op-code sequences are identical."""
        eager, trace = self.codes["eager"], self.codes["trace"]
        same = eager == trace
        if same and len(trace):
            e = t.op.alias("e")
            eager_ids = self.section_ids["eager"]

            def from_eager(col):
                return (select(col).where(e.c.section_id.in_(eager_ids), e.c.pos == t.op.c.pos)
                        .scalar_subquery())
            self.conn.execute(update(t.op).where(t.op.c.section_id.in_(self.section_ids["trace"]))
                              .values(block=from_eager(e.c.block), layer=from_eager(e.c.layer),
                                      attribution="eager_position"))
        return same


# The stable identity of an op across runs: (section name, block, layer, op code, occurrence).
_OCCURRENCE = """
UPDATE op SET occurrence = n.k FROM (
  SELECT o.id, ROW_NUMBER() OVER (
           PARTITION BY COALESCE(s.name, ''), COALESCE(o.block, ''), COALESCE(o.layer, ''), o.op_code_id
           ORDER BY o.row_no) - 1 AS k
  FROM op o LEFT JOIN section s ON s.id = o.section_id WHERE o.run_id = :run) n
WHERE n.id = op.id
"""


def ingest_file(engine: Engine, path: Path, *, label: str | None = None, tags: dict[str, str] | None = None,
                freq_mhz: float | None = None, progress: Callable[[int], None] | None = None) -> IngestResult:
    """Store one CSV as a run, whole or not at all. Content already stored gives ``existing=True``."""
    t0 = time.perf_counter()
    path = Path(path)
    sha, size = sha256_of(path)
    with engine.connect() as conn:
        found = conn.execute(select(t.run.c.id).where(t.run.c.sha256 == sha)).scalar()
    if found is not None:
        return IngestResult(str(path), found, existing=True)
    freq, freq_source, log_arch = resolve_freq(path, freq_mhz)
    try:
        with write_tx(engine) as conn, CsvReader(path) as reader:
            found = conn.execute(select(t.run.c.id).where(t.run.c.sha256 == sha)).scalar()
            if found is not None:  # another process stored it while we waited for the write lock
                return IngestResult(str(path), found, existing=True)
            lay = reader.layout
            run_id = conn.execute(t.run.insert().values(
                sha256=sha, source_path=str(path.resolve()), file_name=path.name, size_bytes=size, row_count=0,
                op_count=0, signpost_count=0, columns=json.dumps(lay.header, ensure_ascii=False),
                static_columns=json.dumps(lay.static_idx), name_column=lay.name_column, newline=lay.newline,
                final_newline=True, bom=lay.bom, export_exact=True, captured_at=captured_at(path.name),
                ingested_at=datetime.now(timezone.utc).replace(tzinfo=None), freq_mhz=freq,
                freq_source=freq_source, arch=log_arch, label=label, trace_matches_eager=False,
            ).returning(t.run.c.id)).scalar_one()
            if tags:
                conn.execute(t.run_tag.insert(), [{"run_id": run_id, "key": k, "value": v} for k, v in tags.items()])
            job = _FileIngest(conn, reader, run_id)
            same = job.run(progress)
            conn.execute(text(_OCCURRENCE), {"run": run_id})
            if job.warnings:
                conn.execute(t.run_warning.insert(), [{"run_id": run_id, "row_no": r, "column_name": c,
                                                       "message": m} for r, c, m in job.warnings])
            seconds = time.perf_counter() - t0
            conn.execute(update(t.run).where(t.run.c.id == run_id).values(
                row_count=reader.rows_read, op_count=job.n_ops, signpost_count=job.n_signposts,
                newline=lay.newline, final_newline=reader.final_newline,
                export_exact=reader.exact, trace_matches_eager=same, arch=log_arch or job.arch, seconds=seconds))
    except IntegrityError:
        # Two processes raced on the same content: the other one committed first.
        with engine.connect() as conn:
            found = conn.execute(select(t.run.c.id).where(t.run.c.sha256 == sha)).scalar()
        if found is None:
            raise
        return IngestResult(str(path), found, existing=True)
    return IngestResult(str(path), run_id, ops=job.n_ops, signposts=job.n_signposts, sections=job.n_sections,
                        seconds=seconds, warnings=[m for _, _, m in job.warnings])


def parse_tags(items: Iterable[str]) -> dict[str, str]:
    """``key=value`` strings to a dict; a malformed one is a usage error."""
    out: dict[str, str] = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"--tag {it!r}: expected key=value")
        out[k.strip()] = v
    return out
