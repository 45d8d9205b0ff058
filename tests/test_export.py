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
           + "Conv2d,tt_dnn_device,x\r\n" + "eager,signpost,,,5\r\n" + "Add,tt_dnn_device,\"multi\nline\",7,9")
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


def test_export_unknown_run(wh, corpus_copy):
    wh("ingest", corpus_copy("dlv3_same"))
    r = wh("export", "7")
    assert r.exit_code == 1 and r.output.startswith("Error: no run 7")
