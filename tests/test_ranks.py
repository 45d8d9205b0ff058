"""A multi-host capture (``tt-run --tracy``: one file per rank) read as tt-perf-report reads the rank files given
together: ``warehouse perf R0 R1`` equals tt-perf-report 1.4.1 on both files (strict: every column, Advice too),
devices merged or not; a rank with another device count is refused, as tt-perf-report refuses it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from corpus import GOLDEN
import ttperf_live
from test_perf import EQUAL, TTPERF, _compare
from conftest import BACKENDS, _new_url, make_invoke
from ttperf_cases import RANKED, multi_host_nights


def _ingest_ranks(wh, files: list[Path]) -> list[str]:
    ids = []
    for f in files:
        r = wh("ingest", f)
        assert r.exit_code == 0, r.output
        ids.append(r.output.split(": run ")[1].split(":")[0])
    return ids


def _capture_ids(output: str) -> list[str]:
    """The run ids an ingest of a tt-run folder printed, in its lines' order."""
    return [x.split(": run ")[1].split(":")[0] for x in output.splitlines() if "ttrun" in x]


@pytest.mark.parametrize("name", list(RANKED))
def test_ranks_read_together_equal_tt_perf_report(wh, tmp_path, name):
    files = RANKED[name](tmp_path / name)
    ids = _ingest_ranks(wh, files)
    out = tmp_path / "ours.csv"
    r = wh("perf", *ids, "--csv", out)
    assert r.exit_code == 0, r.output
    res = _compare(GOLDEN / "ttperf" / "ranks" / f"{name}.csv", out)
    assert res.returncode == 0 and EQUAL in res.stdout, res.stdout
    # one rank alone is another table (four devices, not eight): the runs really were read together
    alone = tmp_path / "alone.csv"
    assert wh("perf", ids[0], "--csv", alone).exit_code == 0
    assert _compare(GOLDEN / "ttperf" / "ranks" / f"{name}.csv", alone).returncode == 1
    r = wh("perf", *ids)
    assert r.exit_code == 0 and r.output.startswith(f"runs {', '.join(ids)} read together:"), r.output


@pytest.mark.parametrize("merge", [True, False])
def test_ranks_equal_tt_perf_report_run_here(wh, tmp_path, merge):
    """tt-perf-report itself on the rank files: merged devices, and one row per (re-based) device."""
    if not TTPERF:
        pytest.skip("needs WAREHOUSE_TTPERF, tt-perf-report 1.4.1 in a venv of its own (.ci/run installs it)")
    files = RANKED["deepseek_2ranks"](tmp_path / "ranks")
    flags = [] if merge else ["--no-merge-devices"]
    ref = tmp_path / "ref.csv"
    ttperf_live.run(*files, "--ignore-signposts", "--no-summary", "--raw-op-codes", *flags, "--csv", ref)
    ids = _ingest_ranks(wh, files)
    out = tmp_path / "ours.csv"
    assert wh("perf", *ids, *flags, "--csv", out).exit_code == 0
    res = _compare(ref, out)
    assert res.returncode == 0 and EQUAL in res.stdout, res.stdout
    if not merge:  # devices 0..7: rank 1's four moved up by four
        devices = {line.split(",")[4] for line in ref.read_text().splitlines()[1:]}
        assert devices == {str(d) for d in range(8)}


def test_a_rank_with_other_device_count_is_refused(wh, tmp_path):
    files = RANKED["deepseek_2ranks"](tmp_path / "ranks", drop_device=7)
    ids = _ingest_ranks(wh, files)
    r = wh("perf", *ids)
    assert r.exit_code != 0
    assert r.output.strip() == (f"Error: run {ids[1]} reports 3 device(s) (max DEVICE ID 2), expected 4 as run "
                                f"{ids[0]}: runs read together must have as many devices each"), r.output
    r = wh("perf", ids[0], ids[0])
    assert r.exit_code != 0 and r.output.strip() == "Error: a run is named twice: name each rank's run once"


PARITY = Path(__file__).parent / "parity.py"


