"""warehouse sql (read-only, formats) and warehouse schema."""
from __future__ import annotations

import json
from typing import Any

from sqlalchemy import text

from warehouse.store.views import VIEWS

from conftest import make_invoke
from corpus import cases


def test_sql_formats(wh):
    assert wh("ingest", cases()["dlv3_same"]).exit_code == 0
    sql = "SELECT section, ops, ROUND(CAST(kernel_sum_us AS NUMERIC), 1) AS k FROM section_summary ORDER BY section"
    r = wh("sql", sql)
    assert r.exit_code == 0
    assert r.output.splitlines()[0].split() == ["section", "ops", "k"]
    r = wh("sql", sql, "--format", "csv")
    assert r.output.splitlines()[0] == "section,ops,k"
    assert r.output.splitlines()[1].startswith("eager,387,")
    data = json.loads(wh("sql", sql, "--format", "json").output)
    assert [d["section"] for d in data] == ["eager", "trace"] and data[0]["ops"] == 387
    r = wh("sql", "--format", "md", input="SELECT COUNT(*) AS n FROM op")
    assert r.output.splitlines() == ["| n |", "|---|", "| 774 |"]


def test_sql_is_read_only(wh, db_url):
    assert wh("ingest", cases()["dlv3_same"]).exit_code == 0
    for stmt in ("DELETE FROM op", "UPDATE run SET label = 'x'", "DROP TABLE op", "CREATE TABLE t (a int)",
                 "INSERT INTO run_tag (run_id, key, value) VALUES (1, 'a', 'b')"):
        r = wh("sql", stmt)
        assert r.exit_code == 2, stmt
        assert r.output.startswith("Error: ") and "read-only" in r.output, r.output
    assert wh("sql", "SELECT COUNT(*) FROM op", "--format", "csv").output.splitlines()[1] == "774"
    r = wh("sql", "SELEC nonsense")
    assert r.exit_code == 2 and r.output.startswith("Error: SQL error")


def test_schema_lists_tables_and_views(empty_db_url):
    wh = make_invoke(empty_db_url)
    r = wh("schema")  # reads only: no warehouse is created
    assert r.exit_code == 2 and r.output.startswith("Error: no warehouse at"), r.output
    assert wh("db", "upgrade").exit_code == 0
    r = wh("schema")
    assert r.exit_code == 0
    for name in ("table run", "table op", "table signpost", "table section", "view section_summary",
                 "view by_layer", "view layer_cost_split"):
        assert name in r.output
    data = json.loads(wh("schema", "--json").output)
    op = next(o for o in data if o["name"] == "op")
    assert {"kernel_ns", "place_id", "hist_place_id", "occurrence"} <= {c["name"] for c in op["columns"]}


