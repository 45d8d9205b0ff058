"""Bad input: one Error line naming file and row, exit 1, nothing of that file stored, the others still go in."""
from __future__ import annotations


import pytest
from sqlalchemy import text

from corpus import cases
from warehouse.store.db import open_db

HEADER = "OP CODE,OP TYPE,GLOBAL CALL COUNT,DEVICE KERNEL DURATION [ns]\r\n"


def _counts(url):
    eng = open_db(url)
    with eng.connect() as c:
        out = {t: c.execute(text(f"SELECT COUNT(*) FROM {t}")).scalar() for t in
               ("run", "op", "signpost", "section", "run_tag", "run_warning")}
    eng.dispose()
    return out


BAD = {
    "missing": (None, "no such file"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x00\x01", "is not UTF-8"),
    "empty": (b"", "the file is empty"),
    "no_name_column": (b"A,B,C\r\n1,2,3\r\n", "no 'OP CODE' or 'OP NAME' column"),
    "long_row": ((HEADER + "Matmul,tt_dnn_device,1,100\r\nConv2d,tt_dnn_device,2,200,extra\r\n").encode(),
                 "row 2: column '#5': 5 cells but the header has 4 columns"),
    "latin1": ((HEADER + "Matmul,tt_dnn_device,1,100\r\n").encode() + "Caf\xe9,tt_dnn_device,2,1\r\n".encode("latin-1"),
               "row 2: byte 3 of line 3 is not UTF-8"),
    "bad_quote": ((HEADER + 'Matmul,"tt_dnn_device\r\nAdd,tt_dnn_device,2,5\r\n').encode(),
                  "row 1: column 'OP TYPE': a quoted cell opens on line 2 and runs over 2 lines to the end of the "
                  "file; a stray '\"'?"),
}


@pytest.mark.parametrize("kind", list(BAD))
def test_bad_input(wh, db_url, tmp_path, kind):
    content, message = BAD[kind]
    bad = tmp_path / f"ops_perf_results_{kind}.csv"
    if content is not None:
        bad.write_bytes(content)
    good = tmp_path / "ops_perf_results_2026_01_01_00_00_00.csv"
    good.write_bytes(cases()["ttperfreport__bh20_oft_integral_image_trace"].read_bytes())
    r = wh("ingest", bad, good, "--tag", "k=v")
    errors = [line for line in r.output.splitlines() if line.startswith("Error:")]
    assert r.exit_code == 1
    assert len(errors) == 1, r.output
    assert errors[0].startswith(f"Error: {bad}: ") and message in errors[0], errors[0]
    assert "Traceback" not in r.output
    counts = _counts(db_url)
    assert counts["run"] == 1 and counts["op"] == 21 and counts["run_tag"] == 1  # only the good file


def test_failure_midway_leaves_nothing(wh, db_url, tmp_path):
    """A bad row after thousands of good ones (past several insert chunks) rolls the whole file back."""
    src = cases()["oft_mismatch"].read_bytes()
    bad = tmp_path / "ops_perf_results_late.csv"
    bad.write_bytes(src + b"x,y" + b",z" * 200 + b"\r\n")
    r = wh("ingest", bad)
    assert r.exit_code == 1
    assert "row 3377" in r.output
    assert all(v == 0 for v in _counts(db_url).values())


def test_bad_options(wh, corpus_copy):
    f = corpus_copy("dlv3_same")
    r = wh("ingest", f, "--tag", "novalue")
    assert r.exit_code == 2 and "Error: --tag 'novalue': expected key=value" in r.output
    r = wh("ingest", f, "--freq-mhz", "-5")
    assert r.exit_code == 2 and "--freq-mhz -5.0: expected a chip frequency in MHz" in r.output


def test_bad_db_location(tmp_path, corpus_copy):
    from click.testing import CliRunner
    from warehouse.cli import cli
    r = CliRunner().invoke(cli, ["--db", str(tmp_path / "nope" / "w.db"), "runs"])
    assert r.exit_code == 2 and "no warehouse at" in r.output  # a read-only command never creates one
    r = CliRunner().invoke(cli, ["--db", "postgresql+nodriver://x/y", "runs"])
    assert r.exit_code == 2 and r.output.startswith("Error:")
