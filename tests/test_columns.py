"""Every cell of every corpus era is readable with plain SQL by its CSV column name (view csv_cell), numbers
typed; tensor descriptors typed (view op_tensor); export stays byte-identical."""
from __future__ import annotations

import csv

import pytest

from corpus import cases, number


@pytest.mark.parametrize("case", sorted(cases()))
def test_every_cell_by_column_name(corpus_wh, case):
    """All cells of the file, by (row, column name): the text exactly; the number wherever the cell is one."""
    from warehouse.api import Warehouse

    invoke, ids, url = corpus_wh
    run = ids[case]
    with open(cases()[case], newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    header, data = rows[0], [r for r in rows[1:] if r]
    got = {(r["row_no"], r["column_name"]): r for r in Warehouse(url).query(
        "SELECT row_no, column_name, position, value, number FROM csv_cell WHERE run_id = :r", r=run)}
    assert len(got) == len(data) * len(set(header)) or len(got) == len(data) * len(header)
    numeric = 0
    for row_no, row in enumerate(data, start=1):
        for pos, name in enumerate(header):
            cell = got[(row_no, name)]
            if cell["position"] != pos:
                continue  # a duplicate column name: the other position holds it
            assert cell["value"] == row[pos], (row_no, name)
            want = number(row[pos].strip())
            if want is None:
                assert cell["number"] is None or row[pos].strip().lower() in ("inf", "nan"), (row_no, name)
            else:
                numeric += 1
                assert cell["number"] == pytest.approx(want, rel=1e-15), (row_no, name, row[pos])
    assert numeric > len(data)  # the numeric columns are there


def test_a_column_by_name_across_runs(corpus_wh):
    """The kind of question the issue asks: one measured column over every run that has it."""
    from warehouse.api import Warehouse

    invoke, ids, url = corpus_wh
    rows = Warehouse(url).query(
        "SELECT run_id, COUNT(number) AS n, MAX(number) AS top FROM csv_cell "
        "WHERE column_name = 'PM FPU UTIL (%)' GROUP BY run_id ORDER BY run_id")
    assert len(rows) >= 4 and all(r["n"] > 0 for r in rows)


@pytest.mark.parametrize("case", ["ttperfreport__bh20_oft",
                                  "ttnnvis__ops_perf_results_SEG_ENCODER_2024_10_04_01_36_08"])
def test_tensor_descriptors(corpus_wh, case):
    """INPUT_n / OUTPUT_n: W, Z, Y, X logical and padded, layout, datatype, memory, typed, for every op."""
    from warehouse.api import Warehouse

    invoke, ids, url = corpus_wh
    with open(cases()[case], newline="") as f:
        rows = list(csv.DictReader(f))
    got = {(r["row_no"], r["io"], r["idx"]): r for r in Warehouse(url).query(
        "SELECT * FROM op_tensor WHERE run_id = :r", r=ids[case])}
    checked = 0
    for row_no, row in enumerate(rows, start=1):
        if row["OP TYPE"] == "signpost":
            continue
        for io in ("INPUT", "OUTPUT"):
            for idx in range(6):
                pre = f"{io}_{idx}_"
                cols = {k[len(pre):]: v for k, v in row.items() if k and k.startswith(pre)}
                if not any(v.strip() for v in cols.values()):
                    assert (row_no, io.lower(), idx) not in got
                    continue
                t = got[(row_no, io.lower(), idx)]
                for d in "WZYX":
                    pad = cols.get(f"{d}_PAD[LOGICAL]")
                    if pad:
                        p, _, lg = pad.partition("[")
                        assert (t[f"{d.lower()}_pad"], t[d.lower()]) == (int(p), int(lg.rstrip("]")))
                    elif cols.get(d):
                        assert t[d.lower()] == t[f"{d.lower()}_pad"] == int(cols[d])
                assert (t["layout"] or "", t["datatype"] or "", t["memory"] or "") == (
                    cols.get("LAYOUT", ""), cols.get("DATATYPE", ""), cols.get("MEMORY", ""))
                checked += 1
    assert checked > len(rows)


def test_the_op_table_is_the_declared_typed_columns():
    """warehouse.registry.columns declares the typed op columns: the op table has each, with the SQL type of its kind,
    in
    the order ingest writes them."""
    from sqlalchemy import BigInteger, Double, Integer, Text

    from warehouse.registry.columns import FLOAT, INT32, INT64, OP_COLUMNS, TEXT
    from warehouse.runs.ingest import OP_COLUMNS as WRITTEN
    from warehouse.store.schema import op
    types = {FLOAT: Double, INT64: BigInteger, INT32: Integer, TEXT: Text}
    for c in OP_COLUMNS:
        col = op.c[c.name]
        assert type(col.type) is types[c.kind], (c.name, col.type)
        assert col.nullable  # an empty or unparsable cell is NULL
    names = [c.name for c in OP_COLUMNS]
    at = WRITTEN.index(names[0])
    assert list(WRITTEN[at:at + len(names)]) == names
