"""The half of a file's ingest that needs no database, run in a worker process so that ingest uses two cores.

A file's ingest is a pipeline of two halves, each about half of the work:

1. here (:func:`prepare`): hash the file, parse it, type the measured cells, give each distinct static cell tuple
   a token and its perf shape, encode the export cells and cut them in chunks of rows, and check at the end that
   the bytes parsed are the bytes hashed;
2. in :mod:`warehouse.runs.ingest`: attribute ops to sections, blocks and layers, intern, compress the chunks, feed
   the report's scans, and write, in the file's transaction.

The first half yields, in order: the :class:`~warehouse.capture.csvfile.FileScan`, the
:class:`~warehouse.capture.csvfile.Layout`, :class:`Batch` es of rows, and a :class:`Finish`. :class:`RowSource` runs
it in a forked process that sends them through a pipe, at most :data:`AHEAD` items ahead (see :class:`_Sender`),
or in-process for small files, where a process costs more than it saves. Either way the items, and so the
stored run, are the same; a failure is raised by the consumer where the reader met it, naming the file and
row. With a worker, the file is hashed once, as it is parsed (the scan before the parse leaves the hash out: it
is most of a scan's cost, and parsing waits for the scan); the consumer hashes it beforehand only when it asks
(:meth:`RowSource.hash_now`: a stored run has the file's size), and the parse is then checked against that.
"""
from __future__ import annotations

import dataclasses
import io
import itertools
import os
import queue
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

from warehouse.capture.plan import IngestPlan, wants_worker
from warehouse.workers.fork import Child, StreamEnded, ended, recv_item, send_end, send_item
from warehouse.capture.csvfile import (CHANGED, CsvReader, FileScan, Layout, hash_file, scan_file)
from warehouse.errors import InputError, WarehouseError
from warehouse.capture.files import open_regular, shown
from warehouse.capture.prepared import (BATCH, REPLAY, ROW_TYPED, TYPED, Batch, Chunk, Finish,  # noqa: F401 (the source hands these over)
                                        Preparer, parse_int)

AHEAD = 8  # items the worker may have made and not yet sent (each batch pickled is under 1 MB)


def batches(prep: Preparer, plan: IngestPlan) -> Iterator[Batch]:
    """The file's batches: from the columnar path when the plan says (a plain file of a few MiB), and from the
    line path for the rest (all of it, or from where the columnar path stopped)."""
    skip = 0
    if plan.columnar:
        from warehouse.capture.arrowprep import columnar_batches  # (lazy: pyarrow's import, 65 ms, for large files)
        stopped = yield from columnar_batches(prep)
        if stopped is None:
            return
        skip = stopped
        first = prep.reader
        prep.reader = CsvReader(first.path, open_regular(first.path), first.scan)
        first.close()
    yield from _lines(prep, skip)

def _lines(prep: Preparer, skip: int) -> Iterator[Batch]:
    """The batches of the rows after the first ``skip`` (a multiple of BATCH), read line by line."""
    c = prep.cells
    type_i, name_i, attr_i, host_i, arch_i = c.op_type, c.name, c.attributes, c.host_start, c.arch
    tokens, static, volatile, shaped = prep.tokens, prep.static, prep.volatile, prep.shaped
    raw = c.raw
    b = Batch(first_token=prep.next_token)
    vol: list[tuple] = []
    op_at: list[int] = []  # where the batch's ops are in b.rows (typed at the batch's end, by column)
    raws: list[tuple[str, ...]] = []
    marks: list[tuple[int, int]] = []  # (row_no, token) of the batch's rows
    # (the loop runs once per row of the file: names are bound locally, attribute lookups kept out)
    mark = marks.append
    pad = c.pad
    want_arch = arch_i is not None and prep.arch is None
    rows, n = b.rows, 0
    for row_no, cells in itertools.islice(prep.reader.rows(), skip, None):
        key = static(cells)
        tok = tokens.get(key)
        if tok is None:
            tok = tokens[key] = prep.next_token
            prep.next_token += 1
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
                shape = prep.analyzer.shape(cells, name)
                b.shapes.append((tok, shape.digest(), shape))
            if pad:
                cells.append("")  # the cell that columns missing from this file read (see _Cells)
            if want_arch:
                prep.arch = cells[arch_i].strip() or None  # type: ignore[index]
                want_arch = prep.arch is None
            op_at.append(n)
            raws.append(raw(cells))
            rows.append((row_no, name, tok))
        n += 1
        if n >= BATCH:
            yield prep.close_batch(b, vol, marks, op_at, raws, final=False)
            b, vol, op_at, raws = Batch(first_token=prep.next_token), [], [], []
            marks = []
            mark = marks.append
            rows, n = b.rows, 0
    yield prep.close_batch(b, vol, marks, op_at, raws, final=True)


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
        prep = Preparer(reader)
        plan = IngestPlan.of(scan)
        try:
            for b in batches(prep, plan):
                if compress is not None:
                    for c in b.chunks:
                        c.pack(compress)
                yield b
            yield prep.finish()
        finally:
            prep.reader.close()  # (the line path's own reader, when it took over from the columnar one)


