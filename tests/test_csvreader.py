"""The CSV reader's two ways of cutting a file into lines (warehouse/capture/csvfile.py): binary lines decoded one by
one
(files without a CR alone, which is every file tt-metal writes) and the text reader (files with one). For a file
without a CR alone both give the same rows, warnings, errors and exactness; the scan's count of lone CRs, which
chooses between them, is right across its block boundaries."""
from __future__ import annotations

import dataclasses
import random
import re
from pathlib import Path

import pytest

from warehouse.capture.csvfile import CsvReader, scan_file
from warehouse.errors import InputError

HEADER = b"OP CODE,OP TYPE,X\n"


def _read(path: Path, text_reader: bool) -> tuple:
    """Everything a reader tells about a file: rows, warnings, exactness and where lines were counted, or the
    error it raised."""
    with open(path, "rb") as f:
        scan = scan_file(f, path)
    if text_reader:
        scan = dataclasses.replace(scan, bare_cr=True)
    try:
        with CsvReader(path, open(path, "rb"), scan) as r:
            rows = list(r.rows())
            r.verify()
            return (rows, [dataclasses.astuple(w) for w in r.warnings], r.exact_file(), r._line_no,
                    r._odd_line_ends, r.layout.header)
    except InputError as e:
        return ("error", str(e), e.row, e.column)


def test_binary_lines_read_as_the_text_reader(tmp_path):
    """3,000 random files without a CR alone (LF, CRLF, quotes, blank lines, a BOM, NULs, non-ASCII, bytes that
    are not UTF-8): the binary lines give what the text reader gives, errors included. One difference is
    meant: the text reader decodes 8 KiB ahead, so in a file with a byte that is not UTF-8 *and* an earlier
    problem (a stray quote), it names the byte; the binary lines name the first problem in the file. Both fail
    such a file, and a decoding error, when it is the one named, is named alike."""
    rng = random.Random(7)
    alphabet = [b"a", b"7", b",", b",", b"\n", b"\r\n", b'"', b" ", b"\0", "é".encode(), b"\xff", b""]
    lone = [b"\r", b"a"]  # (a tenth of the files get a CR alone somewhere: the scan must say so)
    f = tmp_path / "ops_perf_results_x.csv"
    kinds = set()
    for _ in range(3000):
        body = b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        if rng.random() < 0.1:
            body += rng.choice(lone) + b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3)))
        head = HEADER.replace(b"\n", b"\r\n") if rng.random() < 0.3 else HEADER
        data = (b"\xef\xbb\xbf" if rng.random() < 0.2 else b"") + head + body
        f.write_bytes(data)
        with open(f, "rb") as fh:
            bare = scan_file(fh, f).bare_cr
        assert bare is (re.search(rb"\r(?!\n)", data) is not None), repr(data)
        if bare:
            continue
        fast, text = _read(f, False), _read(f, True)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            assert fast[0] == text[0] == "error", repr(data)
            if "not UTF-8" in fast[1]:
                assert fast == text, repr(data)
        else:
            assert fast == text, repr(data)
        kinds.add(fast[0] == "error")
    assert kinds == {True, False}  # (both outcomes were exercised)


@pytest.mark.parametrize("at_boundary, bare", [(b"\r\n", False), (b"\rx", True), (b"\r", True)])
def test_scan_counts_lone_crs_across_blocks(tmp_path, at_boundary, bare):
    """The scan reads 1 MiB blocks: a CRLF cut by a block boundary is no lone CR; a CR before anything else is."""
    f = tmp_path / "ops_perf_results_big.csv"
    pad = (1 << 20) - len(HEADER) - 1  # the CR is the block's last byte
    f.write_bytes(HEADER + b"a" * pad + at_boundary + b"b\r\n")
    with open(f, "rb") as fh:
        assert scan_file(fh, f).bare_cr is bare


def test_lone_cr_files_take_the_text_reader(tmp_path):
    """A file with a CR alone is read by the text reader, which ends a line there as the csv module does."""
    f = tmp_path / "ops_perf_results_cr.csv"
    f.write_bytes(HEADER + b"Matmul,tt_dnn_device,1\rAdd,tt_dnn_device,2\n")
    rows, _warnings, exact, *_ = _read(f, False)
    assert rows == [(1, ["Matmul", "tt_dnn_device", "1"]), (2, ["Add", "tt_dnn_device", "2"])]
    assert exact is False


def _reference_line_ends(data: bytes) -> tuple[bool, bool, bool, bool]:
    """(bare CR, mixed line ends, blank line) of a whole file, by the definitions, on the bytes at once."""
    first = data.find(b"\n")
    crlf_file = first > 0 and data[first - 1:first] == b"\r"
    lfs, crlfs = data.count(b"\n"), data.count(b"\r\n")
    bare = re.search(rb"\r(?!\n)", data) is not None
    mixed = crlfs != (lfs if crlf_file else 0)
    blank = b"\n\n" in data or b"\n\r\n" in data
    escapes = re.search(rb"[\x00-\x09\x0b\x0c\x0e-\x1f\\\\]", data) is not None
    return bare, mixed, blank, escapes


def test_scan_line_ends_equal_the_definitions_across_block_edges(tmp_path, monkeypatch):
    """The scan finds line ends a block at a time (numpy, warehouse/capture/csvfile.py): with 1 to 7-byte blocks, so
    that every pattern falls across an edge somewhere, 4,000 random files give what the whole-file definitions
    give (a CR alone, a line end unlike the first line's, an empty line, a byte JSON escapes)."""
    import warehouse.capture.csvfile as csvfile

    rng = random.Random(11)
    alphabet = [b"a", b",", b"\n", b"\r\n", b"\r", b"\n\n", b"\r\n\r\n", b"\n\r\n", b"\\", b"\t", b"\x1f"]
    f = tmp_path / "ops_perf_results_ends.csv"
    seen = set()
    for _ in range(4000):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        monkeypatch.setattr(csvfile, "SCAN_BLOCK", rng.randint(1, 7))
        f.write_bytes(data)
        with open(f, "rb") as fh:
            s = scan_file(fh, f)
        got = (s.bare_cr, s.mixed_ends, s.blank_line, s.escapes)
        assert got == _reference_line_ends(data), (repr(data), csvfile.SCAN_BLOCK)
        seen.add(got)
    assert len(seen) == 16  # (every combination of the four was met)
