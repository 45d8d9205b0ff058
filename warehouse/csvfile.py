"""Streaming, validated reading of one Tracy ops CSV, and the lossless cell encoding.

Rows are read one physical line at a time from the binary file, so that a decoding error names its exact row
and memory does not grow with the file. Columns are always found by header name, never by position: tt-metal's
writer adds and drops columns from one release to the next.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from operator import itemgetter
from typing import IO, Callable, Iterator

from warehouse.errors import InputError

# A 10 MB cell is legal CSV; the csv module's default limit (128 KiB) would refuse it.
csv.field_size_limit(256 * 1024 * 1024)

LONG_TEXT = 48
"""Cells of static columns longer than this are interned once in ``text_value`` (ATTRIBUTES, kernel sources)."""

# Columns whose cells change from one call of a program to the next: they are stored inline per row. Every
# other column is "static" and interned per distinct tuple. This only decides compactness, never correctness.
VOLATILE = re.compile(r"\[ns\]|CYCLE|\bTS\b|CALL COUNT|TRACE|\(%\)|\bBW\b|^PM |DURATION|^DEVICE ID$", re.I)

NAME_COLUMNS = ("OP CODE", "OP NAME")
_SEP = "\x1f"  # unit separator: never in tt-metal output; cells holding it fall back to JSON
_JSON = "\x1e"


@dataclass
class Layout:
    """What the header says about a file: its columns, where the names are, how lines end."""

    path: str
    header: list[str]
    name_column: str
    newline: str
    bom: bool
    static_idx: list[int]
    volatile_idx: list[int]
    index: dict[str, int]

    def col(self, name: str) -> int | None:
        """Index of the column ``name`` (the last one of that name, as ``csv.DictReader`` does), or None."""
        return self.index.get(name)


@dataclass
class RowWarning:
    """Something ingest tolerated, stored per run in ``run_warning`` (row 0 is the header)."""

    row: int | None
    column: str | None
    message: str


@dataclass
class FileScan:
    """What one pass over the bytes tells: content hash, size, BOM, line ends, final newline."""

    sha256: str
    size: int
    bom: bool
    newline: str
    carriage_returns: int  # with the parser's line count, tells whether every line ends the same way
    final_newline: bool


def scan_file(path: Path) -> FileScan:
    """Hash a file and look at its line ends, in 1 MiB blocks (bounded memory, C speed)."""
    h = hashlib.sha256()
    size = cr = 0
    first = b""
    last = b""
    newline = None
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
                if not size:
                    first = block[:3]
                if newline is None and b"\n" in block:
                    i = block.index(b"\n")
                    newline = "\r\n" if (block[i - 1:i] if i else last[-1:]) == b"\r" else "\n"
                cr += block.count(b"\r")
                size += len(block)
                last = block[-1:]
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory") from None
    except OSError as e:
        raise InputError(path, f"cannot be read: {e.strerror}") from None
    return FileScan(h.hexdigest(), size, first == b"\xef\xbb\xbf", newline or "\n", cr, last == b"\n")


class CsvReader:
    """Iterate over the data rows of one CSV as ``(row_no, cells)``; ``row_no`` 1 is the first row after the
    header. Raises :class:`InputError` naming the row for anything that cannot be stored faithfully."""

    def __init__(self, path: Path, scan: FileScan):
        self.path = Path(path)
        self.scan = scan
        self.warnings: list[RowWarning] = []
        self.exact = True  # False once something is seen that export cannot reproduce (see also `exact_file`)
        self.rows_read = 0
        if scan.size == 0:
            raise self._fail(None, "the file is empty; expected an ops_perf_results CSV with a header row")
        self._f: IO[bytes] = open(self.path, "rb")
        # The fast path: the C decoder and the C csv parser. A decoding error sends us to _locate_decode_error.
        self._text = io.TextIOWrapper(self._f, encoding="utf-8-sig", errors="strict", newline="")
        self._reader = csv.reader(self._text, strict=False)
        try:
            self.layout = self._read_header()
        except BaseException:
            self.close()
            raise

    @property
    def bytes_read(self) -> int:
        """How far into the file the parser is (for progress bars)."""
        return self._f.tell() if not self._f.closed else self.scan.size

    def close(self) -> None:
        self._text.close()

    def __enter__(self) -> "CsvReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fail(self, row: int | None, message: str, column: str | None = None) -> InputError:
        return InputError(self.path, message, row=row, column=column)

    def _locate_decode_error(self) -> InputError:
        """The slow path: re-read line by line to name the row and byte that are not UTF-8."""
        rows = -1
        with open(self.path, "rb") as f:
            if self.scan.bom:
                f.read(3)
            line_no = 0

            def lines() -> Iterator[str]:
                nonlocal line_no
                for raw in f:
                    line_no += 1
                    try:
                        yield raw.decode("utf-8")
                    except UnicodeDecodeError as e:
                        raise self._fail(max(rows + 1, 0), f"byte {e.start} of line {line_no} is not UTF-8 "
                                         f"(0x{raw[e.start]:02x}); re-save the file as UTF-8") from None
            for _ in csv.reader(lines(), strict=False):
                rows += 1
        return self._fail(None, "is not UTF-8; re-save the file as UTF-8")

    def _next(self) -> list[str]:
        try:
            return next(self._reader)
        except UnicodeDecodeError:
            raise self._locate_decode_error() from None
        except csv.Error as e:
            raise self._fail(self.rows_read + 1, f"not valid CSV ({e})") from None

    def _read_header(self) -> Layout:
        try:
            header = self._next()
        except StopIteration:
            raise self._fail(None, "the file is empty; expected an ops_perf_results CSV with a header row") from None
        name_column = next((n for n in NAME_COLUMNS if n in header), None)
        if name_column is None:
            raise self._fail(0, "the header has no 'OP CODE' or 'OP NAME' column; is this a tt-metal "
                                "ops_perf_results CSV (python -m tracy -r)?", column="OP CODE")
        index: dict[str, int] = {}
        for i, name in enumerate(header):
            if name in index:
                self.warnings.append(RowWarning(0, name, f"duplicate column name {name!r}: the last one is used"))
            index[name] = i
        static = [i for i, n in enumerate(header) if not VOLATILE.search(n)]
        volatile = [i for i, n in enumerate(header) if VOLATILE.search(n)]
        return Layout(str(self.path), header, name_column, self.scan.newline, self.scan.bom, static, volatile,
                      index)

    def exact_file(self) -> bool:
        """After reading: whether export can give the file back byte for byte. Every physical line must end
        as the first one does: a CRLF file has exactly one CR a line, an LF file none (one pass of counting
        CRs at scan time instead of counting both kinds of line end)."""
        if not self.exact:
            return False
        lines = self._reader.line_num
        if self.scan.newline == "\r\n":
            return self.scan.carriage_returns == lines - (0 if self.scan.final_newline else 1)
        return self.scan.carriage_returns == 0

    def rows(self) -> Iterator[tuple[int, list[str]]]:
        """The data rows. Short rows are padded with empty cells (with a warning); long rows are an error."""
        width = len(self.layout.header)
        while True:
            try:
                cells = self._next()
            except StopIteration:
                break
            self.rows_read += 1
            n = len(cells)
            if n != width:
                if n == 0:
                    self.exact = False
                    self.warnings.append(RowWarning(self.rows_read, None, "blank line skipped"))
                    self.rows_read -= 1
                    continue
                if n > width:
                    raise self._fail(self.rows_read, f"{n} cells but the header has {width} columns; "
                                                     "fix the row or the header", column=f"#{width + 1}")
                self.exact = False
                self.warnings.append(RowWarning(self.rows_read, None,
                                              f"{n} cells but the header has {width}: padded with empty cells"))
                cells.extend([""] * (width - n))
            yield self.rows_read, cells


def cells_getter(indexes: list[int]) -> Callable[[list[str]], tuple[str, ...]]:
    """A fast picker of the cells at ``indexes``, always giving a tuple (``itemgetter`` of one index gives the
    bare item, of none an error)."""
    if len(indexes) > 1:
        return itemgetter(*indexes)
    if indexes:
        i = indexes[0]
        return lambda row: (row[i],)
    return lambda row: ()


def encode_inline(cells: list[str]) -> str:
    """The volatile cells of one row as one string (unit-separated; JSON when a cell holds a separator)."""
    text = _SEP.join(cells)
    if text.count(_SEP) != len(cells) - 1 or text.startswith(_JSON):
        return _JSON + json.dumps(cells, ensure_ascii=False)
    return text


def decode_inline(text: str, n: int) -> list[str]:
    """Inverse of :func:`encode_inline` for a row of ``n`` volatile cells."""
    if text.startswith(_JSON):
        return json.loads(text[1:])
    if n == 0:
        return []
    return text.split(_SEP)


def digest(text: str) -> bytes:
    """16-byte content key of an interned string."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def write_rows(out: IO[str], header: list[str], rows: Iterator[list[str]], newline: str) -> None:
    """Write a CSV as tt-metal does (minimal quoting) with the given line ends."""
    w = csv.writer(out, lineterminator=newline)
    w.writerow(header)
    w.writerows(rows)
