"""The half of a file's ingest that needs no database, run in a worker process so that ingest uses two cores.

A file's ingest is a pipeline of two halves, each about half of the work:

1. here (:func:`prepare`): hash the file, parse it, type the measured cells, give each distinct static cell tuple
   a token and its perf shape, encode the export cells and cut them in chunks of rows, and check at the end that
   the bytes parsed are the bytes hashed;
2. in :mod:`warehouse.ingest`: attribute ops to sections, blocks and layers, intern, compress the chunks, feed
   the report's scans, and write, in the file's transaction.

The first half yields, in order: the :class:`~warehouse.csvfile.FileScan`, the
:class:`~warehouse.csvfile.Layout`, :class:`Batch` es of rows, and a :class:`Finish`. :class:`RowSource` runs
it in a forked process that sends them through a pipe, at most :data:`AHEAD` items ahead (see :class:`_Sender`),
or in-process for small files, where a process costs more than it saves. Either way the items, and so the
stored run, are the same; a failure is raised by the consumer where the reader met it, naming the file and
row. With a worker, the file is hashed once, as it is parsed (the scan before the parse leaves the hash out: it
is most of a scan's cost, and parsing waits for the scan); the consumer hashes it beforehand only when it asks
(:meth:`RowSource.hash_now`: a stored run has the file's size), and the parse is then checked against that.
"""
from __future__ import annotations

import dataclasses
import gc
import itertools
import multiprocessing
import os
import queue
import re
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from math import isfinite
from multiprocessing.reduction import ForkingPickler
from operator import itemgetter
from pathlib import Path
from typing import Any

from warehouse.aside import can_fork
from warehouse.workers import die_with_parent
from warehouse.memory import trim_heap
from warehouse.packing import cut_chunks, pack_cells
from warehouse.columns import AT, DIGITS, FLOAT, INT32, INT64, OP_COLUMNS, TEXT, stored_once
from warehouse.csvfile import (CHANGED, NULL, CsvReader, FileScan, Layout, RowWarning, cells_getter, encode_volatile,
                               hash_file, scan_file)
from warehouse.errors import InputError, WarehouseError
from warehouse.files import open_regular, shown
from warehouse.perffacts import Analyzer, PerfShape

BATCH = 2000  # rows per batch: the consumer writes a batch at a time
# a column of cells, each followed by a newline, every one canonical for its kind (see warehouse.columns.StoredOnce)
_ALL_CANONICAL = {kind: re.compile(rf"(?:(?:0|-?[1-9][0-9]{{0,{digits - 1}}})\n)*")
                  for kind, digits in DIGITS.items()}
WORKER_MIN_BYTES = 4 << 20
# Files of this many bytes or more are read by the columnar path (warehouse.arrowprep); None: never. A whole
# ingest of a realistic 100k-op capture: 3.5 s against 4.0 s by lines (the writer waits less for its batches);
# smaller files gain less than pyarrow's import costs (~65 ms). Tests hold the two paths to the same batches on
# every corpus file.
COLUMNAR_MIN_BYTES: int | None = 4 << 20
# Longer files are read by lines: there the process that writes is the slower half whichever way they are read
# (a 1,000,000-op capture's stream: 15 s either way), and the line path's reader holds 50 MiB where pyarrow's
# held 110-130 MiB (its libraries and buffers).
COLUMNAR_MAX_ROWS = 300_000
AHEAD = 8  # items the worker may have made and not yet sent (each batch pickled is under 1 MB)
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


# The typed op columns (warehouse.columns), in insert order, and how each kind parses. The static cells the
# report prints (op type, fidelity, input 0 shape and memory, output 0 memory) are facts of the row's perf_shape,
# stored once per distinct static tuple, not per op.
TYPED = OP_COLUMNS
PARSE: dict[str, Callable[[str], object]] = {FLOAT: _float, INT64: parse_int, INT32: _int32, TEXT: str.strip}
REPLAY = AT.replay_session
ROW_TYPED = 3  # where a batch row holds its typed tuple (None: the row is a signpost)


