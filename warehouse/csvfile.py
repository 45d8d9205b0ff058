"""Streaming, validated reading of one Tracy ops CSV, and the lossless cell encoding.

Rows are read one physical line at a time from the binary file, so that a decoding error names its exact row
and memory does not grow with the file. Columns are always found by header name, never by position: tt-metal's
writer adds and drops columns from one release to the next.
"""
from __future__ import annotations

import csv
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator

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
class Warning_:
    row: int | None
    column: str | None
    message: str


def sha256_of(path: Path) -> tuple[str, int]:
    """Content hash and size of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    size = 0
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
                size += len(block)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory") from None
    except OSError as e:
        raise InputError(path, f"cannot be read: {e.strerror}") from None
    return h.hexdigest(), size


class CsvReader:
    """Iterate over the data rows of one CSV as ``(row_no, cells)``; ``row_no`` 1 is the first row after the
    header. Raises :class:`InputError` naming the row for anything that cannot be stored faithfully."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.warnings: list[Warning_] = []
        self.exact = True  # False once something is seen that the export cannot reproduce byte for byte
        self.final_newline = True
        self.rows_read = 0
        self.bytes_read = 0
        self._f: IO[bytes] = open(self.path, "rb")
        try:
            self.layout = self._read_header()
        except BaseException:
            self._f.close()
            raise

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> "CsvReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fail(self, row: int | None, message: str, column: str | None = None) -> InputError:
        return InputError(self.path, message, row=row, column=column)

    def _lines(self) -> Iterator[str]:
        """Decoded physical lines (line ends kept), checking the encoding and the line ends as they pass."""
        newline = None
        for raw in self._f:
            self._line_no += 1
            self.bytes_read += len(raw)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                row = max(self.rows_read, 0) + (0 if self._in_header else 1)
                raise self._fail(row, f"byte {e.start} of line {self._line_no} is not UTF-8 "
                                      f"(0x{raw[e.start]:02x}); re-save the file as UTF-8") from None
            if not line.endswith("\n"):
                self.final_newline = False
            else:
                ending = "\r\n" if line.endswith("\r\n") else "\n"
                if newline is None:
                    newline = ending
                    self._newline = ending
                elif ending != newline:
                    self.exact = False
            yield line

    def _read_header(self) -> Layout:
        self._line_no = 0
        self._in_header = True
        self._newline = "\n"
        head = self._f.read(3)
        bom = head == b"\xef\xbb\xbf"
        if not bom:
            self._f.seek(0)
        if not head:
            raise self._fail(None, "the file is empty; expected an ops_perf_results CSV with a header row")
        self._reader = csv.reader(self._lines(), strict=False)
        try:
            header = next(self._reader)
        except StopIteration:
            raise self._fail(None, "the file is empty; expected an ops_perf_results CSV with a header row") from None
        except csv.Error as e:
            raise self._fail(0, f"the header is not valid CSV ({e})") from None
        self._in_header = False
        name_column = next((n for n in NAME_COLUMNS if n in header), None)
        if name_column is None:
            raise self._fail(0, "the header has no 'OP CODE' or 'OP NAME' column; is this a tt-metal "
                                "ops_perf_results CSV (python -m tracy -r)?", column="OP CODE")
        index: dict[str, int] = {}
        for i, name in enumerate(header):
            if name in index:
                self.warnings.append(Warning_(0, name, f"duplicate column name {name!r}: the last one is used"))
            index[name] = i
        static = [i for i, n in enumerate(header) if not VOLATILE.search(n)]
        volatile = [i for i, n in enumerate(header) if VOLATILE.search(n)]
        return Layout(str(self.path), header, name_column, self._newline, bom, static, volatile, index)

    def rows(self) -> Iterator[tuple[int, list[str]]]:
        """The data rows. Short rows are padded with empty cells (with a warning); long rows are an error."""
        width = len(self.layout.header)
        reader = self._reader
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                raise self._fail(self.rows_read + 1, f"not valid CSV ({e})") from None
            self.rows_read += 1
            n = len(cells)
            if n != width:
                if n == 0:
                    self.exact = False
                    self.warnings.append(Warning_(self.rows_read, None, "blank line skipped"))
                    self.rows_read -= 1
                    continue
                if n > width:
                    raise self._fail(self.rows_read, f"{n} cells but the header has {width} columns; "
                                                     "fix the row or the header", column=f"#{width + 1}")
                self.exact = False
                self.warnings.append(Warning_(self.rows_read, None,
                                              f"{n} cells but the header has {width}: padded with empty cells"))
                cells.extend([""] * (width - n))
            yield self.rows_read, cells
        self.layout.newline = self._newline


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
