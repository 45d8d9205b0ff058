"""Run -> CSV: every cell back in its place, byte for byte for files tt-metal wrote."""
from __future__ import annotations

import hashlib
import io
import json
from itertools import islice
from operator import itemgetter
from typing import IO, Any
from collections.abc import Callable, Iterator, Sequence

from sqlalchemy import Connection, Engine, select

from warehouse.store import schema as t
from warehouse.store.cells import iter_chunk_rows
from warehouse.registry.columns import StoredOnce, stored_once
from warehouse.capture.cellcodec import decode_volatile
from warehouse.capture.csvfile import write_rows
from warehouse.store.db import read_snapshot
from warehouse.errors import NotFound, WarehouseError


class _Tuples:
    """Decoded cell tuples, with their interned long strings resolved, fetched once each."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.cache: dict[int, list[str]] = {}
        self.texts: dict[int, str] = {}

    def load(self, ids: set[int]) -> None:
        missing = [i for i in ids if i not in self.cache]
        for k in range(0, len(missing), 500):
            rows = self.conn.execute(select(t.cell_tuple.c.id, t.cell_tuple.c.cells)
                                     .where(t.cell_tuple.c.id.in_(missing[k:k + 500]))).all()
            decoded = {i: json.loads(c) for i, c in rows}
            need = {v for cells in decoded.values() for v in cells if isinstance(v, int)} - self.texts.keys()
            need_l = list(need)
            for j in range(0, len(need_l), 500):
                self.texts.update(self.conn.execute(select(t.text_value.c.id, t.text_value.c.value)
                                                    .where(t.text_value.c.id.in_(need_l[j:j + 500]))).all())
            for i, cells in decoded.items():
                self.cache[i] = [self.texts[v] if isinstance(v, int) else v for v in cells]


def iter_rows(conn: Connection, run_id: int, header: list[str], static_idx: list[int], chunk: int = 20000
              ) -> Iterator[list[str]]:
    """The run's rows in file order, as lists of cells (read in chunks: memory stays flat)."""
    for _, row in iter_numbered_rows(conn, run_id, len(header), static_idx, chunk, header=header):
        yield row


def iter_numbered_rows(conn: Connection, run_id: int, width: int, static_idx: list[int], chunk: int = 20000,
                       source: Iterator[tuple[int, int, Any]] | None = None, header: list[str] | None = None
                       ) -> Iterator[tuple[int, list[str]]]:
    """:func:`iter_rows` with each row's ``row_no``; ``source`` gives ``(row_no, static_id, cells)`` instead of
    the stored chunks (the migrations read an older schema's table: see migrations/legacy.py). Cells stored as
    their op's typed value (JSON null: :func:`warehouse.registry.columns.stored_once`) are read from the op table, which
    needs the run's ``header``."""
    static = set(static_idx)
    volatile_idx = [i for i in range(width) if i not in static]
    ns, nv = len(static_idx), len(volatile_idx)
    once = stored_once(header, volatile_idx) if header is not None else []
    by_slot = {o.slot: k for k, o in enumerate(once)}
    slots = sorted((j, k + 1) for j, k in by_slot.items())  # (k + 1: a typed row starts with its row_no)
    # a row is its static cells then its volatile ones, put in file order by one C-level permutation
    where = {c: k for k, c in enumerate(static_idx)} | {c: ns + k for k, c in enumerate(volatile_idx)}
    order = [where[c] for c in range(width)]
    # (itemgetter of one index gives the item itself, not a tuple: a file of one column keeps its list as it is)
    place: Callable[[list], Sequence[str]] = itemgetter(*order) if width > 1 else (lambda cells: cells[:width])
    tuples = _Tuples(conn)
    if source is None:
        source = iter_chunk_rows(conn, run_id)
    while True:
        rows = list(islice(source, chunk))
        if not rows:
            return
        tuples.load({r[1] for r in rows})
        typed: dict[int, tuple] | None = None
        for row_no, static_id, cells in rows:
            fixed = tuples.cache[static_id]
            if len(fixed) != ns:
                fixed = (fixed + [""] * ns)[:ns]
            if isinstance(cells, str):
                cells = decode_volatile(cells, nv)
            elif len(cells) != nv:
                cells = (cells + [""] * nv)[:nv]
            if None in cells:
                if typed is None:
                    typed = _typed_values(conn, run_id, once, rows[0][0], rows[-1][0])
                cells = _fill(cells, typed.get(row_no), slots, run_id, row_no)
            yield row_no, list(place(fixed + cells))