@dataclass
class _Failed:
    """An exception of the worker, sent to be raised by the consumer."""

    error: BaseException


class _Sender:
    """The worker's end of the pipe: items are pickled as they are made and sent by a thread of their own, up to
    :data:`AHEAD` items ahead. A pipe's own buffer holds less than one batch, so without this the reader would
    stop at each send until the consumer came back for the item; now a slow write (a large flush, a collection)
    on the consumer's side no longer stops the reader, nor a slow batch of the reader the consumer."""

    def __init__(self, out: BinaryIO):
        self.out = out
        self.queue: queue.Queue[bytes | None] = queue.Queue(maxsize=AHEAD)
        self.thread = threading.Thread(target=self._feed, name="warehouse-rowprep-send", daemon=True)
        self.thread.start()

    def _feed(self) -> None:
        while (buf := self.queue.get()) is not None:
            try:
                self.out.write(buf)
                self.out.flush()
            except OSError:
                # The consumer has gone (done early, or an error of its own): nothing is left to tell anyone,
                # and the reading thread may be waiting on a full queue. Leave at once.
                os._exit(0)
            except BaseException:  # noqa: BLE001 - never leave the reading thread blocked on a full queue
                os._exit(1)  # (the consumer sees the pipe close: "the process reading the file stopped")

    def put(self, item: Any) -> None:
        """Queue one item (it is pickled here, so that a pickling error is raised where the item was made)."""
        frame = io.BytesIO()
        send_item(frame, item)
        self.queue.put(frame.getvalue())

    def close(self) -> None:
        """Send what is queued and the stream's end."""
        frame = io.BytesIO()
        send_end(frame)
        self.queue.put(frame.getvalue())
        self.queue.put(None)
        self.thread.join()


def _work(pipe: BinaryIO, path: Path, scan: FileScan | None, hashed: bool, compress: bool | None) -> None:
    """The worker process: every item of :func:`prepare` through the pipe, or the exception that stopped it.
    (When the consumer goes, killed or done early, the next send fails and the worker exits.)"""
    out = _Sender(pipe)
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
    """The items of :func:`prepare` for one file, from a worker process (files of ``plan.WORKER_MIN_BYTES`` or more,
    unless ``worker`` says otherwise) or in-process, their chunks packed for a back end that ``compress``-es them
    or not (None: left to the consumer). Use as a context manager: leaving stops the worker."""

    def __init__(self, path: Path, scan: FileScan | None = None, worker: bool | None = None,
                 compress: bool | None = None):
        self.path = Path(path)
        if worker is None:
            worker = wants_worker(self.path)
        self.compress = compress
        self._proc: Child | None = None
        # the parse is checked against a hash taken here (see hash_now), else the parse's own hash is the file's
        self._check_hash = bool(worker and scan is not None and scan.sha256)
        if worker:
            # fork: the worker starts at once with the modules already imported; it never touches the
            # database (inherited SQLite descriptors stay unused, and fcntl locks are not inherited). It scans
            # without hashing (the hash is most of a scan's cost, and the parse waits for the scan): the bytes it
            # parses are hashed as they are parsed (Finish.sha256).
            self._proc = Child(partial(_work, path=self.path, scan=scan, hashed=False, compress=compress))
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

    @property
    def plan(self) -> IngestPlan:
        """How the file goes in, from its scan (the worker's, waited for when first asked for)."""
        return IngestPlan.of(self.scan)

    def _from_worker(self) -> Iterator[Any]:
        assert self._proc is not None
        while True:
            try:
                item = recv_item(self._proc.pipe)
            except (StreamEnded, OSError):  # (it died between items or in the middle of one)
                code = self._proc.wait()
                raise WarehouseError(f"{shown(self.path)}: the process reading the file stopped unexpectedly "
                                     f"(exit code {code}); nothing was stored") from None
            if ended(item):
                return
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
            self._proc.stop()
            self._proc = None
        elif hasattr(self._items, "close"):
            self._items.close()

    def __enter__(self) -> RowSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_ahead(path: Path, compress: bool) -> RowSource | None:
    """Start reading ``path`` in its worker process now, for an ingest of it soon after (its ``source``): the
    command that is about to ingest it forks the worker before it imports the database layers and opens the
    warehouse (~0.4 s that the worker spends on the file's scan and first batches instead of the writer waiting for
    them). None for a file too small for a worker, or one that cannot be read: the ingest itself reads it, and
    names its problem. The caller closes the source when its ingest is done (or never came)."""
    path = Path(path)
    try:
        return RowSource(path, compress=compress) if wants_worker(path) else None
    except Exception:  # noqa: BLE001 - the ingest reads the file again and reports what is wrong with it
        return None
