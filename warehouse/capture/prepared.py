"""A capture's rows as the reading half of ingest hands them over (see :mod:`warehouse.capture.rowprep`): the typed
op columns and how each parses, :class:`Batch` es of prepared rows with their export-cell :class:`Chunk` s and the
:class:`Finish`, and the :class:`Preparer` whose state both readers share: the line path
(:mod:`warehouse.capture.rowprep`) and the columnar one (:mod:`warehouse.capture.arrowprep`), which hands over to the
line path where it stops."""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import isfinite
from operator import itemgetter
from typing import Any

from warehouse.capture.cellcodec import NULL, encode_volatile
from warehouse.capture.csvfile import CsvReader, Layout, RowWarning, cells_getter
from warehouse.capture.packing import cut_chunks, pack_cells
from warehouse.capture.perffacts import Analyzer, PerfShape
from warehouse.registry.columns import AT, DIGITS, FLOAT, INT32, INT64, OP_COLUMNS, TEXT, stored_once


BATCH = 2000  # rows per batch: the consumer writes a batch at a time


# a column of cells, each followed by a newline, every one canonical for its kind (see
# warehouse.registry.columns.StoredOnce)
_ALL_CANONICAL = {kind: re.compile(rf"(?:(?:0|-?[1-9][0-9]{{0,{digits - 1}}})\n)*")
                  for kind, digits in DIGITS.items()}


MAX_TOKENS = 20_000  # static tuples remembered; past it the table restarts (tokens keep growing, never reused)


_INT64 = 2 ** 63


_INT32 = 2 ** 31


def _float(s: str) -> float | None:
    """A duration or cycle cell; None when empty or not a finite number (the report counts it as 0)."""
    if not s:
        return None
    try:
        v = float(s)  # float() ignores surrounding blanks, as the oracle's strip() does
    except ValueError:
        return None
    return v if isfinite(v) else None


def parse_int(s: str) -> int | None:
    """An integer cell (a float with no fraction counts); None when empty, not a number or beyond 64 bits."""
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


def _int32(s: str) -> int | None:
    """A device id or core count: 32-bit columns on every back end (a larger value is not a number here)."""
    v = parse_int(s)
    return v if v is not None and -_INT32 <= v < _INT32 else None


# The typed op columns (warehouse.registry.columns), in insert order, and how each kind parses. The static cells the
# report prints (op type, fidelity, input 0 shape and memory, output 0 memory) are facts of the row's perf_shape,
# stored once per distinct static tuple, not per op.
TYPED = OP_COLUMNS


PARSE: dict[str, Callable[[str], object]] = {FLOAT: _float, INT64: parse_int, INT32: _int32, TEXT: str.strip}


REPLAY = AT.replay_session


ROW_TYPED = 3  # where a batch row holds its typed tuple (None: the row is a signpost)


