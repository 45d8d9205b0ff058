"""Streaming, validated reading of one Tracy ops CSV, and the lossless cell encoding.

Rows are read one physical line at a time from the binary file, so that a decoding error names its exact row
and memory does not grow with the file. Columns are always found by header name, never by position: tt-metal's
writer adds and drops columns from one release to the next.
"""
from __future__ import annotations

import csv
import hashlib
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path
from operator import itemgetter
from typing import IO, Any
from collections.abc import Callable, Iterator

from warehouse.errors import InputError

# The longest line (and so the longest cell, or header) read: a 10 MB cell is legal CSV, but memory must not
# follow whatever a damaged file holds (the csv module keeps a cell as 4-byte characters while it parses it).
MAX_LINE = 16 * 1024 * 1024
# tt-metal writes 63 to 139 columns (about 290 with every hardware counter); a header far wider is not a capture,
# and every row of it would cost time and memory in proportion
MAX_COLUMNS = 10_000
MAX_CELL_LINES = 1_000  # a quoted cell may hold line ends (RFC 4180): up to this many lines
csv.field_size_limit(MAX_LINE)

LONG_TEXT = 48
"""Cells of static columns longer than this are interned once in ``text_value`` (ATTRIBUTES, kernel sources)."""

# Columns whose cells change from one call of a program to the next: they are stored inline per row. Every
# other column is "static" and interned per distinct tuple. This only decides compactness, never correctness.
VOLATILE = re.compile(r"\[ns\]|CYCLE|\bTS\b|CALL COUNT|TRACE|\(%\)|\bBW\b|^PM |DURATION|^DEVICE ID$", re.I)

NAME_COLUMNS = ("OP CODE", "OP NAME")


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
    """What the first pass over the bytes tells: content hash, size and time (to notice a file that changes
    while it is read), BOM, line ends, quotes, NUL bytes, CRs that do not end a CRLF, compression."""

    sha256: str
    size: int
    mtime_ns: int
    bom: bool
    newline: str
    final_newline: bool
    quotes: int
    nuls: int
    compressed: str | None
    bare_cr: bool  # a CR that does not end a CRLF, anywhere
    mixed_ends: bool = True  # a line that ends otherwise than the first one (LF alone, or CRLF)
    blank_line: bool = True  # an empty line somewhere (LF LF, or LF CR LF)
    # bytes a JSON string must escape (a backslash, or a control byte other than CR and LF) or that the columnar
    # reader uses as markers (\x1d, \x1f): none in a capture as tt-metal writes it, so its cells need no check
    escapes: bool = True
    lines: int = 0  # LF bytes: the file's lines (a last one without its line end not counted)


_MAGIC = {b"\x1f\x8b": ("gzip", "gunzip"), b"PK\x03\x04": ("zip", "unzip"), b"BZh": ("bzip2", "bunzip2"),
          b"\xfd7zXZ\x00": ("xz", "unxz"), b"\x28\xb5\x2f\xfd": ("zstd", "unzstd")}


SCAN_BLOCK = 1 << 20  # the scan's read size (tests make it small, to put line ends across block edges)


@dataclass
class _LineEnds:
    """What the scan has learnt of the line ends so far (see :meth:`add`)."""

    lfs: int = 0  # LF bytes
    crlfs: int = 0  # LFs that a CR precedes
    bare_cr: bool = False  # a CR that a byte other than LF follows
    blank: bool = False  # LF LF or LF CR LF
    escapes: bool = False  # a backslash, or a control byte other than CR and LF
    tail: bytes = b""  # the last two bytes so far

    def add(self, block: bytes) -> None:
        """Take the next block. The line end bytes are found by numpy (a line of a capture is a kilobyte or two:
        a few hundred positions a MiB), so that the scan costs about what reading costs; bytes.count and a
        regular expression over every block were four fifths of a 170 MB file's scan."""
        import numpy as np

        tail, n = self.tail, len(block)
        a = np.frombuffer(block, np.uint8)
        lf = np.flatnonzero(a == 10)
        cr = np.flatnonzero(a == 13)
        self.lfs += len(lf)
        if not self.escapes:  # (a compare and a count a MiB: a sixtieth of the scan's time)
            self.escapes = (int(np.count_nonzero(a < 32)) != len(lf) + len(cr)
                            or bool(np.count_nonzero(a == 92)))
        if len(cr):
            inner = lf[lf > 0]
            self.crlfs += int(np.count_nonzero(a[inner - 1] == 13))
            if not self.bare_cr:
                c = cr[cr < n - 1]
                self.bare_cr = bool(np.count_nonzero(a[c + 1] != 10))
        if tail[-1:] == b"\r":  # a CR that ended the last block: its LF is this block's first byte, or it is bare
            if block[:1] == b"\n":
                self.crlfs += 1
            else:
                self.bare_cr = True
        if not self.blank:
            edge = tail + block[:2]
            steps = np.diff(lf)
            self.blank = (b"\n\n" in edge or b"\n\r\n" in edge or bool(np.count_nonzero(steps == 1))
                          or bool(np.count_nonzero(a[lf[:-1][steps == 2] + 1] == 13)))
        self.tail = (tail + block[-2:])[-2:]