def _view_values() -> dict[str, dict[str, Any]]:
    """A value of every view column (None: the column had none) over a small capture (sections, blocks, layers, a
    custom section, a matmul, two devices), ingested into a throw-away SQLite warehouse."""
    values: dict[str, dict[str, Any]] = {}
    import tempfile
    from pathlib import Path

    from warehouse.store.db import open_db
    from warehouse.runs.ingest import ingest_file

    tensor = ["TILE", "BFLOAT16", "DEV_0_DRAM_INTERLEAVED"]
    header = ["OP CODE", "OP TYPE", "GLOBAL CALL COUNT", "DEVICE ID", "DEVICE ARCH", "ATTRIBUTES", "MATH FIDELITY",
              "CORE COUNT", "HOST START TS", "HOST END TS", "HOST DURATION [ns]", "DEVICE FW START CYCLE",
              "DEVICE FW END CYCLE", "OP TO OP LATENCY [ns]", "DEVICE FW DURATION [ns]",
              "DEVICE KERNEL DURATION [ns]"]
    for t in ("INPUT_0", "INPUT_1", "OUTPUT_0"):
        header += [f"{t}_{d}_PAD[LOGICAL]" for d in "WZYX"] + [f"{t}_{f}" for f in ("LAYOUT", "DATATYPE", "MEMORY")]
    header += ["METAL TRACE ID", "METAL TRACE REPLAY SESSION ID"]
    lines = [",".join(header)]
    ts = 1000

    def signpost(name: str) -> None:
        nonlocal ts
        ts += 10
        lines.append(",".join([name, "signpost", "", "", "", "", "", "", str(ts)] + [""] * (len(header) - 9)))

    def op(code: str, replay: str = "") -> None:
        nonlocal ts
        ts += 10
        dims = ["1[1]", "1[1]", "32[32]", "64[64]"]
        for device in ("0", "1"):  # two devices: the per-device series have rows
            lines.append(",".join([code, "tt_dnn_device", str(ts), device, "wormhole_b0", "", "HiFi2", "64",
                                   str(ts), str(ts + 5), "5", str(ts * 100), str(ts * 100 + 900), "1000", "800",
                                   "700"] + (dims + tensor) * 3 + (["1", replay] if replay else ["", ""])))
    for part in ("eager", "trace"):
        signpost(part)
        if part == "eager":
            signpost("m:b0")
            signpost("c:b0.l0")
        for _ in range(2):
            op("MatmulDeviceOperation", "1" if part == "trace" else "")
            op("BinaryNgDeviceOperation", "1" if part == "trace" else "")
        signpost(f"{part}_end")
    signpost("S")
    op("MatmulDeviceOperation")
    signpost("S_end")
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "ops_perf_results_2026_01_01_00_00_00.csv"
        csv_path.write_text("\n".join(lines) + "\n")
        engine = open_db(str(Path(tmp) / "probe.db"))
        try:
            ingest_file(engine, csv_path, label="probe")
            with engine.connect() as conn:
                for name, _, _ in VIEWS:
                    cols = list(conn.execute(text(f"SELECT * FROM {name} LIMIT 0")).keys())
                    values[name] = {}
                    for col in cols:  # the probe is tiny: a query per column costs nothing
                        v = conn.execute(text(f'SELECT "{col}" FROM {name} WHERE "{col}" IS NOT NULL LIMIT 1')
                                         ).scalar()
                        values[name][col] = v
        finally:
            engine.dispose()
    return values


# the Python types a declared type's values may have on SQLite (it stores BOOLEAN as 0 / 1, a time as text)
_ALLOWED = {"INTEGER": (int,), "REAL": (float, int), "TEXT": (str,), "BOOLEAN": (int,), "TIMESTAMP": (str,),
            "BLOB": (bytes,)}


def test_view_types_are_declared_and_true(tmp_path):
    """`schema` prints the declared view types (warehouse/store/view_types.py) without ingesting anything; every view
    and column is declared, and every value a view gives on SQLite has its declared type."""
    from sqlalchemy import inspect

    from warehouse.store.db import open_db
    from warehouse.store.view_types import VIEW_TYPES
    from warehouse.store.views import VIEWS
    values = _view_values()
    assert set(VIEW_TYPES) == {name for name, _, _ in VIEWS}
    for name, cols in values.items():
        assert list(VIEW_TYPES[name]) == list(cols), name
        for col, v in cols.items():
            assert v is None or isinstance(v, _ALLOWED[VIEW_TYPES[name][col]]), (name, col, v)
    eng = open_db(str(tmp_path / "w.db"))
    shown = {o["name"]: {c["name"]: c["type"] for c in o["columns"]}
             for o in __import__("warehouse.store.query", fromlist=["x"]).describe_schema(eng) if o["type"] == "view"}
    assert all(shown[n] == VIEW_TYPES[n] for n in VIEW_TYPES)
    assert inspect(eng).get_view_names()
    eng.dispose()


def test_view_types_equal_postgres_inference(pg_url):
    """PostgreSQL infers a type for every view column: the declared ones are its (regenerate them with
    scripts/gen_view_types.py after changing a view)."""
    from sqlalchemy import inspect

    from warehouse.store.db import open_db
    from warehouse.store.view_types import VIEW_TYPES, generic
    eng = open_db(pg_url)
    insp = inspect(eng)
    for name, cols in VIEW_TYPES.items():
        assert {c["name"]: generic(c["type"]) for c in insp.get_columns(name)} == cols, name
    eng.dispose()