class Cells:
    """Typed values of one row, found by header name once per file. ``row`` must end with one extra empty
    cell: a column the file lacks reads that cell."""

    def __init__(self, layout: Layout):
        c = layout.col
        none = len(layout.header)  # the extra empty cell

        def at(name: str) -> int:
            i = c(name)
            return none if i is None else i
        self.name: int = layout.index[layout.name_column]  # the header was checked to have it
        self.op_type = c("OP TYPE")
        self.attributes = c("ATTRIBUTES")
        self.host_start = c("HOST START TS")
        self.arch = c("DEVICE ARCH")
        self.pad = any(c(k.csv) is None for k in TYPED)  # whether rows need the extra empty cell
        self._get = itemgetter(*[at(k.csv) for k in TYPED])
        self._kinds = [k.kind for k in TYPED]
        self._parse = [PARSE[k.kind] for k in TYPED]
        self._headers = [k.csv for k in TYPED]
        self.unparsable: dict[str, int] = {}  # header -> cells that were not numbers (stored as NULL)
        self.first_unparsable: dict[str, int] = {}  # header -> the first such cell's row

    def raw(self, row: list[str]) -> tuple[str, ...]:
        """The row's cells of the TYPED columns, unparsed."""
        return self._get(row)

    def typed(self, raws: list[tuple[str, ...]], rows: Callable[[], Sequence[int]] | None = None) -> list[tuple]:
        """The TYPED values of rows (from :meth:`raw`), parsed (None for empty or unparsable cells). Column by
        column: a list comprehension per column is the fast path, and only a column that holds something odd (a
        cell that is not a number, NaN, an integer that may overflow) is parsed cell by cell. ``rows()``: the
        rows' numbers, asked for only when a cell is not a number (its warning names the first)."""
        if not raws:
            return []
        return list(zip(*[self.column(j, col, rows) for j, col in enumerate(zip(*raws))]))

    def column(self, j: int, col: Sequence[str], rows: Callable[[], Sequence[int]] | None = None) -> list:
        """The cells ``col`` of TYPED column ``j``, parsed: a list comprehension is the fast path, and only a
        column that holds something odd (a cell that is not a number, NaN, an integer that may overflow) is
        parsed cell by cell."""
        vals: list | None = None
        kind = self._kinds[j]
        try:
            if kind == FLOAT:
                vals = [float(v) if v else None for v in col]
                if not isfinite(sum(filter(None, vals))):
                    vals = None  # NaN or an infinity somewhere (or a sum that overflows: checked cell by cell)
            elif kind in (INT32, INT64):
                if max(map(len, col), default=0) <= (9 if kind == INT32 else 18):  # cannot overflow 32 (64) bits
                    vals = [int(v) if v else None for v in col]
            else:
                vals = [v.strip() or None for v in col]
        except ValueError:
            vals = None
        return vals if vals is not None else self._slow(j, col, rows)

    def _slow(self, j: int, col: Sequence[str], rows: Callable[[], Sequence[int]] | None) -> list:
        """One column cell by cell, counting the cells that are not numbers for a warning (with the first's row)."""
        parse, header = self._parse[j], self._headers[j]
        out: list = []
        for i, cell in enumerate(col):
            v = parse(cell) if parse is not None else cell
            if v is None or v == "":
                out.append(None)
                if v is None and cell and cell.strip():  # not empty, yet not a (finite) number
                    self.unparsable[header] = self.unparsable.get(header, 0) + 1
                    if header not in self.first_unparsable and rows is not None:
                        self.first_unparsable[header] = rows()[i]
            else:
                out.append(v)
        return out


@dataclass
class Chunk:
    """The rows of one chunk of export cells (see :mod:`warehouse.store.cells`): their numbers, volatile cells as
    JSON, and static tuple tokens in place of the ``cell_tuple`` ids that only the database gives. The consumer
    packs and compresses it (that half of the pipeline is the shorter one)."""

    row_nos: list[int]
    texts: list[str]
    tokens: list[int]
    packed: dict[str, Any] | None = None  # cellstore.pack_cells of the rows, when the reader packed them

    def pack(self, compress: bool) -> None:
        """Pack (and compress) the rows here, in the process that reads, and drop their texts: the process that
        writes had spent a tenth of its time compressing, and now the pipe carries a third of the bytes."""
        self.packed = pack_cells(self.row_nos, self.texts, compress)
        self.row_nos, self.texts = [], []


@dataclass
class Batch:
    """Up to :data:`BATCH` consecutive rows, prepared.

    ``rows`` holds one tuple per row in file order: ``(row_no, name, token, typed)`` for an op (``typed`` a
    tuple as :data:`TYPED`; :data:`ROW_TYPED` is its position), ``(row_no, name, token, None, message,
    host_start)`` for a signpost. Tokens name static cell tuples: ``keys[i]`` is the tuple of token
    ``first_token + i``, first met in this batch."""

    rows: list[tuple] = field(default_factory=list)
    first_token: int = 0
    keys: list[tuple[str, ...]] = field(default_factory=list)
    shapes: list[tuple[int, bytes, PerfShape]] = field(default_factory=list)  # (token, digest, shape)
    chunks: list[Chunk] = field(default_factory=list)
    forget: bool = False  # the tokens of earlier batches no longer appear in rows (their shapes may be dropped)
    bytes_read: int = 0


