"""Cells stored once (issue 26): a volatile cell of a typed numeric column whose text is exactly what its typed
value prints as lives only in the op table; the lossless store holds JSON null. Export stays byte for byte, the
csv_cell view gives the text, and `check` sees damage to the typed value."""
from __future__ import annotations

import csv
import io
import json

import pytest
from sqlalchemy import text

from conftest import make_invoke
from corpus import cases

from warehouse.store.cells import iter_chunk_rows
from warehouse.registry.columns import StoredOnce, stored_once
from warehouse.registry.columns import OP_COLUMNS
from warehouse.capture.cellcodec import NULL, encode_volatile
from warehouse.store.db import open_db

KERNEL = next(c for c in OP_COLUMNS if c.csv == "DEVICE KERNEL DURATION [ns]")
CYCLE = next(c for c in OP_COLUMNS if c.csv == "DEVICE FW START CYCLE")
HOST = next(c for c in OP_COLUMNS if c.csv == "HOST START TS")


@pytest.mark.parametrize("cell, canonical", [
    ("0", True), ("123676", True), ("-42", True), ("999999999999999", True),  # 15 digits: a double's exact reach
    ("1000000000000000", False), ("175104.0", False), ("0123", False), ("-0", False), ("+5", False),
    (" 12", False), ("12 ", False), ("", False), ("1e3", False), ("١٢", False), ("nan", False)])
def test_what_a_float_column_stores_once(cell, canonical):
    assert StoredOnce(0, KERNEL).canonical(cell) is canonical


def test_int64_columns_keep_18_digits():
    assert StoredOnce(0, HOST).canonical("123456789012345678")
    assert not StoredOnce(0, HOST).canonical("1234567890123456789")  # (may not fit 63 bits: kept as text)
    assert StoredOnce(0, CYCLE).canonical("6326346030891")


def test_only_the_typed_position_of_a_repeated_header_is_stored_once():
    header = ["DEVICE KERNEL DURATION [ns]", "OP CODE", "DEVICE KERNEL DURATION [ns]", "HOST START TS"]
    once = stored_once(header, [0, 2, 3])
    assert [(o.slot, o.column.csv) for o in once] == [(1, "DEVICE KERNEL DURATION [ns]"), (2, "HOST START TS")]


def test_nulls_encode_as_json_null_on_both_paths():
    fast = encode_volatile([("a", NULL, "3"), (NULL, "", "")], nulls=2)
    assert fast == ['["a",null,"3"]', "[null]"]
    # a cell of the file's own that holds the marker's character is a cell, never a null (the slow path)
    slow = encode_volatile([("a", NULL, "\x1d"), ("\x1d", "", "")], nulls=1)
    assert [json.loads(x) for x in slow] == [["a", None, "\x1d"], ["\x1d"]]


def _edited(tmp_path, edit):
    """The dlv3 capture with ``edit(row_index, row, index)`` applied to its op rows."""
    src = cases()["dlv3_same"]
    rows = list(csv.reader(io.StringIO(src.read_bytes().decode(), newline="")))
    idx = {h: i for i, h in enumerate(rows[0])}
    for n, r in enumerate(rows[1:]):
        if r[idx["OP TYPE"]] != "signpost":
            edit(n, r, idx)
    out = tmp_path / src.name
    with open(out, "w", newline="") as f:
        csv.writer(f, lineterminator="\r\n").writerows(rows)
    return out


ODD = ["175104.0", "0123", "-0", "+5", " 12", "1000000000000000", "1e3"]


def test_canonical_cells_are_nulls_odd_ones_stay_text_and_both_come_back(db_url, tmp_path):
    def edit(n, r, idx):
        if n % 10 == 3:
            r[idx["DEVICE KERNEL DURATION [ns]"]] = ODD[(n // 10) % len(ODD)]
    path = _edited(tmp_path, edit)
    wh = make_invoke(db_url)
    assert wh("ingest", path).exit_code == 0
    out = tmp_path / "back.csv"
    assert wh("export", "1", "-o", out).exit_code == 0
    assert out.read_bytes() == path.read_bytes()
    engine = open_db(db_url, create=False)
    with engine.connect() as c:
        header = json.loads(c.execute(text("SELECT columns FROM run WHERE id = 1")).scalar())
        static = set(json.loads(c.execute(text("SELECT static_columns FROM run WHERE id = 1")).scalar()))
        volatile = [i for i in range(len(header)) if i not in static]
        slot = volatile.index(header.index("DEVICE KERNEL DURATION [ns]"))
        stored = {row_no: cells for row_no, _, cells in iter_chunk_rows(c, 1)}
        kernel = {r: v for r, v in c.execute(text(
            "SELECT row_no, value FROM csv_cell WHERE run_id = 1 AND column_name = 'DEVICE KERNEL DURATION [ns]'"))}
    engine.dispose()
    file_rows = list(csv.reader(io.StringIO(path.read_bytes().decode(), newline="")))[1:]
    k = header.index("DEVICE KERNEL DURATION [ns]")
    odd = nulls = 0
    for row_no, cells in stored.items():
        want = file_rows[row_no - 1][k]
        assert kernel[row_no] == want  # csv_cell gives the file's text, stored once or not
        got = cells[slot] if slot < len(cells) else ""
        if want in ODD:
            assert got == want
            odd += 1
        elif want:
            assert got is None
            nulls += 1
    assert odd > 20 and nulls > 500


def test_check_sees_a_typed_value_that_no_longer_prints_the_cell(db_url):
    wh = make_invoke(db_url)
    assert wh("ingest", cases()["dlv3_same"]).exit_code == 0
    assert wh("check").exit_code == 0
    engine = open_db(db_url, create=False)
    with engine.begin() as c:
        c.execute(text("UPDATE op SET host_start_ns = host_start_ns + 1 WHERE run_id = 1 AND row_no = 7"))
    engine.dispose()
    r = wh("check")
    assert r.exit_code == 1 and "does not hash to the file's sha256" in r.output, r.output
    assert wh("export", "1").exit_code != 0


def test_the_downgrade_prints_every_null_back(db_url, tmp_path):
    """Revision 0013's downgrade: the revisions before keep every cell as text, so the nulls are filled in."""
    from warehouse.store.db import downgrade, make_engine, resolve_url
    wh = make_invoke(db_url)
    src = cases()["oft_mismatch"]
    assert wh("ingest", src).exit_code == 0
    engine = make_engine(resolve_url(db_url))

    def cells() -> list[list]:
        with engine.connect() as c:
            return [r[2] for r in iter_chunk_rows(c, 1)]
    before = cells()
    assert sum(row.count(None) for row in before) > 1000
    downgrade(engine, "0012")
    after = cells()
    assert not any(None in row for row in after) and len(after) == len(before)
    file_rows = list(csv.reader(io.StringIO(src.read_bytes().decode(), newline="")))
    header = file_rows[0]
    with engine.connect() as c:
        static = set(json.loads(c.execute(text("SELECT static_columns FROM run WHERE id = 1")).scalar()))
    volatile = [i for i in range(len(header)) if i not in static]
    for row, stored in zip(file_rows[1:], after):
        assert [row[i] for i in volatile][:len(stored)] == stored
    engine.dispose()
    assert wh("db", "upgrade").exit_code == 0
    out = tmp_path / "back.csv"
    assert wh("export", "1", "-o", out).exit_code == 0 and out.read_bytes() == src.read_bytes()
