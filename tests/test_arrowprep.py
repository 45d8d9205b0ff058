"""The columnar path (warehouse.capture.arrowprep) gives exactly the batches of the line path, on every corpus capture
and on files that send it back to the line path in the middle (a short row, a cell that needs escaping)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from warehouse.capture import plan as budgets
from warehouse.capture import prepared, rowprep
from warehouse.capture.csvfile import scan_file

pytest.importorskip("pyarrow")
DATA = Path(__file__).parent / "data"
CAPTURES = sorted(DATA.glob("real/*.csv")) + sorted(DATA.glob("seedfmt/**/ops_perf_results_*.csv"))


def _items(path: Path, columnar: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list, int | None]:
    """Every item of prepare() (progress left out) and where the columnar path stopped (None: it read all)."""
    monkeypatch.setattr(budgets, "COLUMNAR_MIN_BYTES", 0 if columnar else None)
    from warehouse.capture import arrowprep
    stops: list[int | None] = []
    real = arrowprep.columnar_batches

    def spy(prep):
        stopped = yield from real(prep)
        stops.append(stopped)
        return stopped
    monkeypatch.setattr(arrowprep, "columnar_batches", spy)
    out = [dataclasses.replace(i, bytes_read=0) if isinstance(i, prepared.Batch) else i
           for i in rowprep.prepare(path)]
    assert bool(stops) == columnar
    return out, stops[0] if stops else None


def _same(path: Path, monkeypatch: pytest.MonkeyPatch) -> int | None:
    fast, stopped = _items(path, True, monkeypatch)
    line, _ = _items(path, False, monkeypatch)
    assert len(fast) == len(line)
    for a, b in zip(fast, line):
        assert a == b
    return stopped


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_columnar_batches_equal_line_batches(path, monkeypatch):
    assert CAPTURES
    assert _same(path, monkeypatch) is None  # (read whole by the columnar path)


def _long(tmp_path: Path, rows: int) -> tuple[Path, list[bytes]]:
    src = DATA / "real" / "ttperfreport__bh_p100_dlv3.csv"
    header, *body = src.read_bytes().split(b"\r\n")
    body = [r for r in body if r]
    lines = [body[i % len(body)] for i in range(rows)]
    return tmp_path / "ops_perf_results_2026_01_01_02_00_00.csv", [header, *lines]


def test_short_row_hands_over_to_line_path(tmp_path, monkeypatch):
    path, lines = _long(tmp_path, 12_000)
    lines[9_500] = lines[9_500].rsplit(b",", 1)[0]  # one cell short: the line path pads it, with a warning
    path.write_bytes(b"\r\n".join(lines) + b"\r\n")
    # (pyarrow parses a block ahead, so the row it stops at is a multiple of BATCH before the short one)
    stopped = _same(path, monkeypatch)
    assert stopped is not None and stopped % prepared.BATCH == 0 and stopped <= 9_500
    fast, _ = _items(path, True, monkeypatch)
    assert any("padded" in w.message for w in fast[-1].warnings)


def test_escaped_cell_hands_over_to_line_path(tmp_path, monkeypatch):
    path, lines = _long(tmp_path, 10_000)
    header = lines[0].split(b",")
    col = header.index(b"DEVICE KERNEL DURATION [ns]")
    cells = lines[9_000].split(b",")
    cells[col] = b"12\\3"  # a volatile cell that needs escaping in JSON (and is not a number)
    lines[9_000] = b",".join(cells)
    path.write_bytes(b"\r\n".join(lines))  # (no final line end, too)
    assert _same(path, monkeypatch) == 8_000


# Cells that the compiled casts read otherwise than Python's float() and int(), or refuse where Python reads them
_ODD_NUMBERS = {
    "GLOBAL CALL COUNT": ["0x10", "0X1f", "+5", "1_000", "\u0665", "5.0", "9223372036854775808", " 7", "-0", "1e3"],
    "CORE COUNT": ["2147483648", "-2147483649", "2147483647", "+64", "0x40"],
    "DEVICE KERNEL DURATION [ns]": ["nan", "inf", "1e400", "+1.5", "1_0.5", " 3", "1.5e-400", "-0.0", "Infinity", ".5",
                                    "5.", "0x10"],
}


@pytest.mark.parametrize("column,odd", [(c, v) for c, vs in sorted(_ODD_NUMBERS.items()) for v in vs])
def test_odd_numbers_are_read_as_python_reads_them(tmp_path, monkeypatch, column, odd):
    """A number in a form that the compiled cast reads otherwise than Python (hexadecimal, not finite, beyond 32
    or 64 bits) or refuses (a sign, blanks, underscores, non-ASCII digits) is typed as the line path types it,
    and counted alike when it is not a number; the columnar path reads the file whole all the same. (One odd
    cell a file: its column's other cells are all plain, so the cast alone decides.)"""
    path, lines = _long(tmp_path, prepared.BATCH + 77)
    header = lines[0].decode().split(",")
    col, kind = header.index(column), header.index("OP TYPE")
    at = next(k for k in range(1_000, len(lines)) if lines[k].decode().split(",")[kind] != "signpost")
    cells = lines[at].decode().split(",")
    cells[col] = odd
    lines[at] = ",".join(cells).encode()
    path.write_bytes(b"\r\n".join(lines) + b"\r\n")
    assert _same(path, monkeypatch) is None


@pytest.mark.parametrize("body,mixed,blank", [
    (b"h\r\na\r\nb\r\n", False, False), (b"h\na\nb", False, False), (b"h\r\na\nb\r\n", True, False),
    (b"h\na\r\nb\n", True, False), (b"h\r\na\r\n\r\nb\r\n", False, True), (b"h\na\n\nb\n", False, True),
    (b"h\na\n\n", False, True)])
def test_scan_sees_line_ends(tmp_path, body, mixed, blank):
    p = tmp_path / "f.csv"
    p.write_bytes(body)
    with open(p, "rb") as f:
        s = scan_file(f, p)
    assert (s.mixed_ends, s.blank_line) == (mixed, blank)


def test_whole_batches_and_empty_export_cells(tmp_path, monkeypatch):
    """A file of whole batches ends with an empty one, as the line path's does; a row whose export cells are
    all empty is '[]'."""
    path, lines = _long(tmp_path, 4 * prepared.BATCH)
    from warehouse.capture.csvfile import VOLATILE
    header = lines[0].decode().split(",")
    cells = lines[100].decode().split(",")
    lines[100] = ",".join("" if VOLATILE.search(h) else c for h, c in zip(header, cells)).encode()
    path.write_bytes(b"\r\n".join(lines) + b"\r\n")
    assert _same(path, monkeypatch) is None
    fast, _ = _items(path, True, monkeypatch)
    batches = [i for i in fast if isinstance(i, prepared.Batch)]
    assert len(batches) == 5 and not batches[-1].rows
    assert "[]" in [t for b in batches for c in b.chunks for t in c.texts]


def test_small_blocks_make_the_same_windows(tmp_path, monkeypatch):
    """Windows put together from many blocks (each cut at its last line end) are the windows of one block."""
    from warehouse.capture import arrowprep
    path, lines = _long(tmp_path, 9_000)
    path.write_bytes(b"\r\n".join(lines))  # (the last line without its line end, in a block of its own)
    monkeypatch.setattr(arrowprep, "BLOCK", 10_000)
    assert _same(path, monkeypatch) is None


@pytest.mark.parametrize("length,hands_over", [(70_000, False), (200_000, True)])
def test_long_lines(tmp_path, monkeypatch, length, hands_over):
    """A line longer than a block is parsed whole with the next block; one that outgrows that is the line
    path's, from a whole batch before it."""
    from warehouse.capture import arrowprep
    path, lines = _long(tmp_path, 9_000)
    header = lines[0].split(b",")
    col = header.index(b"ATTRIBUTES")
    cells = lines[6_100].split(b",")
    cells[col] = b"x" * length
    lines[6_100] = b",".join(cells)
    path.write_bytes(b"\r\n".join(lines) + b"\r\n")
    monkeypatch.setattr(arrowprep, "BLOCK", 64 << 10)
    stopped = _same(path, monkeypatch)
    if hands_over:
        assert stopped is not None and stopped % prepared.BATCH == 0 and stopped <= 6_100
    else:
        assert stopped is None
