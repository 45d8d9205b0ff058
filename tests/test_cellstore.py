"""Compact storage of the export cells: chunks of rows, compressed on SQLite by the sqlar convention (the stock
sqlite3 shell reads csv_cell too), left to TOAST on PostgreSQL; export stays byte for byte (tests/test_export.py)."""
from __future__ import annotations

import json
import shutil
import subprocess
import zlib

import pytest
from sqlalchemy import text

from corpus import cases
from warehouse.capture.packing import CHUNK_ROWS, sqlar_uncompress
from warehouse.store.cells import pack, unpack
from warehouse.store.db import open_db

ROWS = [(1, 7, '["a","b"]'), (2, 7, "[]"), (3, 9, '["1.5","","x"]')]


@pytest.mark.parametrize("compress", [True, False])
def test_pack_unpack_round_trip(compress):
    rows = [(n, n % 5, json.dumps([str(n * 1000003 % 97), "", "17"])) for n in range(1, 600)]
    v = pack(rows, compress)
    assert (v["first_row"], v["last_row"], v["row_nos"]) == (1, 599, None)
    assert (len(v["cells"]) < v["raw_size"]) is compress
    back = list(unpack(v["first_row"], v["row_nos"], v["static_ids"], v["raw_size"], v["cells"]))
    assert back == [(n, s, json.loads(c)) for n, s, c in rows]


def test_rows_that_are_not_consecutive_keep_their_numbers():
    rows = [(2, 1, "[]"), (5, 3, '["q"]'), (6, 3, '["r"]')]
    v = pack(rows, True)
    assert json.loads(v["row_nos"]) == [2, 5, 6]
    assert [r[0] for r in unpack(v["first_row"], v["row_nos"], v["static_ids"], v["raw_size"], v["cells"])] == [2, 5, 6]


def test_a_chunk_that_does_not_shrink_is_stored_as_it_is():
    v = pack(ROWS[:1], True)  # 9 bytes: zlib's header alone makes it longer
    assert v["cells"] == b'[["a","b"]]' and v["raw_size"] == len(v["cells"])
    assert sqlar_uncompress(v["cells"], v["raw_size"]) == v["cells"]
    assert sqlar_uncompress(zlib.compress(b"x" * 100), 100) == b"x" * 100


def _ingested(tmp_path, case="dlv3_same"):
    from click.testing import CliRunner
    from warehouse.cli import cli

    db = str(tmp_path / "w.db")
    r = CliRunner().invoke(cli, ["--db", db, "ingest", str(cases()[case])], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return db


def test_sqlite_chunks_are_compressed_and_chunked(tmp_path):
    db = _ingested(tmp_path)
    eng = open_db(db, create=False)
    with eng.connect() as c:
        rows, packed, raw = c.execute(text(
            "SELECT COUNT(*), SUM(LENGTH(cells)), SUM(raw_size) FROM cell_chunk")).one()
        n_rows = c.execute(text("SELECT row_count FROM run")).scalar()
    eng.dispose()
    assert rows == -(-n_rows // CHUNK_ROWS)
    assert packed < 0.35 * raw  # zlib takes real captures' cells to a fifth to a quarter


def test_the_stock_sqlite3_shell_reads_csv_cell(tmp_path):
    """csv_cell needs sqlar_uncompress, which the sqlite3 shell has built in: plain SQL outside the warehouse."""
    shell = shutil.which("sqlite3")
    assert shell, "the sqlite3 shell is needed (.ci/run installs it)"
    db = _ingested(tmp_path)
    sql = ("SELECT row_no, column_name, value FROM csv_cell WHERE run_id = 1 AND row_no BETWEEN 500 AND 530 "
           "AND column_name IN ('DEVICE KERNEL DURATION [ns]', 'OP CODE', 'HOST START TS') ORDER BY row_no, position")
    p = subprocess.run([shell, "-json", db, sql], capture_output=True, text=True, check=True)
    theirs = [(r["row_no"], r["column_name"], r["value"]) for r in json.loads(p.stdout)]
    eng = open_db(db, create=False)
    with eng.connect() as c:
        ours = [tuple(r) for r in c.execute(text(sql))]
    eng.dispose()
    assert theirs == ours and len(ours) == 93


def test_a_damaged_chunk_is_named_by_check_and_export(tmp_path):
    """Storage damaged behind the warehouse's back: `check` names the chunk, `export` is one Error: line."""
    from click.testing import CliRunner
    from warehouse.cli import cli

    db = _ingested(tmp_path)
    eng = open_db(db, create=False)
    with eng.begin() as c:
        c.execute(text("UPDATE cell_chunk SET cells = X'789c0001' WHERE first_row = 513"))
    eng.dispose()
    r = CliRunner().invoke(cli, ["--db", db, "check"])
    assert r.exit_code == 1 and "run 1: the stored cells of the chunk starting at row 513 cannot be read" in r.output
    r = CliRunner().invoke(cli, ["--db", db, "export", "1", "-o", str(tmp_path / "x.csv")])
    assert r.exit_code == 1 and r.output.startswith("Error: run 1: the stored cells of the chunk starting at row 513")
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output


def test_static_tuples_leave_out_their_trailing_empty_cells(wh, db_url, tmp_path):
    """A signpost row's static tuple is its name and then empty cells: stored without them (compact JSON), read
    back whole by export (byte for byte) and csv_cell (every cell, empty ones as '')."""
    from warehouse.api import Warehouse
    from warehouse.store.interning import tuple_json

    assert tuple_json(["m:a", "signpost", "", "x", "", ""]) == '["m:a","signpost","","x"]'
    assert tuple_json(["", ""]) == "[]"
    src = cases()["dlv3_same"]
    assert wh("ingest", src).exit_code == 0
    w = Warehouse(db_url)
    tuples = [r["cells"] for r in w.query("SELECT cells FROM cell_tuple")]
    signposts = [c for c in tuples if json.loads(c)[:1] and str(json.loads(c)[0]).startswith(("m:", "c:"))]
    assert signposts and all(json.loads(c)[-1] != "" for c in tuples if json.loads(c))
    assert all(len(json.loads(c)) <= 3 for c in signposts)
    assert wh("export", "1", "-o", tmp_path / "out.csv").exit_code == 0
    assert (tmp_path / "out.csv").read_bytes() == src.read_bytes()
    width = len(src.read_text().splitlines()[0].split(","))
    n = w.query("SELECT COUNT(*) AS n FROM csv_cell WHERE run_id = 1 AND row_no = "
                "(SELECT MIN(row_no) FROM signpost WHERE run_id = 1)")[0]["n"]
    assert n == width


def test_text_packed_in_pieces_is_the_text():
    """A long text compressed as its pieces come (report documents of big runs) reads back whole with
    sqlar_uncompress; a short one that does not shrink is stored as it is."""
    from warehouse.capture.packing import pack_pieces, unpack_text

    pieces = [f'{{"layer": "stage{i}.block{i % 7}", "kernel_us": {i * 1.5}}}, ' for i in range(60_000)]
    packed, size = pack_pieces(iter(pieces))
    assert size == len("".join(pieces).encode()) and len(packed) < size / 5
    assert unpack_text(packed, size) == "".join(pieces)
    packed, size = pack_pieces(iter(["{", "}"]))
    assert packed == b"{}" and size == 2 and unpack_text(packed, size) == "{}"