class _Cells:
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
    """The rows of one chunk of export cells (see :mod:`warehouse.cellstore`): their numbers, volatile cells as
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


class _Preparer:
    """One file's rows, prepared batch by batch."""

    def __init__(self, reader: CsvReader):
        self.reader = reader
        lay = reader.layout
        self.cells = _Cells(lay)
        self.analyzer = Analyzer(lay.header)
        self._static = cells_getter(lay.static_idx)
        self._volatile = cells_getter(lay.volatile_idx)
        self.once = stored_once(lay.header, lay.volatile_idx)  # cells the op's typed values hold (JSON null)
        self.tokens: dict[tuple, int] = {}
        self.next_token = 0
        self.shaped: set[int] = set()
        self.arch: str | None = None
        self.pending: list[tuple[int, int, str]] = []  # (row_no, token, export cells) of rows not yet in a chunk

    def batches(self) -> Iterator[Batch]:
        """The file's batches: from the columnar path when the file is plain (:func:`columnar`), and from the
        line path for the rest (all of it, or from where the columnar path stopped)."""
        skip = 0
        if columnar(self.reader):
            from warehouse.arrowprep import columnar_batches  # (pyarrow's import is paid by large files only)
            stopped = yield from columnar_batches(self)
            if stopped is None:
                return
            skip = stopped
            first = self.reader
            self.reader = CsvReader(first.path, open_regular(first.path), first.scan)
            first.close()
        yield from self._lines(skip)

    def _lines(self, skip: int) -> Iterator[Batch]:
        """The batches of the rows after the first ``skip`` (a multiple of BATCH), read line by line."""
        c = self.cells
        type_i, name_i, attr_i, host_i, arch_i = c.op_type, c.name, c.attributes, c.host_start, c.arch
        tokens, static, volatile, shaped = self.tokens, self._static, self._volatile, self.shaped
        raw = c.raw
        b = Batch(first_token=self.next_token)
        vol: list[tuple] = []
        op_at: list[int] = []  # where the batch's ops are in b.rows (typed at the batch's end, by column)
        raws: list[tuple[str, ...]] = []
        marks: list[tuple[int, int]] = []  # (row_no, token) of the batch's rows
        # (the loop runs once per row of the file: names are bound locally, attribute lookups kept out)
        mark = marks.append
        pad = c.pad
        want_arch = arch_i is not None and self.arch is None
        rows, n = b.rows, 0
        for row_no, cells in itertools.islice(self.reader.rows(), skip, None):
            key = static(cells)
            tok = tokens.get(key)
            if tok is None:
                tok = tokens[key] = self.next_token
                self.next_token += 1
                b.keys.append(key)
            vol.append(volatile(cells))
            mark((row_no, tok))
            name = cells[name_i]
            if type_i is not None and cells[type_i] == "signpost":
                msg = cells[attr_i].strip() if attr_i is not None else ""
                host = parse_int(cells[host_i]) if host_i is not None else None
                rows.append((row_no, name, tok, None, msg or None, host))
            else:
                if tok not in shaped:
                    shaped.add(tok)
                    shape = self.analyzer.shape(cells, name)
                    b.shapes.append((tok, shape.digest(), shape))
                if pad:
                    cells.append("")  # the cell that columns missing from this file read (see _Cells)
                if want_arch:
                    self.arch = cells[arch_i].strip() or None  # type: ignore[index]
                    want_arch = self.arch is None
                op_at.append(n)
                raws.append(raw(cells))
                rows.append((row_no, name, tok))
            n += 1
            if n >= BATCH:
                yield self._close(b, vol, marks, op_at, raws, final=False)
                b, vol, op_at, raws = Batch(first_token=self.next_token), [], [], []
                marks = []
                mark = marks.append
                rows, n = b.rows, 0
        yield self._close(b, vol, marks, op_at, raws, final=True)

    def _close(self, b: Batch, vol: list[tuple], marks: list[tuple[int, int]], op_at: list[int],
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
        """Replace the ops' cells that their typed values hold (:func:`warehouse.columns.stored_once`) by
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


def prepare(path: Path, scan: FileScan | None = None, hashed: bool = True,
            compress: bool | None = None) -> Iterator[Any]:
    """The first half of a file's ingest: yields the scan, the layout, the batches and the finish. Without
    ``hashed``, the scan before the parse leaves the hash out (the consumer hashes meanwhile, and checks
    :attr:`Finish.sha256`). With ``compress`` (True or False: whether the back end wants chunks compressed by us)
    the batches' chunks come packed (:meth:`Chunk.pack`)."""
    if scan is None:
        with open_regular(path) as f:
            scan = scan_file(f, path, hashed)
    yield scan
    with CsvReader(path, open_regular(path), scan) as reader:
        yield reader.layout
        prep = _Preparer(reader)
        big = scan.lines > COLUMNAR_MAX_ROWS
        try:
            for n, b in enumerate(prep.batches()):
                if compress is not None:
                    for c in b.chunks:
                        c.pack(compress)
                yield b
                if big and n % 32 == 31:
                    trim_heap()  # (a big file's batches leave freed pages behind: give them back now and then)
            yield prep.finish()
        finally:
            prep.reader.close()  # (the line path's own reader, when it took over from the columnar one)


def columnar(reader: CsvReader) -> bool:
    """Whether the file is read by the columnar path (:mod:`warehouse.arrowprep`): a file of
    ``COLUMNAR_MIN_BYTES`` or more and at most :data:`COLUMNAR_MAX_ROWS` rows as tt-metal writes it (no quote, NUL,
    blank line, CR alone or line end unlike the first), with pyarrow."""
    s = reader.scan
    if COLUMNAR_MIN_BYTES is None or s.size < COLUMNAR_MIN_BYTES or s.lines > COLUMNAR_MAX_ROWS:
        return False
    if s.quotes or s.nuls or s.bare_cr or s.mixed_ends or s.blank_line:
        return False
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class _Failed:
    """An exception of the worker, sent to be raised by the consumer."""

    error: BaseException


class _Sender:
    """The worker's end of the pipe: items are pickled as they are made and sent by a thread of their own, up to
    :data:`AHEAD` items ahead. A pipe's own buffer holds less than one batch, so without this the reader would
    stop at each send until the consumer came back for the item; now a slow write (a large flush, a collection)
    on the consumer's side no longer stops the reader, nor a slow batch of the reader the consumer."""

    def __init__(self, send: Any):
        self.send = send
        self.queue: queue.Queue[memoryview | None] = queue.Queue(maxsize=AHEAD)
        self.thread = threading.Thread(target=self._feed, name="warehouse-rowprep-send", daemon=True)
        self.thread.start()

    def _feed(self) -> None:
        while (buf := self.queue.get()) is not None:
            try:
                self.send.send_bytes(buf)
            except OSError:
                # The consumer has gone (done early, or an error of its own): nothing is left to tell anyone,
                # and the reading thread may be waiting on a full queue. Leave at once.
                os._exit(0)
            except BaseException:  # noqa: BLE001 - never leave the reading thread blocked on a full queue
                os._exit(1)  # (the consumer sees the pipe close: "the process reading the file stopped")

    def put(self, item: Any) -> None:
        """Queue one item (it is pickled here, so that a pickling error is raised where the item was made)."""
        self.queue.put(ForkingPickler.dumps(item))

    def close(self) -> None:
        """Send what is queued, then close the pipe."""
        self.queue.put(None)
        self.thread.join()
        self.send.close()


def _work(recv: Any, send: Any, path: Path, scan: FileScan | None, hashed: bool, compress: bool | None,
          parent: int) -> None:
    """The worker process: every item of :func:`prepare` through the pipe, or the exception that stopped it."""
    die_with_parent(parent)
    # The fork gave us the pipe's reading end too: close it, so that when the consumer goes (killed, or done
    # early) our next send fails and we exit, instead of waiting forever on a pipe we hold open ourselves.
    recv.close()
    out = _Sender(send)
    try:
        for item in prepare(path, scan, hashed, compress):
            out.put(item)
    except BaseException as e:  # noqa: BLE001 - everything reaches the consumer, which decides
        try:
            out.put(_Failed(e))
        except Exception:  # an exception that does not pickle: its text and where it came from, on one line
            where = traceback.extract_tb(e.__traceback__)[-1]
            out.put(_Failed(WarehouseError(f"{shown(path)}: reading failed ({e!r} at {Path(where.filename).name}:"
                                           f"{where.lineno})")))
    finally:
        out.close()


class RowSource:
    """The items of :func:`prepare` for one file, from a worker process (files of ``WORKER_MIN_BYTES`` or more,
    unless ``worker`` says otherwise) or in-process, their chunks packed for a back end that ``compress``-es them
    or not (None: left to the consumer). Use as a context manager: leaving stops the worker."""

    def __init__(self, path: Path, scan: FileScan | None = None, worker: bool | None = None,
                 compress: bool | None = None):
        self.path = Path(path)
        if worker is None:
            try:
                worker = os.stat(self.path).st_size >= WORKER_MIN_BYTES and can_fork()
            except OSError:
                worker = False  # prepare() names the problem
        self.compress = compress
        self._proc: Any = None
        self._recv: Any = None
        # the parse is checked against a hash taken here (see hash_now), else the parse's own hash is the file's
        self._check_hash = bool(worker and scan is not None and scan.sha256)
        if worker:
            # fork: the worker starts at once with the modules already imported; it never touches the
            # database (inherited SQLite descriptors stay unused, and fcntl locks are not inherited). It scans
            # without hashing (the hash is most of a scan's cost, and the parse waits for the scan): the bytes it
            # parses are hashed as they are parsed (Finish.sha256).
            ctx = multiprocessing.get_context("fork")
            self._recv, send = ctx.Pipe(duplex=False)
            self._proc = ctx.Process(target=_work, daemon=True, name="warehouse-rowprep",
                                     args=(self._recv, send, self.path, scan, False, compress, os.getpid()))
            # The objects we have now stay out of collections until the worker is done: a collection would
            # write to every one of them and so copy, page by page, what the fork shares (about 8 MB).
            gc.freeze()
            self._proc.start()
            send.close()
            self._items: Iterator[Any] = self._from_worker()
        else:
            self._items = prepare(self.path, scan, compress=compress)
        self._scan: FileScan | None = None
        self._layout: Layout | None = None
        self.finish: Finish | None = None

    @property
    def scan(self) -> FileScan:
        """The file's scan (the worker's is waited for when first asked for). With a worker its ``sha256`` is
        empty unless :meth:`hash_now` was called: the file's hash is then :attr:`Finish.sha256`, of the bytes
        parsed."""
        if self._scan is None:
            try:
                self._scan = self._next()
            except BaseException:
                self.close()
                raise
        return self._scan

    def hash_now(self) -> str:
        """The file's hash before its rows are read, taken here while the worker parses (ingest asks for it when
        a stored run has the file's size, to find stored content without reading every row); the parse is then
        checked against it."""
        scan = self.scan
        if not scan.sha256:
            with open_regular(self.path) as f:
                self._scan = scan = dataclasses.replace(scan, sha256=hash_file(f, self.path))
            self._check_hash = True
        return scan.sha256

    @property
    def worker(self) -> bool:
        """Whether the rows come from a worker process."""
        return self._proc is not None

    def _from_worker(self) -> Iterator[Any]:
        while True:
            try:
                item = self._recv.recv()
            except (EOFError, OSError):  # (OSError: it died in the middle of a message)
                self._proc.join(5)
                raise WarehouseError(f"{shown(self.path)}: the process reading the file stopped unexpectedly "
                                     f"(exit code {self._proc.exitcode}); nothing was stored") from None
            if isinstance(item, _Failed):
                raise item.error
            yield item

    def _next(self) -> Any:
        return next(self._items)

    @property
    def layout(self) -> Layout:
        """The header's layout (raises the reader's error for a file that has no usable header)."""
        if self._layout is None:
            self._layout = self._next()
        return self._layout

    def batches(self) -> Iterator[Batch]:
        """The prepared rows; :attr:`finish` is set once they are all read and verified."""
        _ = self.layout
        for item in self._items:
            if isinstance(item, Finish):
                if self._check_hash and item.sha256 != self.scan.sha256:
                    raise InputError(str(self.path), CHANGED)
                self.finish = item
                return
            yield item

    def close(self) -> None:
        """Stop the worker (it may still be reading when the consumer stops early)."""
        if self._proc is not None:
            self._recv.close()
            if self._proc.is_alive():
                self._proc.terminate()
            self._proc.join()
            self._proc.close()
            self._proc = None
            gc.unfreeze()
        elif hasattr(self._items, "close"):
            self._items.close()

    def __enter__(self) -> RowSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_AHEAD: dict[Path, RowSource] = {}  # the sources read_ahead started, until an ingest of their file claims them


def read_ahead(path: Path, compress: bool) -> None:
    """Start reading ``path`` in its worker process now, for a :func:`claim` soon after: the command that is
    about to ingest it forks the worker before it imports the database layers and opens the warehouse (~0.4 s
    that the worker spends on the file's scan and first batches instead of the writer waiting for them). A file
    too small for a worker, or one that cannot be read, is left alone: the ingest itself reads it, and names
    its problem."""
    path = Path(path)
    try:
        if os.stat(path).st_size < WORKER_MIN_BYTES or not can_fork() or path in _AHEAD:
            return
        _AHEAD[path] = RowSource(path, compress=compress)
    except Exception:  # noqa: BLE001 - the ingest reads the file again and reports what is wrong with it
        return


def claim(path: Path, compress: bool | None) -> RowSource | None:
    """The source :func:`read_ahead` started for ``path``, if it packs chunks as ``compress`` says."""
    source = _AHEAD.pop(Path(path), None)
    if source is not None and source.compress != compress:
        source.close()
        return None
    return source


def drop_ahead() -> None:
    """Stop the sources that were read ahead and never claimed (the command failed before their ingest)."""
    while _AHEAD:
        _AHEAD.popitem()[1].close()
