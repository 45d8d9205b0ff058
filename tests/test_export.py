"""Export gives the original file back: byte for byte for the corpus, cell for cell for anything else."""
from __future__ import annotations

import csv

import pytest

from corpus import cases


@pytest.mark.parametrize("case", list(cases()))
def test_export_byte_identical(corpus_wh, case, tmp_path):
    invoke, ids, _ = corpus_wh
    out = tmp_path / "out.csv"
    r = invoke("export", ids[case], "-o", out)
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == cases()[case].read_bytes()


def test_export_stdout(corpus_wh):
    invoke, ids, _ = corpus_wh
    r = invoke("export", ids["ttperfreport__bh20_oft_integral_image_trace"])
    assert r.exit_code == 0
    assert r.stdout_bytes == cases()["ttperfreport__bh20_oft_integral_image_trace"].read_bytes()


def test_export_same_cells_for_odd_files(wh, tmp_path):
    """Mixed line ends, short rows, no final newline, a BOM, separators inside cells: same header and cells."""
    src = tmp_path / "ops_perf_results_odd.csv"
    header = ["OP CODE", "OP TYPE", "ATTRIBUTES", "DEVICE KERNEL DURATION [ns]", "HOST START TS"]
    raw = ("\ufeff" + ",".join(header) + "\r\n" + "Matmul,tt_dnn_device,\"a,\x1fb\",100,1\n"
           + "Conv2d,tt_dnn_device,x\r\n" + "eager,signpost,,,5\r\n" + "Add,tt_dnn_device,\"a \"\"b\"\"\",7,9")
    src.write_bytes(raw.encode())
    r = wh("ingest", src)
    assert r.exit_code == 0, r.output
    out = tmp_path / "out.csv"
    assert wh("export", "1", "-o", out).exit_code == 0
    with open(src, newline="", encoding="utf-8-sig") as f:
        want = [row + [""] * (len(header) - len(row)) for row in csv.reader(f)]
    with open(out, newline="", encoding="utf-8-sig") as f:
        got = list(csv.reader(f))
    assert got == want
    assert out.read_bytes().startswith(b"\xef\xbb\xbf")
    warn = wh("runs", "--warnings").output
    assert "row 2: 3 cells but the header has 5" in warn
    import json
    assert json.loads(wh("runs", "--json").output)[0]["export_exact"] is False


def test_export_exact_flag(corpus_wh):
    import json
    invoke, ids, _ = corpus_wh
    assert all(r["export_exact"] is True for r in json.loads(invoke("runs", "--json").output))


@pytest.mark.parametrize("content, exact", [(b"OP CODE,X\r\na,1\r\nb,2\r\n", True), (b"OP CODE,X\na,1\nb,2", True),
                                            (b"OP CODE,X\r\na,1\nb,2\r\n", False), (b"OP CODE,X\na,1\r\n", False)])
def test_export_exact_detects_line_ends(wh, tmp_path, content, exact):
    import json
    f = tmp_path / "ops_perf_results_nl.csv"
    f.write_bytes(content)
    assert wh("ingest", f).exit_code == 0
    assert json.loads(wh("runs", "--json").output)[0]["export_exact"] is exact
    out = tmp_path / "o.csv"
    wh("export", "1", "-o", out)
    assert (out.read_bytes() == content) is exact


def test_export_unknown_run(wh, corpus_copy):
    wh("ingest", corpus_copy("dlv3_same"))
    r = wh("export", "7")
    assert r.exit_code == 2 and r.output.startswith("Error: no run 7")


def test_quote_free_records_are_split_lines():
    """Files without a quote are split at commas, line by line: the records are those of the csv module, for
    every mix of line ends (CR alone, CRLF, LF), blank lines, empty cells, NULs and non-ASCII text."""
    import io
    import random
    from warehouse.capture.csvfile import _split_lines
    rng = random.Random(5)
    alphabet = ["a", "7", ",", ",", "\r", "\n", "\r\n", " ", "\0", "é", "\x1f", ""]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        lines = list(io.StringIO(text, newline=""))
        assert list(_split_lines(iter(lines))) == list(csv.reader(iter(lines), strict=False)), repr(text)


def test_quote_free_file_round_trip(wh, tmp_path):
    """A quote-free file with CR-alone and mixed line ends and blank lines: same cells back, and the exact flag
    says whether the bytes come back."""
    import json
    src = tmp_path / "ops_perf_results_noquote.csv"
    content = b"OP CODE,OP TYPE,X\r\nMatmul,tt_dnn_device,1\r\n\r\nAdd,tt_dnn_device,\r2\r\nAdd,tt_dnn_device,3"
    src.write_bytes(content)
    assert wh("ingest", src).exit_code == 0
    out = tmp_path / "o.csv"
    assert wh("export", "1", "-o", out).exit_code == 0
    with open(src, newline="", encoding="utf-8") as f:
        want = [r + [""] * (3 - len(r)) for r in csv.reader(f) if r]
    with open(out, newline="", encoding="utf-8") as f:
        assert list(csv.reader(f)) == want
    assert json.loads(wh("runs", "--json").output)[0]["export_exact"] is False


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_rows_are_written_as_the_csv_module_writes_them(newline):
    """Rows are joined as they are when no cell needs quoting; any other row (a separator, a quote or a line end
    in a cell, a row of one empty cell, a cell that is not text, a short row) is the csv module's own."""
    import io as _io

    from warehouse.capture.csvfile import write_rows

    header = ["A", "B", "C"]
    rows = [["1", "2", "3"], ["a,b", "x", ""], ['say "hi"', "", ""], ["line\nbreak", "cr\r", "y"], ["", "", ""],
            ["z", None, 7], ["short"], ["a", "b", "c", "d"], [" lead", "trail ", "\x1f"]] * 300  # (past a slice)
    def first_difference(got: str, want: str) -> int | None:  # (pytest's diff of two long texts takes minutes)
        return next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None if got == want else 0)

    got = _io.StringIO()
    write_rows(got, header, iter(rows), newline)
    want = _io.StringIO()
    w = csv.writer(want, lineterminator=newline)
    w.writerow(header)
    w.writerows(rows)
    at = first_difference(got.getvalue(), want.getvalue())
    assert at is None, (got.getvalue()[at:at + 80], want.getvalue()[at:at + 80])
    one = _io.StringIO()
    write_rows(one, ["ONLY"], iter([[""], ["x"], ["a,b"]]), newline)  # (one column: an empty cell is quoted)
    want = _io.StringIO()
    csv.writer(want, lineterminator=newline).writerows([["ONLY"], [""], ["x"], ["a,b"]])
    assert one.getvalue() == want.getvalue()