def scan_file(f: io.BufferedReader, path: Path, hashed: bool = True) -> FileScan:
    """Hash an open file and look at its line ends, in 1 MiB blocks (bounded memory, C speed); the file is left
    at its start for the parse. Unless ``hashed``, the hash is left out (``sha256`` is empty): a reader whose
    consumer hashes the file at the same time needs the rest only, and that at a third of the cost."""
    h = hashlib.sha256() if hashed else None
    size = quotes = nuls = 0
    ends = _LineEnds()
    first = last = b""
    newline = None
    try:
        st = os.fstat(f.fileno())
        while block := f.read(SCAN_BLOCK):
            if h is not None:
                h.update(block)
            if not size:
                first = block[:8]
            if newline is None and b"\n" in block:
                i = block.index(b"\n")
                newline = "\r\n" if (block[i - 1:i] if i else last[-1:]) == b"\r" else "\n"
            # ("in" is a memchr; counting only where there is something to count keeps the scan at C speed)
            if b'"' in block:
                quotes += block.count(b'"')
            if b"\0" in block:
                nuls += block.count(b"\0")
            ends.add(block)
            size += len(block)
            last = block[-1:]
        f.seek(0)
    except OSError as e:
        raise InputError(str(path), f"cannot be read: {e.strerror}") from None
    newline = newline or "\n"
    bare_cr = ends.bare_cr or last == b"\r"  # (a CR that ends the file)
    mixed = ends.crlfs != (ends.lfs if newline == "\r\n" else 0)
    compressed = next((kind for magic, kind in _MAGIC.items() if first.startswith(magic)), None)
    return FileScan(h.hexdigest() if h is not None else "", size, st.st_mtime_ns, first[:3] == b"\xef\xbb\xbf",
                    newline, last == b"\n", quotes, nuls, compressed[0] if compressed else None, bare_cr, mixed,
                    ends.blank, ends.escapes, ends.lfs)


def hash_file(f: io.BufferedReader, path: Path) -> str:
    """The SHA-256 of an open file (what :func:`scan_file` gives as ``sha256``, alone)."""
    try:
        return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as e:
        raise InputError(str(path), f"cannot be read: {e.strerror}") from None


CHANGED = ("changed while it was being read (still being written?); nothing was stored: ingest it again once it "
           "is complete")


def decompress_hint(kind: str) -> str:
    """The command that unpacks a file of a compression ``kind``."""
    return next(tool for k, tool in _MAGIC.values() if k == kind)


class _Hashing(io.RawIOBase):
    """A raw reader that hashes what it hands on: the parse pass hashes exactly the bytes it parses."""

    def __init__(self, f: io.BufferedReader):
        self.f = f
        self.sha = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self.f.readinto(b)
        if n:
            self.sha.update(memoryview(b)[:n])
        return n or 0