def _typed_values(conn: Connection, run_id: int, once: list[StoredOnce], first: int, last: int
                  ) -> dict[int, tuple]:
    """The stored-once typed values of the run's ops in rows ``first`` .. ``last``, by row: ``(row_no, *values)``."""
    if not once:
        return {}
    cols = [t.op.c.row_no] + [t.op.c[o.column.name] for o in once]
    rows = conn.execute(select(*cols).where(t.op.c.run_id == run_id, t.op.c.row_no >= first,
                                            t.op.c.row_no <= last)).all()  # (one fetch, not a row at a time)
    return {r[0]: r for r in rows}  # (each row's values after its row_no: see _fill)


def _fill(cells: list, values: tuple | None, slots: list[tuple[int, int]], run_id: int, row_no: int) -> list:
    """A row's volatile cells with its nulls printed from its op's typed values (``slots``: (a volatile slot, its
    index in ``values``) for every stored-once column; ``values`` as :func:`_typed_values` gives them)."""
    if not isinstance(cells, list):
        cells = list(cells)  # (a chunk's rows are its own lists: filled in place)
    if values is not None:
        for j, k in slots:
            if cells[j] is None and (v := values[k]) is not None:
                cells[j] = str(int(v))  # (what typed_text prints)
    if None in cells:
        raise WarehouseError(f"run {run_id}, row {row_no}: a cell stored as its op's typed value has no "
                             "value in the op table (the run is damaged); `warehouse check` lists damage")
    return cells


def export_run(engine: Engine, run_id: int, out: IO[bytes]) -> int:
    """Write the run's CSV to the binary stream ``out``; returns the number of data rows written.

    The run is read in one snapshot (:func:`warehouse.store.db.read_snapshot`), and what was written is checked: as
    many rows as ``run.row_count`` and, for a run whose export is exact, the sha256 of the original file. A
    mismatch (a run damaged, or cut by a concurrent delete on a back end without snapshots) raises
    :class:`WarehouseError`: the caller must not keep the output."""
    with read_snapshot(engine) as conn:
        return export_conn(conn, run_id, out)


def export_conn(conn: Connection, run_id: int, out: IO[bytes]) -> int:
    """:func:`export_run` on an open connection (its transaction is the snapshot)."""
    r = conn.execute(select(t.run).where(t.run.c.id == run_id)).mappings().first()
    if r is None:
        raise NotFound(f"no run {run_id}; `warehouse runs` lists them")
    header = json.loads(r["columns"])
    static_idx = json.loads(r["static_columns"])
    sink = _Hashing(out)
    if r["bom"]:
        sink.write(b"\xef\xbb\xbf")
    n = 0

    def rows() -> Iterator[list[str]]:
        nonlocal n
        for row in iter_rows(conn, run_id, header, static_idx):
            n += 1
            yield row

    # Written in slices so that memory stays flat; the last newline is held back for files without one.
    write_rows(_Sink(sink, r["final_newline"], r["newline"]), header, rows(),  # type: ignore[arg-type]
               r["newline"])  # (a TextIOBase that csv.writer accepts)
    if n != r["row_count"]:
        raise WarehouseError(f"run {run_id}: {n} rows read back, the run has {r['row_count']} (it was damaged or "
                             "deleted while it was read); nothing was kept. `warehouse check` lists damage")
    if r["export_exact"] and sink.hash.hexdigest() != r["sha256"]:
        raise WarehouseError(f"run {run_id}: the export does not hash to the file's sha256 {r['sha256'][:12]}... "
                             "(the run is damaged); nothing was kept. `warehouse check` lists damage")
    return n


class _Hashing:
    """A binary stream that hashes what it passes on."""

    def __init__(self, out: IO[bytes]):
        self.out, self.hash = out, hashlib.sha256()

    def write(self, b: bytes) -> int:
        self.hash.update(b)
        return self.out.write(b)


class _Sink(io.TextIOBase):
    """A text stream onto a binary one that drops the file's last newline when the original had none."""

    def __init__(self, out: Any, final_newline: bool, newline: str):
        self.out, self.final_newline, self.newline = out, final_newline, newline
        self.held = ""

    def write(self, s: str) -> int:
        if not self.final_newline:
            s = self.held + s
            self.held = s[-len(self.newline):] if s.endswith(self.newline) else ""
            if self.held:
                s = s[: -len(self.newline)]
        self.out.write(s.encode("utf-8", "surrogatepass"))
        return len(s)