@dataclass
class Finish:
    """What the reader learned once every row was read and the bytes were verified."""

    rows_read: int
    warnings: list[RowWarning]  # the reader's, before the end (in row order)
    late_warnings: list[RowWarning]  # found at the end
    exact: bool  # whether export gives the file back byte for byte
    unparsable: dict[str, tuple[int, int | None]]  # header -> (cells that were not numbers, the first's row)
    arch: str | None  # the first op's DEVICE ARCH
    sha256: str  # of the bytes parsed


class Preparer:
    """One file's rows, prepared batch by batch."""

    def __init__(self, reader: CsvReader):
        self.reader = reader
        lay = reader.layout
        self.cells = Cells(lay)
        self.analyzer = Analyzer(lay.header)
        self.static = cells_getter(lay.static_idx)
        self.volatile = cells_getter(lay.volatile_idx)
        self.once = stored_once(lay.header, lay.volatile_idx)  # cells the op's typed values hold (JSON null)
        self.tokens: dict[tuple, int] = {}
        self.next_token = 0
        self.shaped: set[int] = set()
        self.arch: str | None = None
        self.pending: list[tuple[int, int, str]] = []  # (row_no, token, export cells) of rows not yet in a chunk

    def close_batch(self, b: Batch, vol: list[tuple], marks: list[tuple[int, int]], op_at: list[int],
               raws: list[tuple], final: bool) -> Batch:
        """Type the batch's ops (column by column), encode its export cells, cut the full chunks (and the rest
        when ``final``), and bound the token table."""
        rows = b.rows
        for i, values in zip(op_at, self.cells.typed(raws, lambda: [rows[k][0] for k in op_at])):
            rows[i] = (*rows[i], values)
        nulls = self._store_once(vol, op_at)
        self.pending += [(r, tok, x) for (r, tok), x in zip(marks, encode_volatile(vol, nulls))]
        b.chunks = [Chunk([r for r, _, _ in part], [x for _, _, x in part], [tok for _, tok, _ in part])
                    for part in cut_chunks(self.pending, final)]
        if len(self.tokens) > MAX_TOKENS:  # a file whose every row has new static cells must not grow memory
            self.tokens.clear()
            self.shaped.clear()
            b.forget = True  # (the consumer drops token shapes before the next batch's rows)
        b.bytes_read = self.reader.bytes_read
        return b

    def _store_once(self, vol: list, op_at: list[int]) -> int:
        """Replace the ops' cells that their typed values hold (:func:`warehouse.registry.columns.stored_once`) by
        :data:`NULL`; returns how many. Column by column: a column whose every cell is canonical (tt-metal's
        always are) is checked by one regex over its joined text."""
        if not self.once or not op_at:
            return 0
        hits: dict[int, list[int]] = {}  # op row -> its slots stored once
        for o in self.once:
            col = [vol[i][o.slot] for i in op_at]
            if _ALL_CANONICAL[o.column.kind].fullmatch("\n".join(col) + "\n"):
                rows_hit: list[int] = op_at
            else:
                rows_hit = [i for i, cell in zip(op_at, col) if o.canonical(cell)]
            for i in rows_hit:
                hits.setdefault(i, []).append(o.slot)
        n = 0
        for i, slots in hits.items():
            cells = list(vol[i])
            for j in slots:
                cells[j] = NULL
            vol[i] = cells
            n += len(slots)
        return n

    def finish(self) -> Finish:
        r = self.reader
        early = len(r.warnings)
        r.verify()
        bad = self.cells.unparsable  # in the columns' order, whatever the order rows and batches met them
        first = self.cells.first_unparsable
        return Finish(r.rows_read, r.warnings[:early], r.warnings[early:], r.exact_file(),
                      {k.csv: (bad[k.csv], first.get(k.csv)) for k in TYPED if k.csv in bad}, self.arch,
                      r.parsed_sha256)