@pytest.mark.parametrize("name", list(RANKED))
def test_a_tt_run_folder_is_one_capture(wh, tmp_path, name):
    """The folder as tt-run writes it is one capture: ranks linked at ingest; perf of its id reads every rank
    (tt-perf-report on the files), --rank N one; each rank's report equals the oracle's on its file, and its
    export is the file, byte for byte."""
    files = RANKED[name](tmp_path / name)
    r = wh("ingest", tmp_path / name, "--label", "mh")
    assert r.exit_code == 0, r.output
    lines = [x for x in r.output.splitlines() if "ttrun" in x]
    ids = [x.split(": run ")[1].split(":")[0] for x in lines]
    assert len(ids) == 2 and all(f"rank {k} of the multi-host capture {ids[0]}" in x for k, x in enumerate(lines))
    assert wh("ranks", ids[1]).output.strip() == f"multi-host capture {ids[0]}: rank 0 = run {ids[0]}, rank 1 = " \
                                                 f"run {ids[1]}"
    out = tmp_path / "ours.csv"
    assert wh("perf", ids[1], "--csv", out).exit_code == 0  # (any rank's run stands for the capture)
    res = _compare(GOLDEN / "ttperf" / "ranks" / f"{name}.csv", out)
    assert res.returncode == 0 and EQUAL in res.stdout, res.stdout
    for rank, f in enumerate(files):
        assert wh("perf", ids[0], "--rank", str(rank)).output.startswith(f"run {ids[rank]}:")
        js, md = tmp_path / f"r{rank}.json", tmp_path / f"r{rank}.md"
        assert wh("report", ids[0], "--rank", str(rank), "--json", js, "--md", md, "--quiet").exit_code == 0
        gold = GOLDEN / "ranks" / f"{name}_rank{rank}"
        p = subprocess.run([sys.executable, str(PARITY), f"{gold}.json", str(js), "--md", f"{gold}.md", str(md)],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stdout
        back = tmp_path / f"back{rank}.csv"
        assert wh("export", ids[0], "--rank", str(rank), "-o", back).exit_code == 0
        assert back.read_bytes() == f.read_bytes()
    r = wh("report", ids[0], "--rank", "2")
    assert r.exit_code == 2 and r.output.strip() == f"Error: run {ids[0]} is a capture of 2 ranks (0-1): no rank 2"
    # (rank, device) in SQL: the capture_rank view beside any view's run_id
    r = wh("sql", "SELECT c.rank, o.device_id AS device, COUNT(*) AS n FROM op o JOIN capture_rank c ON c.run_id = "
                  f"o.run_id WHERE c.capture_id = {int(ids[0])} GROUP BY c.rank, o.device_id ORDER BY c.rank, "
                  "o.device_id", "--format", "json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert [(x["rank"], x["device"]) for x in got] == [(k, d) for k in (0, 1) for d in range(4)], got
    # ... and as a column of the views over runs (NULL for a run of one host)
    for view, device in (("series_device", "device"), ("perf_series", "device"), ("op_detail", "device_id"),
                         ("op_perf", "device"), ("op_history", "device_id"), ("op_tensor", "device"),
                         ("op_kernel", "device"), ("rollup", "device")):
        r = wh("sql", f"SELECT DISTINCT s.rank, s.{device} AS device FROM {view} s JOIN run_info i ON i.run_id = "
                      f"s.run_id WHERE i.capture_id = {int(ids[0])} AND s.{device} >= 0 ORDER BY 1, 2",
               "--format", "json")
        got = json.loads(r.stdout)
        assert [(x["rank"], x["device"]) for x in got] == [(k, d) for k in (0, 1) for d in range(4)], (view, got)
    r = wh("sql", "SELECT run_id, capture_id, rank FROM run_info ORDER BY run_id", "--format", "json")
    assert [(x["capture_id"], x["rank"]) for x in json.loads(r.stdout) if str(x["run_id"]) in ids] == [
        (int(ids[0]), 0), (int(ids[0]), 1)]


def test_a_capture_missing_a_rank_or_with_a_broken_one_stores_nothing(wh, tmp_path, db_url):
    from warehouse.api import Warehouse

    files = RANKED["deepseek_2ranks"](tmp_path / "cap")
    (tmp_path / "three").mkdir()
    for k in (0, 2):  # rank 1 missing
        d = tmp_path / "three" / "ttrun" / f"rank{k}" / "r"
        d.mkdir(parents=True)
        d.joinpath(files[0].name).write_bytes(files[min(k, 1)].read_bytes())
    r = wh("ingest", tmp_path / "three")
    assert r.exit_code != 0 and "rank(s) 1 missing" in r.output and "Traceback" not in r.output, r.output
    assert Warehouse(db_url).runs() == []
    text_ = files[1].read_text().splitlines(keepends=True)
    files[1].write_text("".join(text_[:1] + ['"unclosed quote,' + text_[1]] + text_[2:]))
    r = wh("ingest", tmp_path / "cap")
    assert r.exit_code == 1, r.output
    assert "not kept: rank 1 of its multi-host capture failed" in r.output, r.output
    assert Warehouse(db_url).runs() == []  # rank 0 was stored, then removed with its capture


def test_runs_joined_by_hand(wh, tmp_path):
    files = RANKED["deepseek_2ranks"](tmp_path / "cap")
    flat = []
    for k, f in enumerate(files):
        flat.append(tmp_path / f"host{k}.csv")
        flat[-1].write_bytes(f.read_bytes())
    ids = _ingest_ranks(wh, flat)
    r = wh("ranks", *ids)
    assert r.exit_code == 0 and r.output.strip() == f"multi-host capture {ids[0]}: rank 0 = run {ids[0]}, rank 1 " \
                                                    f"= run {ids[1]}"
    out = tmp_path / "ours.csv"
    assert wh("perf", ids[0], "--csv", out).exit_code == 0
    res = _compare(GOLDEN / "ttperf" / "ranks" / "deepseek_2ranks.csv", out)
    assert res.returncode == 0 and EQUAL in res.stdout, res.stdout
    assert wh("ranks", ids[0], ids[0]).exit_code == 2


@pytest.fixture(scope="module", params=BACKENDS)
def rank_history(request, tmp_path_factory):
    """30 nights of a two-host capture, rank 1's devices 4 % slower from night 20 on, under one label."""
    folder = tmp_path_factory.mktemp("mh")
    gen = _new_url(request.param, folder)
    url = next(gen)
    wh = make_invoke(url)
    nights = multi_host_nights(folder / "nights", 30, 20, 1.04)
    r = wh("ingest", nights, "--label", "mh")
    assert r.exit_code == 0, r.output
    yield wh, url
    for _ in gen:
        pass


def test_changes_judge_each_rank_and_the_whole_capture(rank_history):
    from warehouse.api import Warehouse
    from warehouse.history.causes import cause_id

    wh, url = rank_history
    r = wh("changes", "--label", "mh", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    steps = {c["tags"]["rank"]: c for c in doc["changes"] if c["kind"] == "step"}
    # rank 1's step in its own history, and the capture's as a whole; rank 0 did not move
    assert sorted(steps) == ["1", "all"] and len(doc["changes"]) == 2, doc["changes"]
    runs = {x.id: x for x in Warehouse(url).runs(label="mh")}
    assert {runs[c["run_id"]].captured_at[:10] for c in steps.values()} == {"2026-10-21"}  # night 20, its first
    mine, whole = steps["1"], steps["all"]
    assert (mine["by"], mine["key"], whole["by"], whole["key"]) == ("section", "all") * 2
    assert 3.0 < mine["change_pct"] < 5.0, mine
    # the capture: rank 1's 4 % of its share (46.3 of 79.3 ms) is 2.3 % of the whole
    assert 1.5 < whole["change_pct"] < 2.6, whole
    assert runs[whole["run_id"]].tags["rank"] == "0" and whole["tags"]["host"] == str(whole["run_id"])
    assert whole["id"] != mine["id"] and len(doc["runs"]) == 60  # (each run once)
    # an id of its own: never the one rank 0's same cause would have (triage tells them apart)
    assert whole["id"] != cause_id("c", "mh", "step", "section", "all", whole["run_id"], True)
    text_ = wh("changes", "--label", "mh").output
    assert "rank 1 whole run" in text_ and "all ranks whole run: +" in text_ and "rank 0" not in text_, text_
    # one rank asked for: its history alone
    r = wh("changes", "--label", "mh", "--tag", "rank=0", "--format", "json")
    assert r.exit_code == 0 and not [c for c in json.loads(r.stdout)["changes"] if c["kind"] == "step"]


def test_a_whole_capture_night_is_its_ranks_merged(rank_history):
    """A whole capture's series are its ranks' rows merged: times summed, the span the longest rank's, to the bit,
    on every night and key, read as changes (matrices) and as the gate (points) reads them."""
    from warehouse.history.nightseries import fetch_history
    from warehouse.history.series import fetch, select_runs
    from warehouse.history.wholecapture import Captures, captures
    from warehouse.store.db import make_engine, resolve_url

    _, url = rank_history
    engine = make_engine(resolve_url(url))
    try:
        with engine.connect() as conn:
            runs = select_runs(conn, "mh")
            members = captures(conn, runs)
            assert len(members) == 30 and all(len(m) == 2 and m[0] == h for h, m in members.items())
            heads = list(members)
            whole = fetch_history(conn, Captures(heads, members))
            ranks = fetch_history(conn, runs)
            points = fetch(conn, Captures(heads[:3], members), "", "op-code")
    finally:
        engine.dispose()
    col = {r: i for i, r in enumerate(runs)}
    checked = 0
    for (sec, g, key, dev), d in whole.items():
        if g == "block/op-code":
            continue
        assert dev == -1, (g, key, dev)  # (devices are judged in the ranks' own histories)
        mine = ranks[(sec, g, key, dev)]
        for j, h in enumerate(heads):
            r0, r1 = (col[r] for r in members[h])
            assert d["kernel"][j] == mine["kernel"][r0] + mine["kernel"][r1], (key, h)
            # (no replays in these captures: no spread on either rank, none merged)
            assert np.isnan([d["fw_spread"][j], mine["fw_spread"][r0], mine["fw_spread"][r1]]).all()
            if g == "section":
                assert d["span"][j] == max(mine["span"][r0], mine["span"][r1]), (key, h)
            checked += 1
    assert checked >= 30 * 10
    assert points and all(p.values["kernel"] == whole[("", "op-code", key, dev)]["kernel"][heads.index(h)]
                          for (h, key, dev), p in points.items())


def test_merged_parts_sum_times_and_spreads_and_take_the_longest_span():
    """How a key's rows of the ranks join (all devices; a device of a rank is no key of the whole)."""
    from warehouse.history.wholecapture import merge
    from warehouse.store.runseries import Part

    nan = float("nan")

    def part(run: int, keys: list[int], devs: list[int], *figs: list[float]) -> Part:
        names = ("kernel_us", "kernel_spread_us", "span_us", "iterations", "ops", "fpu_util_pct")
        return Part(run, "trace", "op-code", np.array(keys, dtype=np.int64), np.array(devs, dtype=np.int32),
                    {n: np.array(v, dtype=float) for n, v in zip(names, figs)})
    a = part(10, [3, 3, 5], [-1, 0, -1], [1.5, 1.5, 2.0], [0.1, 0.1, nan], [9.0, 9.0, nan], [5, 5, 5], [2, 2, 1],
             [50.0, 50.0, 40.0])
    b = part(11, [3, 7], [-1, -1], [0.25, 4.0], [0.2, nan], [7.0, 1.0], [5, 6], [3, 1], [60.0, 10.0])
    other = part(12, [3], [-1], [100.0], [1.0], [1.0], [1], [1], [1.0])  # (a run of no capture asked for)
    (p,) = merge([b, other, a], {10: [10, 11]})
    assert (p.run_id, p.section, p.grouping) == (10, "trace", "op-code")
    assert p.key_ids.tolist() == [3, 5, 7] and p.devices.tolist() == [-1, -1, -1]
    assert p.values["kernel_us"].tolist() == [1.75, 2.0, 4.0]
    assert p.values["ops"].tolist() == [5.0, 1.0, 1.0]
    assert np.array_equal(p.values["kernel_spread_us"], [0.1 + 0.2, nan, nan], equal_nan=True)
    assert np.array_equal(p.values["span_us"], [9.0, nan, 1.0], equal_nan=True)
    assert p.values["iterations"].tolist() == [5.0, 5.0, 6.0]
    assert np.isnan(p.values["fpu_util_pct"]).all()  # (a ratio of the whole needs its parts: not merged)
    (alone,) = merge([other], {12: [12]})  # a run of one host: its own rows
    assert alone.values["kernel_us"].tolist() == [100.0]


def test_the_gate_judges_each_rank_against_its_own_nights_and_each_capture_whole(rank_history, tmp_path):
    from warehouse.api import Warehouse

    wh, url = rank_history
    rank = {x.id: x.tags.get("rank") for x in Warehouse(url).runs(label="mh")}
    r = wh("regressions", "--label", "mh", "--last", "11", "--format", "json")
    doc = json.loads(r.stdout)
    found = [c for c in doc["findings"] if c["kind"] == "regression"]
    assert r.exit_code == 3 and found, r.output
    # rank 1 on its own nights; the whole capture (named by its first rank's run) by about half of that
    assert {c["tags"]["rank"] for c in found} == {"1", "all"}, found
    assert all(rank[c["run_id"]] == "0" and 1.0 < c["change_pct"] < 2.6 for c in found if c["tags"]["rank"] == "all")
    assert all(rank[c["run_id"]] == "1" and 3.0 < c["change_pct"] < 5.0 for c in found if c["tags"]["rank"] == "1")
    for c in doc["checked"]:  # each night against its own history's nights: its rank's, or the captures'
        assert {rank[w] for w in c["window"]} == {"0" if c["tags"]["rank"] == "all" else rank[c["run_id"]]}
    text_ = wh("regressions", "--label", "mh", "--last", "11").stdout
    assert "rank 1 whole run: +4" in text_ and "all ranks whole run: +" in text_ and "rank 0 whole" not in text_
    # the newest night alone: both ranks and the capture judged, all quiet
    r = wh("regressions", "--label", "mh", "--format", "json")
    checked = json.loads(r.stdout)["checked"]
    assert r.exit_code == 0 and len(checked) == 3, r.output
    assert sorted(c["why"] for c in checked) == [
        "the newest capture (all ranks) of label 'mh' by capture time",
        *(f"the newest rank {k} run of label 'mh' by capture time" for k in (0, 1))]
    # JUnit: a capture's suite holds the capture's findings, never its first rank's (the same run id)
    import xml.etree.ElementTree as ET

    out = tmp_path / "junit.xml"
    assert wh("regressions", "--label", "mh", "--last", "11", "--junit", out).exit_code == 3
    xml = ET.parse(out).getroot()
    named = {s.get("name"): [c.get("name") for c in s.iter("testcase") if c.get("classname") != "coverage"]
             for s in xml.iter("testsuite")}
    wholes = [n for s, cases in named.items() if "rank=all" in s for n in cases]
    assert len(wholes) == len([c for c in doc["findings"] if c["tags"]["rank"] == "all"]) > 0, named
    assert all(n.startswith("all ranks ") for n in wholes)
    assert not [n for s, cases in named.items() if "rank=all" not in s for n in cases if "all ranks" in n]


def test_a_capture_is_an_invalid_night_when_one_of_its_ranks_is(wh, tmp_path):
    """The newest night's rank 1 file lost its device timings: rank 1's night and the capture's are invalid
    captures (never judged, never a baseline), rank 0's is judged as usual."""
    from csvedit import read_dicts, write_rows

    nights = multi_host_nights(tmp_path / "n", 10, 99, 1.0)
    (newest,) = (nights / "night09").rglob("rank1/*/*.csv")
    rows = read_dicts(newest)
    for r in rows:
        r["DEVICE KERNEL DURATION [ns]"] = r["DEVICE FW DURATION [ns]"] = ""
    write_rows(newest, rows)
    assert wh("ingest", nights, "--label", "cut").exit_code == 0
    r = wh("regressions", "--label", "cut", "--format", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 4, r.output
    bad = {x["tags"]["rank"]: x for x in doc["invalid"]}
    assert sorted(bad) == ["1", "all"], doc["invalid"]
    assert bad["all"]["problems"] and all(p.startswith("rank 1: ") for p in bad["all"]["problems"])
    assert [c["tags"]["rank"] for c in doc["checked"]] == ["0"]
    # changes: the night left out of the capture's history as of rank 1's
    r = wh("changes", "--label", "cut", "--format", "json")
    got = json.loads(r.stdout)
    assert r.exit_code == 4 and got["newest_invalid"], r.output
    assert {x["tags"]["rank"] for x in got["invalid"]} == {"1", "all"}


def test_the_lake_keeps_the_rank(wh, tmp_path):
    """The Parquet lake's views give a multi-host capture's rank as the warehouse's do (DuckDB)."""
    pytest.importorskip("duckdb")
    from warehouse.runs import lake

    RANKED["deepseek_2ranks"](tmp_path / "cap")
    assert wh("ingest", tmp_path / "cap").exit_code == 0
    single = tmp_path / "single.csv"
    single.write_bytes(next((tmp_path / "cap").rglob("*.csv")).read_bytes() + b"\r\n")  # (another file)
    assert wh("ingest", single).exit_code == 0
    r = wh("export", "--format", "parquet", tmp_path / "lake")
    assert r.exit_code == 0, r.output
    con = lake.connect_duckdb(tmp_path / "lake")
    assert con.execute("SELECT run_id, capture_id, rank FROM run_info ORDER BY run_id").fetchall() == [
        (1, 1, 0), (2, 1, 1), (3, None, None)]
    for view in ("series_device", "op_detail", "op_perf", "op_history", "rollup"):
        assert con.execute(f"SELECT DISTINCT run_id, rank FROM {view} ORDER BY 1").fetchall() == [
            (1, 0), (2, 1), (3, None)], view


def test_the_timeline_of_a_capture_has_a_process_per_rank_and_device(wh, tmp_path):
    from test_perfetto import follows_the_rules

    files = RANKED["oft2025_2ranks"](tmp_path / "cap")
    r = wh("ingest", tmp_path / "cap")
    ids = _capture_ids(r.output)
    out = tmp_path / "t.json"
    assert wh("export", ids[1], "--format", "perfetto", "-o", out).exit_code == 0
    doc = json.loads(out.read_text())
    ops, names = follows_the_rules("capture", doc)
    procs = {names[(e["pid"], None)] for e in ops}
    assert procs == {f"rank {k} device {d}" for k in (0, 1) for d in range(4)}, procs
    assert [x["run"] for x in doc["otherData"]["ranks"]] == [int(i) for i in ids]
    rows = sum(1 for f in files for line in f.read_text().splitlines()[1:] if ",tt_dnn_device," in line)
    assert len(ops) == rows  # every device op of both files
    one = tmp_path / "one.json"
    assert wh("export", ids[0], "--format", "perfetto", "--rank", "1", "-o", one).exit_code == 0
    ops1, names1 = follows_the_rules("rank 1", json.loads(one.read_text()))
    assert {names1[(e["pid"], None)] for e in ops1} == {f"device {d}" for d in range(4)}


def test_the_dashboard_and_the_agents_read_a_capture_whole(wh, tmp_path, db_url):
    pytest.importorskip("starlette")
    pytest.importorskip("mcp")
    from starlette.testclient import TestClient

    from warehouse.mcp.server import Tools
    from warehouse.web.app import create_app

    RANKED["deepseek_2ranks"](tmp_path / "cap")
    r = wh("ingest", tmp_path / "cap")
    ids = _capture_ids(r.output)
    got = TestClient(create_app(db_url), base_url="http://127.0.0.1").get(f"/runs/{ids[1]}/perf.csv")
    assert got.status_code == 200
    (tmp_path / "web.csv").write_text(got.text)
    res = _compare(GOLDEN / "ttperf" / "ranks" / "deepseek_2ranks.csv", tmp_path / "web.csv")
    assert res.returncode == 0 and EQUAL in res.stdout, res.stdout
    trace = TestClient(create_app(db_url), base_url="http://127.0.0.1").get(f"/runs/{ids[0]}/trace.json").json()
    procs = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert procs == {f"rank {k} device {d}" for k in (0, 1) for d in range(4)}, procs
    doc = json.loads(Tools(db_url).perf_table(ids[0], limit=100))
    want = sum(1 for line in (GOLDEN / "ttperf" / "ranks" / "deepseek_2ranks.csv").read_text().splitlines()[1:])
    assert doc["rows"]["total"] == want and doc["summary"]["run_ids"] == [int(i) for i in ids], doc["summary"]
