"""The Parquet lake (`export --format parquet`): the README's worked SQL gives the warehouse's answers in DuckDB over
it, a second export touches only new or changed runs, and an interrupted one leaves whole files only."""
from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from conftest import BACKENDS, _new_url, make_invoke
from corpus import cases
from test_series_kinds import eight_devices
from warehouse.runs import lake
from warehouse.api import Warehouse
from warehouse.capture.synthetic import nightly_series

NIGHTS = 12


@pytest.fixture(scope="module", params=BACKENDS)
def nights(request, tmp_path_factory):
    """12 nights of dlv3 (label dlv3, tag phase) and 3 of an 8-device capture (label eight): the data the README's
    worked queries read. Yields ``(invoke, url, folder)``."""
    folder = tmp_path_factory.mktemp("lake")
    (folder / "n").mkdir()
    files = list(nightly_series(cases()["dlv3_same"], folder / "n", NIGHTS, noise=0.02,
                                slow={10: ("Conv2d", 1.25)}, seed=7))
    gen = _new_url(request.param, folder)
    url = next(gen)
    wh = make_invoke(url)
    for n, f in enumerate(files):
        assert wh("ingest", f, "--label", "dlv3", "--tag", f"phase={'before' if n < 10 else 'after'}").exit_code == 0
    src = eight_devices(cases()["dlv3_same"], folder / "e" / "src.csv")
    for night in range(3):
        f = folder / "e" / f"ops_perf_results_2026_11_2{night + 1}_02_00_00.csv"
        f.write_bytes(src.read_bytes() + b"\r\n" * night)
        assert wh("ingest", f, "--label", "eight").exit_code == 0
    yield wh, url, folder
    for _ in gen:
        pass


def _norm(v):
    """One value as both engines agree to print it (SQLite gives times as text, DuckDB and PostgreSQL as
    datetimes)."""
    if isinstance(v, datetime):
        return v.isoformat(sep=" ", timespec="microseconds")
    return v


def _examples() -> list[str]:
    readme = (Path(__file__).parent.parent / "docs" / "data-model.md").read_text()
    return re.findall(r"(?<!<!-- perf-example -->\n)```sql\n(.*?)```", readme.split("## Worked SQL examples")[1],
                      re.S)


def test_readme_queries_give_the_warehouses_answers_in_duckdb(nights, tmp_path):
    wh, url, _ = nights
    r = wh("export", "--format", "parquet", tmp_path / "lake")
    assert r.exit_code == 0, r.output
    assert f"{NIGHTS + 3} run(s) written, 0 unchanged, 0 removed: {6 * (NIGHTS + 3)} files" in r.stdout
    con = lake.connect_duckdb(tmp_path / "lake")
    examples = _examples()
    assert len(examples) >= 5
    for sql in examples:
        want = [tuple(_norm(v) for v in row.values()) for row in Warehouse(url).query(sql)]
        got = [tuple(_norm(v) for v in row) for row in con.execute(sql).fetchall()]
        assert want, sql  # (a query that answers nothing would hold nothing equal)
        assert got == want, sql


def test_the_setup_script_is_what_duckdb_users_read(nights, tmp_path):
    """duckdb_views.sql in the lake is the same set-up, with the lake's absolute path on its first line."""
    wh, url, _ = nights
    assert wh("export", "--format", "parquet", tmp_path / "lake", "--label", "eight").exit_code == 0
    script = (tmp_path / "lake" / lake.DUCKDB_SQL).read_text()
    assert script.splitlines()[0] == f"SET VARIABLE lake = '{(tmp_path / 'lake').resolve()}';"
    import duckdb
    con = duckdb.connect()
    for stmt in script.split(";\n"):
        if stmt.strip():
            con.execute(stmt)
    want = Warehouse(url).query("SELECT device_id, COUNT(*) AS n, SUM(kernel_us) AS k FROM op_detail d "
                                "JOIN run_info i ON i.run_id = d.run_id WHERE i.label = 'eight' "
                                "GROUP BY device_id ORDER BY device_id")
    got = con.execute("SELECT device_id, COUNT(*), SUM(kernel_us) FROM op_detail GROUP BY 1 ORDER BY 1").fetchall()
    assert len(got) == 8 and [g[:2] for g in got] == [(w["device_id"], w["n"]) for w in want]
    assert [g[2] for g in got] == pytest.approx([w["k"] for w in want], rel=1e-12)  # (sums in another order)