class CsvReader:
    """Iterate over the data rows of one CSV as ``(row_no, cells)``; ``row_no`` 1 is the first row after the
    header. Raises :class:`InputError` naming the row for anything that cannot be stored faithfully.

    ``f`` is the open file that :func:`scan_file` hashed; :meth:`verify` checks, after the last row, that the
    bytes parsed are the bytes hashed and that the file did not change meanwhile."""

    def __init__(self, path: Path, f: io.BufferedReader, scan: FileScan):
        self.path = Path(path)
        self.scan = scan
        self.warnings: list[RowWarning] = []
        # False once something is seen that export cannot reproduce. Without quotes, rows round-trip exactly when
        # every line ends as the first one does (counted as the lines are read, see _lines); with quotes, the rows
        # are written again and hashed (see verify), which decides.
        self.exact = True
        self._odd_line_ends = 0  # lines that end otherwise than the first one, or with a CR alone
        self.rows_read = 0
        self._nul_rows = 0  # rows whose NUL bytes were replaced by U+FFFD
        if scan.size == 0:
            f.close()  # (the reader owns the file it is given: refused here, it is closed here)
            raise self._fail(None, "the file is empty; expected an ops_perf_results CSV with a header row")
        if scan.compressed:
            f.close()
            raise self._fail(None, f"is {scan.compressed}-compressed; decompress it first "
                                   f"({decompress_hint(scan.compressed)} FILE) and ingest the CSV")
        self._f = f
        self._hashing = _Hashing(f)
        self._buf = io.BufferedReader(self._hashing, 1 << 20)
        # Lines: without a CR alone anywhere in the file (the scan counted them), a line ends at LF only, and the
        # binary lines, decoded one by one, are the text reader's lines at a fifth of its cost. A CR alone is a
        # line end to the csv module too, so such files are read by the text reader, which splits there as well.
        # A decoding error sends either to _locate_decode_error.
        self._text = None if not scan.bare_cr else io.TextIOWrapper(self._buf, encoding="utf-8-sig",
                                                                      errors="strict", newline="")
        self._line_no = 0
        # Without a quote anywhere in the file, a record is a physical line split at commas (what the csv module
        # gives then, at half its cost); with quotes, the csv module parses.
        lines = self._lines() if self._text is not None else self._byte_lines()
        self._reader = csv.reader(lines, strict=False) if scan.quotes else _split_lines(lines)
        # When the file holds quotes, export's minimal quoting may not give its bytes back: every row is
        # written again as export writes it and hashed, and the two hashes decide.
        self._echo = hashlib.sha256(b"\xef\xbb\xbf" if scan.bom else b"") if scan.quotes else None
        self._echo_buf = io.StringIO()
        self._echo_writer = csv.writer(self._echo_buf, lineterminator=scan.newline)
        try:
            self.layout = self._read_header()
        except BaseException:
            self.close()
            raise

    @property
    def bytes_read(self) -> int:
        """How far into the file the parser is (for progress bars)."""
        return self._f.tell() if not self._f.closed else self.scan.size

    @property
    def _top(self) -> io.BufferedIOBase | io.TextIOWrapper:
        """The outermost reader (closing it closes those below)."""
        return self._text if self._text is not None else self._buf

    def close(self) -> None:
        self._top.close()
        self._f.close()

    def __enter__(self) -> CsvReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fail(self, row: int | None, message: str, column: str | None = None) -> InputError:
        return InputError(str(self.path), message, row=row, column=column)

    def _byte_lines(self) -> Iterator[str]:
        """Physical lines of a file with no CR alone, each at most MAX_LINE bytes (a longer one is an error, not
        a memory spike): what :meth:`_lines` gives for such a file."""
        readline = self._buf.readline
        limit = MAX_LINE + 1
        crlf = self.scan.newline == "\r\n"
        bom = self.scan.bom
        while True:
            raw = readline(limit)
            if len(raw) == limit and raw[-1:] != b"\n":
                raise self._too_long()
            if bom:  # (the utf-8-sig decoder drops it from the text's start)
                raw, bom = raw[3:], False
            if not raw:
                return
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise self._locate_decode_error() from None
            if line[-1] == "\n":
                self._line_no += 1
                if (line[-2:] == "\r\n") != crlf:
                    self._odd_line_ends += 1
            yield line

    def _too_long(self) -> InputError:
        return self._fail(self.rows_read + 1 if self._line_no else 0,
                          f"line {self._line_no + 1} is longer than {MAX_LINE // (1 << 20)} MiB; a damaged "
                          "file? (tt-metal rows are a few KiB)")

    def _lines(self) -> Iterator[str]:
        """Physical lines, each at most MAX_LINE characters (a longer one is an error, not a memory spike)."""
        assert self._text is not None
        readline = self._text.readline
        limit = MAX_LINE + 1
        crlf = self.scan.newline == "\r\n"
        while True:
            try:
                line = readline(limit)
            except UnicodeDecodeError:
                raise self._locate_decode_error() from None
            if not line:
                return
            # a physical line ends with LF; a CR alone (which readline also splits at) is inside a line
            end = line[-1]
            if end == "\n":
                self._line_no += 1
                if (line[-2:] == "\r\n") != crlf:
                    self._odd_line_ends += 1
            elif end == "\r":
                self._odd_line_ends += 1
            if len(line) == limit and line[-1] not in "\r\n":
                raise self._too_long()
            yield line

    def _locate_decode_error(self) -> InputError:
        """The slow path: re-read line by line to name the row and byte that are not UTF-8."""
        rows = -1
        with open(self.path, "rb") as f:
            if self.scan.bom:
                f.read(3)
            line_no = 0

            def lines() -> Iterator[str]:
                nonlocal line_no
                while raw := f.readline(MAX_LINE + 1):
                    line_no += 1
                    try:
                        yield raw.decode("utf-8")
                    except UnicodeDecodeError as e:
                        raise self._fail(max(rows + 1, 0), f"byte {e.start} of line {line_no} is not UTF-8 "
                                         f"(0x{raw[e.start]:02x}); re-save the file as UTF-8") from None
            try:
                for _ in csv.reader(lines(), strict=False):
                    rows += 1
            except csv.Error:
                pass
        return self._fail(None, "is not UTF-8; re-save the file as UTF-8")

    def _next(self) -> list[str]:
        before = self._line_no
        try:
            cells = next(self._reader)
        except csv.Error as e:
            raise self._fail(self.rows_read + 1, f"not valid CSV ({e})") from None
        layout = getattr(self, "layout", None)
        if self._line_no - before > 1 and not (layout is not None and len(cells) == len(layout.header)
                                               and self._line_no - before <= MAX_CELL_LINES):
            # A quoted cell ran over line ends. RFC 4180 allows it (a re-saved file can hold one), and such a row
            # has the header's width; a stray quote instead swallows the rest of the file (or many rows) into one
            # cell, and the row comes out narrow.
            row = self.rows_read + 1 if before else 0
            col = next((i for i, c in enumerate(cells) if "\n" in c or "\r" in c), None)
            name = None
            if col is not None:
                header = getattr(self, "layout", None)
                name = header.header[col] if header and col < len(header.header) else f"#{col + 1}"
            raise self._fail(row, f"a quoted cell opens on line {before + 1} and runs over "
                                  f"{self._line_no - before} lines{' to the end of the file' if self._at_end() else ''}"
                                  "; a stray '\"'? Fix or remove the quote", column=name)
        if self.scan.nuls and any("\0" in c for c in cells):
            cells = [c.replace("\0", "\ufffd") for c in cells]
            self.exact = False
            self._nul_rows += 1
        if self._echo is not None:
            self._echo_writer.writerow(cells)
        return cells

    def _at_end(self) -> bool:
        """Whether the parser has consumed the whole file (for error messages only: it reads ahead)."""
        return self._f.tell() >= self.scan.size and not self._top.read(1)

    def _read_header(self) -> Layout:
        try:
            header = self._next()
        except StopIteration:
            raise self._fail(None, "the file is empty; expected an ops_perf_results CSV with a header row") from None
        if len(header) > MAX_COLUMNS:
            raise self._fail(0, f"the header has {len(header):,} columns, over the limit of {MAX_COLUMNS:,} (a "
                                "tt-metal capture has a few hundred at most); is this an ops_perf_results CSV?")
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

    def _echo_flush(self, final: bool = False) -> None:
        """Hash what the echo buffer holds; until the end, hold back the last two characters (a possible final
        line end, which the export drops when the file had none)."""
        if self._echo is None:
            return
        v = self._echo_buf.getvalue()
        if final:
            nl = self.scan.newline
            if not self.scan.final_newline and v.endswith(nl):
                v = v[: -len(nl)]
            keep = ""
        else:
            keep = v[-2:]
            v = v[: len(v) - len(keep)]
        self._echo.update(v.encode("utf-8", "surrogatepass"))
        self._echo_buf.seek(0)
        self._echo_buf.truncate()
        self._echo_buf.write(keep)

    def verify(self) -> None:
        """After the last row: the bytes parsed are the bytes hashed before, and the file did not change while
        it was read (a nightly job may still be writing it). Decides whether export gives the file back."""
        while self._hashing.read(1 << 20):  # anything the parser did not need still belongs to the content
            pass
        try:
            st = os.fstat(self._f.fileno())
            now = os.stat(self.path)
        except OSError:
            now = st = None  # type: ignore[assignment]
        # (a scan without the hash leaves that comparison to whoever hashed: see Finish.sha256 in rowprep)
        changed = ((self.scan.sha256 and self.parsed_sha256 != self.scan.sha256) or st is None or now is None
                   or st.st_size != self.scan.size or st.st_mtime_ns != self.scan.mtime_ns
                   or now.st_size != self.scan.size or now.st_mtime_ns != self.scan.mtime_ns)
        if changed:
            raise self._fail(None, CHANGED)
        if self._nul_rows:
            self.warnings.append(RowWarning(None, None, f"{self._nul_rows} row(s) hold NUL bytes (tt-metal never "
                                            "writes them): stored as U+FFFD, so export gives U+FFFD"))
        if self._echo is not None and self.exact:
            self._echo_flush(final=True)
            self.exact = self._echo.hexdigest() == self.parsed_sha256
        elif self._odd_line_ends:
            self.exact = False

    @property
    def parsed_sha256(self) -> str:
        """The SHA-256 of the bytes parsed (once the last row is read: of the file as it was read)."""
        return self._hashing.sha.hexdigest()

    def exact_file(self) -> bool:
        """After reading: whether export can give the file back byte for byte."""
        return self.exact

    def rest(self) -> io.BufferedIOBase:
        """The bytes after the header, for a columnar parser of a file whose lines end with LF alone (the bytes
        it reads are hashed as :meth:`rows` 's are; it sets :attr:`rows_read`)."""
        assert self._text is None
        return self._buf

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
            if self._echo is not None and self._echo_buf.tell() > 1 << 20:
                self._echo_flush()
            yield self.rows_read, cells


