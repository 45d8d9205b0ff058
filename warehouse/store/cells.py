"""The export cells of rows, stored in compressed chunks of consecutive rows (table ``cell_chunk``).

A row's *volatile* cells (durations, cycles, timestamps: see :mod:`warehouse.store.schema`) are a JSON array of strings
(:func:`warehouse.capture.cellcodec.encode_volatile`). ``CHUNK_ROWS`` consecutive rows make one chunk: the JSON array of
those arrays, with each row's ``cell_tuple`` id in ``static_ids`` and its ``row_no`` implied by ``first_row``
(or listed in ``row_nos`` when the rows are not consecutive).

Compression follows SQLite's ``sqlar`` convention: ``cells`` is zlib-compressed exactly when its length differs
from ``raw_size``. So SQL reads it with ``sqlar_uncompress(cells, raw_size)``, a function that the stock
``sqlite3`` shell has built in and that :func:`register_sqlite_functions` gives every connection of the
warehouse: the view ``csv_cell`` works in both. PostgreSQL stores the chunk's text uncompressed (``raw_size`` ==
its length) and compresses it itself (TOAST), so its SQL reads it with ``convert_from``.
"""
from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, select

from warehouse.store import dialect
from warehouse.store import schema as t
from warehouse.errors import WarehouseError
# (the chunks are cut and packed with no SQLAlchemy: the reader process imports only warehouse.capture.packing)
from warehouse.capture.packing import CHUNK_ROWS, LEVEL, cut_chunks, pack_cells, sqlar_uncompress  # noqa: F401


def register_sqlite_functions(dbapi_conn: Any) -> None:
    """The SQL functions the views need on every SQLite connection (what the sqlite3 shell has built in)."""
    dbapi_conn.create_function("sqlar_uncompress", 2, sqlar_uncompress, deterministic=True)
    dbapi_conn.create_function("key_digest", 2, dialect.key_digest, deterministic=True)  # (ingest's rollup keys)


def static_ids_json(ids: list[int]) -> str:
    """A chunk's ``static_ids``: its rows' ``cell_tuple`` ids."""
    return json.dumps(ids, separators=(",", ":"))


def pack(rows: list[tuple[int, int, str]], compress: bool) -> dict[str, Any]:
    """One chunk's column values from ``(row_no, static_id, volatile JSON)`` rows in file order."""
    return {**pack_cells([r[0] for r in rows], [r[2] for r in rows], compress),
            "static_ids": static_ids_json([r[1] for r in rows])}


def unpack(first_row: int, row_nos: str | None, static_ids: str, raw_size: int, cells: bytes
           ) -> list[tuple[int, int, list[str]]]:
    """The ``(row_no, static_id, volatile cells)`` of one stored chunk, in file order. A chunk that cannot be
    read (damaged storage) raises :class:`WarehouseError` naming it."""
    try:
        text = sqlar_uncompress(cells, raw_size)
        arrays = json.loads((text or b"").decode("utf-8", "surrogatepass"))
        statics = json.loads(static_ids)
        nos = json.loads(row_nos) if row_nos else list(range(first_row, first_row + len(arrays)))
        if not (isinstance(arrays, list) and len(arrays) == len(statics) == len(nos)
                and all(isinstance(a, list) for a in arrays)):
            raise ValueError("its rows, cell tuples and row numbers do not match")
    except (zlib.error, ValueError, TypeError) as e:
        raise WarehouseError(f"the stored cells of the chunk starting at row {first_row} cannot be read ({e})"
                             ) from None
    return list(zip(nos, statics, arrays))


def compresses(conn: Connection | Engine) -> bool:
    """Whether this back end stores chunks compressed by us (SQLite) or compresses them itself (PostgreSQL)."""
    return dialect.compresses_chunks(conn)


class ChunkWriter:
    """Collects a run's rows and writes them as chunks (inside the ingest's transaction)."""

    def __init__(self, conn: Connection, run_id: int):
        self.conn, self.run_id = conn, run_id
        self.compress = compresses(conn)
        self.rows: list[tuple[int, int, str]] = []

    def add(self, rows: list[tuple[int, int, str]], final: bool = False) -> None:
        """Add rows in file order; full chunks are written, and the rest too when ``final``."""
        self.rows += rows
        chunks = cut_chunks(self.rows, final)
        if chunks:
            self.conn.execute(t.cell_chunk.insert(), [{"run_id": self.run_id, **pack(c, self.compress)}
                                                      for c in chunks])


def iter_chunk_rows(conn: Connection, run_id: int, batch: int = 16) -> Iterator[tuple[int, int, list[str]]]:
    """Every stored row of a run in file order: ``(row_no, static_id, volatile cells)`` (trailing empty cells
    left out). Reads ``batch`` chunks at a time: memory stays flat."""
    c = t.cell_chunk.c
    last = -1
    while True:
        chunks = conn.execute(select(c.first_row, c.row_nos, c.static_ids, c.raw_size, c.cells)
                              .where(c.run_id == run_id, c.first_row > last).order_by(c.first_row)
                              .limit(batch)).all()
        if not chunks:
            return
        for ch in chunks:
            try:
                rows = unpack(*ch)
            except WarehouseError as e:
                raise WarehouseError(f"run {run_id}: {e}; `warehouse check` lists the damage") from None
            yield from rows
        last = chunks[-1][0]


@dataclass
class ChunkSurvey:
    """What ``warehouse check`` learns from one read of every chunk."""

    rows: dict[int, int] = field(default_factory=dict)  # rows stored per run
    static_ids: set[int] = field(default_factory=set)  # every cell_tuple id that a stored row names
    problems: list[str] = field(default_factory=list)  # chunks that cannot be read back


def survey_chunks(conn: Connection) -> ChunkSurvey:
    """Inflate and parse every chunk once: rows per run, the cell tuples they name, the damaged chunks."""
    out = ChunkSurvey()
    c = t.cell_chunk.c
    for run_id, first, row_nos, static_ids, raw_size, cells in conn.execute(
            select(c.run_id, c.first_row, c.row_nos, c.static_ids, c.raw_size, c.cells)
            .order_by(c.run_id, c.first_row)):
        try:
            rows = unpack(first, row_nos, static_ids, raw_size, cells)
        except WarehouseError as e:
            out.problems.append(f"run {run_id}: {e}")
            continue
        out.rows[run_id] = out.rows.get(run_id, 0) + len(rows)
        out.static_ids.update(r[1] for r in rows)
    return out