def test_files_are_typed_partitioned_and_versioned(nights, tmp_path):
    wh, url, _ = nights
    assert wh("export", "--format", "parquet", tmp_path / "lake", "--label", "dlv3").exit_code == 0
    root = tmp_path / "lake"
    files = sorted(root.rglob("*.parquet"))
    assert len(files) == 6 * NIGHTS
    for f in files:
        md = pq.read_schema(f).metadata
        assert md[b"warehouse.lake_schema"] == str(lake.LAKE_SCHEMA).encode()
        rel = f.relative_to(root).parts
        assert rel[1] == "label=dlv3" and re.fullmatch(r"date=\d{4}-\d{2}-\d{2}", rel[2])
    ops = pads.dataset(root / "ops", format="parquet", partitioning="hive").to_table()
    types = {f.name: str(f.type) for f in ops.schema}
    assert types["kernel_us"] == "double" and types["global_call_count"] == "int64"
    assert types["host_start_ns"] == "int64" and types["fw_start_cycle"] == "double"
    assert types["hist_layer"] == "string" and types["iteration"] == "int64" and types["bound"] == "string"
    assert "label" in types and "date" in types  # (from the partition, as Spark and Trino read it)
    counts = {r["run_id"]: r["op_count"] for r in Warehouse(url).query(
        "SELECT run_id, op_count FROM run_info WHERE label = 'dlv3'")}
    got: dict[int, int] = {}
    for run_id in ops.column("run_id").to_pylist():
        got[run_id] = got.get(run_id, 0) + 1
    assert got == counts
    # every op's identity, attribution and typed values are the warehouse's
    want = Warehouse(url).query("SELECT p.identity, h.hist_layer, h.iteration, d.kernel_us, d.host_start_ns "
                                "FROM op_detail d JOIN op_history h ON h.op_id = d.op_id JOIN op_perf p "
                                "ON p.run_id = d.run_id AND p.row_no = d.row_no WHERE d.run_id = 3 ORDER BY d.row_no")
    mine = ops.filter(pads.field("run_id") == 3).select(
        ["identity", "hist_layer", "iteration", "kernel_us", "host_start_ns"]).to_pylist()
    assert [tuple(r.values()) for r in mine] == [tuple(w.values()) for w in want]