def _split_lines(lines: Iterator[str]) -> Iterator[list[str]]:
    """The records of lines that hold no quote: ``csv.reader`` gives exactly these (a blank line is ``[]``)."""
    for line in lines:
        s = line.rstrip("\r\n")
        yield s.split(",") if s else []


def cells_getter(indexes: list[int]) -> Callable[[list[str]], tuple[str, ...]]:
    """A fast picker of the cells at ``indexes``, always giving a tuple (``itemgetter`` of one index gives the
    bare item, of none an error)."""
    if len(indexes) > 1:
        return itemgetter(*indexes)
    if indexes:
        i = indexes[0]
        return lambda row: (row[i],)
    return lambda row: ()


"""A volatile cell stored as its op's typed value (see :func:`warehouse.registry.columns.stored_once`): JSON null."""


def write_rows(out: IO[str], header: list[str], rows: Iterator[list[str]], newline: str) -> None:
    """Write a CSV as tt-metal does (minimal quoting) with the given line ends, in slices of a few hundred rows.
    A row whose cells need no quoting (no separator, quote or line end in any) is joined as it is; the others, as
    the csv module writes them (a row of one cell, say, whose empty cell it quotes)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=newline)

    def quoted(row: list[str]) -> str:
        buf.seek(0)
        buf.truncate()
        w.writerow(row)
        return buf.getvalue()
    commas = len(header) - 1
    lines = [quoted(header)]
    for row in rows:
        try:
            line = ",".join(row)
        except TypeError:  # (a cell that is not text: the csv module prints it)
            lines.append(quoted(row))
            continue
        if commas < 1 or line.count(",") != commas or '"' in line or "\n" in line or "\r" in line:
            lines.append(quoted(row))
        else:
            lines.append(line + newline)
        if len(lines) >= 512:  # (~0.7 MB a slice: a server that streams a download keeps little)
            out.write("".join(lines))
            lines.clear()
    out.write("".join(lines))