def _stamps(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*.parquet")}


def test_a_second_export_touches_only_new_or_changed_runs(nights, tmp_path):
    wh, url, folder = nights
    # a warehouse of its own (this test adds, tags and removes runs)
    own = make_invoke(str(tmp_path / "own.db"))
    night_files = sorted((folder / "n").glob("*.csv"))
    for f in night_files[:4]:
        assert own("ingest", f, "--label", "dlv3").exit_code == 0
    root = tmp_path / "lake"
    api = Warehouse(str(tmp_path / "own.db"))
    first = api.export_lake(root)
    assert first.written == [1, 2, 3, 4] and first.files == 24
    before = _stamps(root)
    again = api.export_lake(root)
    assert again.written == [] and again.files == 0 and len(again.unchanged) == 4
    assert _stamps(root) == before
    # one more night: only its six files are written
    assert own("ingest", night_files[4], "--label", "dlv3").exit_code == 0
    r = own("export", "--format", "parquet", root)
    assert r.exit_code == 0 and "1 run(s) written, 4 unchanged, 0 removed: 6 files" in r.stdout, r.output
    after = _stamps(root)
    assert {k: v for k, v in after.items() if k in before} == before and len(after) == len(before) + 6
    # a run whose tags changed is written again; a removed run leaves the lake
    assert own("tag", "2", "--tag", "phase=after").exit_code == 0
    assert own("rm", "3", "--yes").exit_code == 0
    res = api.export_lake(root)
    assert res.written == [2] and res.removed == [3]
    con = lake.connect_duckdb(root)
    assert con.execute("SELECT run_id, key, value FROM run_tag").fetchall() == [(2, "phase", "after")]
    assert [r[0] for r in con.execute("SELECT DISTINCT run_id FROM op_detail ORDER BY 1").fetchall()] == [1, 2, 4, 5]
    assert not any("run-3-" in k for k in _stamps(root))
    manifest = json.loads((root / lake.MANIFEST).read_text())
    assert sorted(e["run_id"] for e in manifest["runs"].values()) == [1, 2, 4, 5]


def test_a_run_written_before_a_column_was_added_is_written_again(nights, tmp_path, monkeypatch):
    """A lake's files depend on the datasets' columns: after an upgrade that adds one (perf_series' sub_device),
    the next export writes every run again, never leaving the new column empty for the runs written before."""
    wh, url, folder = nights
    root = tmp_path / "lake"
    api = Warehouse(url)
    first = api.export_lake(root, label="eight")
    assert first.written and api.export_lake(root, label="eight").written == []
    monkeypatch.setattr(lake, "_COLUMNS_DIGEST", "another")  # (as a version with other columns has)
    assert api.export_lake(root, label="eight").written == first.written
    con = lake.connect_duckdb(root)
    sql = ("SELECT run_id, device, sub_device, ops, worker_cores_min, worker_cores_max FROM perf_sub_device_series "
           "WHERE label = 'eight' ORDER BY run_id, device")
    got = [list(r) for r in con.execute(sql).fetchall()]
    mine = [list(r.values()) for r in json.loads(wh("sql", sql, "--format", "json").stdout)]
    assert got == mine and {r[0] for r in got} == set(first.written), (got, mine)


def test_an_interrupted_export_leaves_whole_files_and_resumes(tmp_path, monkeypatch):
    own = make_invoke(str(tmp_path / "w.db"))
    for f in ("dlv3_same", "clip_replays3"):
        assert own("ingest", cases()[f]).exit_code == 0
    root = tmp_path / "lake"
    real = lake._write
    calls = []

    def failing(ds, conn, run_id, root_, rel, meta):
        calls.append(ds.name)
        if run_id == 2 and ds.name == "ops":
            raise KeyboardInterrupt  # (the user's Ctrl-C in the middle of a run)
        return real(ds, conn, run_id, root_, rel, meta)
    monkeypatch.setattr(lake, "_write", failing)
    with pytest.raises(KeyboardInterrupt):
        Warehouse(str(tmp_path / "w.db")).export_lake(root)
    assert not [p for p in root.rglob("*") if p.name.startswith(".tmp-")]
    manifest = json.loads((root / lake.MANIFEST).read_text())
    assert sorted((e["run_id"], e.get("state") or "") for e in manifest["runs"].values()) == [(1, ""), (2, "writing")]
    assert (root / manifest["runs"][next(k for k, e in manifest["runs"].items() if e["run_id"] == 2)]["files"][1]
            ).exists()  # (its sections were written before the kill)
    # readers see whole runs only: run 2's files written so far are not read
    con = lake.connect_duckdb(root)
    assert con.execute("SELECT COUNT(*) FROM run").fetchone() == (1,)
    assert con.execute("SELECT COUNT(DISTINCT run_id) FROM section").fetchone() == (1,)
    monkeypatch.setattr(lake, "_write", real)
    res = Warehouse(str(tmp_path / "w.db")).export_lake(root)
    assert res.written == [2] and res.unchanged == [1]
    assert lake.connect_duckdb(root).execute("SELECT COUNT(DISTINCT run_id) FROM ops").fetchone() == (2,)


def test_export_errors_are_one_line(tmp_path):
    own = make_invoke(str(tmp_path / "w.db"))
    assert own("ingest", cases()["dlv3_same"]).exit_code == 0
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    r = own("export", "--format", "parquet", a_file)
    assert r.exit_code != 0 and r.output.strip().splitlines()[-1].startswith("Error: ") and "not a folder" in r.output
    r = own("export", "--format", "parquet", tmp_path / "lake", "-o", tmp_path / "x.csv")
    assert r.exit_code == 2 and "--output is for --format csv" in r.output
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / lake.MANIFEST).write_text("{")
    r = own("export", "--format", "parquet", tmp_path / "bad")
    assert r.exit_code != 0 and "not a lake manifest" in r.output and "Traceback" not in r.output
    # the CSV export is as before
    r = own("export", "latest", "-o", tmp_path / "back.csv")
    assert r.exit_code == 0 and (tmp_path / "back.csv").read_bytes() == Path(cases()["dlv3_same"]).read_bytes()
