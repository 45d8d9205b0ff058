"""The report is the oracle's, for every corpus case, from the database alone."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from corpus import GOLDEN, cases

from warehouse.capture.packing import unpack_text

PARITY = Path(__file__).parent / "parity.py"


@pytest.mark.parametrize("case", list(cases()))
def test_report_matches_oracle(corpus_wh, case, tmp_path):
    invoke, ids, _ = corpus_wh
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    r = invoke("report", ids[case], "--json", out_json, "--md", out_md)
    assert r.exit_code == 0, r.output
    p = subprocess.run([sys.executable, str(PARITY), str(GOLDEN / f"{case}.json"), str(out_json),
                        "--md", str(GOLDEN / f"{case}.md"), str(out_md)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout
    # stdout is the Markdown text, as the oracle prints it
    assert r.output == out_md.read_text()
    assert json.loads(out_json.read_text())["csv"].endswith(cases()[case].name)


def test_report_latest_and_label(wh, corpus_copy):
    a = corpus_copy("dlv3_same")
    assert wh("ingest", a, "--label", "dlv3").exit_code == 0
    b = corpus_copy("segenc_notrace")
    assert wh("ingest", b, "--label", "seg").exit_code == 0
    r = wh("report", "latest", "--label", "dlv3")
    assert r.exit_code == 0
    assert "eager: ops 387" in r.output
    r = wh("report", "latest")
    assert "eager: ops 1004" in r.output  # segenc was captured later (2026-11-03)


def test_report_unknown_run(wh, corpus_copy):
    wh("ingest", corpus_copy("dlv3_same"))
    r = wh("report", "99")
    assert r.exit_code == 2
    assert r.output.startswith("Error: no run 99")
    r = wh("report", "nope")
    assert r.exit_code == 2 and "expected a run id" in r.output
    r = wh("report", "latest", "--label", "missing")
    assert r.exit_code == 2 and "no runs with label 'missing'" in r.output


@pytest.mark.parametrize("case", list(cases()))
def test_views_equal_the_oracle(corpus_wh, case):
    """The summary views give the oracle's tables: every number, rounded as the oracle prints it (1 decimal for
    us, 2 for medians, 4 for shares), equals the oracle's golden JSON; counts and keys exactly."""
    from sqlalchemy import text
    from warehouse.store.db import open_db

    _, ids, url = corpus_wh
    run_id = ids[case]
    gold = json.loads((GOLDEN / f"{case}.json").read_text())
    eng = open_db(url)

    def same(value, want, nd: int, what: str) -> None:
        assert round(float(value), nd) == want, (case, what, value, want)

    with eng.connect() as c:
        def q(sql):
            return [dict(r) for r in c.execute(text(sql), {"r": run_id}).mappings()]
        for s in ("eager", "trace"):
            got = {r["section"]: r for r in q("SELECT * FROM section_summary WHERE run_id = :r")}.get(s)
            want = gold[s]
            if not want["ops"]:
                assert got is None
                continue
            assert got["ops"] == want["ops"]
            for k in ("kernel_sum_us", "fw_sum_us", "op2op_sum_us", "span_us"):
                same(got[k], want[k], 1, f"{s} {k}")
            same(got["op2op_median_us"], want["op2op_median_us"], 2, f"{s} op2op median")
            assert float(got["cores_median"]) == want["cores_median"]
            assert got["ops_below_120_cores"] == want["ops_below_120_cores"]
            fid = q(f"SELECT fidelity, ops FROM section_fidelity WHERE run_id = :r AND section = '{s}' "
                    "ORDER BY first_pos")
            assert {f["fidelity"]: f["ops"] for f in fid} == want["fidelity"]
            for view, key in (("by_op_code", "by_op"), ("by_category", "by_category"), ("by_block", "by_block"),
                              ("by_layer", "by_layer")):
                rows = {r["key"]: r for r in q(f"SELECT * FROM {view} WHERE run_id = :r AND section = '{s}'")}
                assert {g["key"] for g in want[key]} <= set(rows), view  # the oracle prints the top ones
                for g in want[key]:
                    r = rows[g["key"]]
                    assert r["ops"] == g["ops"]
                    same(r["kernel_us"], g["kernel_us"], 1, f"{view} {g['key']} kernel")
                    same(r["share_pct"], round(100 * g["share"], 2), 2, f"{view} {g['key']} share")
                    same(r["op2op_us"], g["gap_us"], 1, f"{view} {g['key']} op-to-op")
            split = {r["layer"]: r for r in q(f"SELECT * FROM layer_cost_split WHERE run_id = :r AND section = '{s}'")}
            ps = want["precision_split"]
            assert len(split) == ps["layers"]
            for x in ps["per_layer"]:
                r = split[x["layer"]]
                assert (r["ops"], r["compute_ops"]) == (x["ops"], x["compute_ops"])
                for k in ("compute_us", "movement_us", "split_us", "finish_us"):
                    same(r[k], x[k], 1, f"split {x['layer']} {k}")
    eng.dispose()


@pytest.mark.skipif("postgresql" not in __import__("conftest").BACKENDS, reason="needs WAREHOUSE_TEST_PG_URL")
@pytest.mark.parametrize("case", list(cases()))
def test_reports_identical_on_both_back_ends(case, tmp_path):
    """The same CSV gives the same report, to the last bit, on SQLite and on PostgreSQL."""
    from conftest import _new_url, make_invoke
    outs = []
    for backend in ("sqlite", "postgresql"):
        gen = _new_url(backend, tmp_path)
        url = next(gen)
        inv = make_invoke(url)
        assert inv("ingest", cases()[case]).exit_code == 0
        r = inv("report", "1", "--json", tmp_path / f"{backend}.json")
        outs.append((json.loads((tmp_path / f"{backend}.json").read_text()), r.output))
        for _ in gen:
            pass
    assert outs[0] == outs[1]


def _numbers(obj, path=()):
    """Every number leaf of a report document with its path (booleans are not numbers here)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numbers(v, path + (i,))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path, obj


def _last_digit(v):
    """One unit of the last digit Python prints for ``v``."""
    if isinstance(v, int):
        return 1
    s = repr(v)
    return 10 ** -len(s.split(".")[1]) if "." in s and "e" not in s else abs(v) * 1e-15 or 1e-300


@pytest.mark.parametrize("case", ["dlv3_same", "clip_replays3", "oft_mismatch"])
def test_parity_fails_on_any_number_off_by_its_last_digit(corpus_wh, case, tmp_path):
    """The parity rule is exact: every number of the report, moved by one unit of its last printed digit, is
    caught (the Markdown is compared exactly too, in test_report_matches_oracle)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import parity
    invoke, ids, _ = corpus_wh
    out_json = tmp_path / "r.json"
    assert invoke("report", ids[case], "--json", out_json, "-q").exit_code == 0
    ours = json.loads(out_json.read_text())
    gold = json.loads((GOLDEN / f"{case}.json").read_text())
    out: list[str] = []
    parity.diff(gold, ours, "", out)
    assert out == []
    leaves = [(p, v) for p, v in _numbers(ours) if p[0] != "columns"]
    assert len(leaves) > 100
    for path, v in leaves:
        # the table (or value) that holds the number, compared whole: the same walk as the full document's
        top = path[:2] if len(path) > 2 else path[:1]
        g, o = gold, ours
        for k in top:
            g, o = g[k], o[k]
        mutated = json.loads(json.dumps(o))
        node = mutated
        for k in path[len(top):-1]:
            node = node[k]
        if len(path) > len(top):
            node[path[-1]] = v + _last_digit(v)
        else:
            mutated = v + _last_digit(v)
        out = []
        parity.diff(g, mutated, ".".join(map(str, top)), out)
        assert out, f"a change of {path} by its last digit passed"


def test_the_cores_median_from_a_tally_is_statistics_median():
    """The report takes the cores median from a tally of the counts (a million ops, a few distinct values): the
    same value as statistics.median over the list, odd and even lengths, ties and all (fixed seed)."""
    import random
    import statistics
    from collections import Counter

    from warehouse.analysis.report import _tally_median

    rng = random.Random(7)
    for _ in range(3000):
        data = [float(rng.choice([0, 1, 8, 56, 64, 110, 120, 130])) for _ in range(rng.randint(1, 30))]
        assert _tally_median(Counter(data)) == statistics.median(data), data


def test_gap_median_sorted_here_or_by_the_database(db_url, corpus_copy, monkeypatch):
    """The op-to-op median of a section is sorted in memory up to SORT_IN_MEMORY gaps and by the database beyond:
    the same report parts either way, on both back ends (sections with odd and even gap counts)."""
    import json
    from sqlalchemy import text
    from warehouse.analysis import report
    from warehouse.store.db import open_db
    from warehouse.runs.ingest import ingest_file

    eng = open_db(db_url)
    ids = [ingest_file(eng, corpus_copy(c)).run_id for c in ("dlv3_same", "oft_mismatch", "segenc_notrace")]
    docs = []
    for limit in (report.SORT_IN_MEMORY, 0):
        monkeypatch.setattr(report, "SORT_IN_MEMORY", limit)
        with eng.connect() as c:
            docs.append([json.dumps(report.compute_parts(c, r, 1000.0)) for r in ids])
            n = c.execute(text("SELECT COUNT(*) FROM op_detail WHERE pos > 0 AND op2op_us > 0 "
                               "GROUP BY run_id, section")).scalars().all()
    assert docs[0] == docs[1]
    assert {k % 2 for k in n} == {0, 1}  # both arithmetic cases of the median
    eng.dispose()


def _sectioned_odd(path):
    """Eager and trace sections with odd measurements: -0 and empty durations, NaN, a trace op ahead of the
    eager ones in one file, blocks and layers."""
    head = ("OP CODE,OP TYPE,DEVICE KERNEL DURATION [ns],DEVICE FW DURATION [ns],OP TO OP LATENCY [ns],"
            "CORE COUNT,MATH FIDELITY,ATTRIBUTES")
    ops = ["Matmul,tt_dnn_device,-0.0,-0,5,64,HiFi4,", "Add,tt_dnn_device,,7,-0.0,,LoFi,",
           "Conv2d,tt_dnn_device,nan,3,2,8,,", "Matmul,tt_dnn_device,1500,2000,0,120,HiFi2,"]
    body = ["m:enc,signpost,,,,,,", "eager,signpost,,,,,,", "c:l0,signpost,,,,,,", *ops, "c:l1,signpost,,,,,,", *ops,
            "eager_end,signpost,,,,,,", "trace,signpost,,,,,,", *ops, *ops, "trace_end,signpost,,,,,,"]
    path.write_text("\n".join([head, *body]) + "\n")
    return path


@pytest.mark.parametrize("order", ["eager_first", "trace_first", "differ", "capped", "capped_one_pass", "sql_keys",
                                   "small_batches"])
def test_report_parts_fed_at_ingest_equal_parts_read_back(db_url, tmp_path, corpus_copy, monkeypatch, order):
    """Ingest computes the report parts from the ops as it writes them (report.ReportFeed), reading none back:
    they equal the parts computed from the database, on both back ends, for the corpus and odd values (the
    feed is used, not the database, except where the trace comes first and the database must be read). The
    feed's group keys come from measures.KEY_TEXTS, the Python mirrors of the registry's SQL (held equal here to
    the database's keys), or, for an expression without one ("sql_keys"), from the database; "small_batches":
    read in batches of 16 rows, by a worker process (batches across a section's end)."""
    import json
    from warehouse.analysis import report, reportscan
    from warehouse.store.db import open_db
    from warehouse.runs.ingest import ingest_file

    from sqlalchemy import text
    f = _sectioned_odd(tmp_path / "ops_perf_results_odd.csv")
    lines = f.read_text().splitlines()
    if order == "trace_first":  # the trace section before the eager one: the eager-position rule cannot be fed
        lines = [lines[0]] + lines[13:] + lines[1:13]
    elif order == "differ":
        lines[-2] = lines[-2].replace("Matmul", "Softmax")
    f.write_text("\n".join(lines) + "\n")
    files = [f] + ([corpus_copy(c) for c in ("dlv3_same", "oft_mismatch", "clip_replays3")]
                   if order in ("eager_first", "sql_keys", "small_batches") else [])
    if order == "sql_keys":
        monkeypatch.setattr(reportscan, "KEY_TEXTS", {})
    if order == "small_batches":
        from warehouse.capture import rowprep
        monkeypatch.setattr(rowprep, "BATCH", 16)
    read_back = []
    real_scan = report._scan

    def counting(*a, **k):
        read_back.append(a[2])
        return real_scan(*a, **k)
    monkeypatch.setattr(report, "_scan", counting)
    if order.startswith("capped"):  # a run past the feed's memory budget is read back, as before
        monkeypatch.setattr(reportscan.ReportFeed, "MAX_OPS", 10)
        if order == "capped":  # (and past the one-pass budget: read in two passes)
            from warehouse.capture import plan
            monkeypatch.setattr(plan, "REPORT_ONE_PASS_MAX_OPS", 10)
    # the fed parts' database-free half is computed in a forked process (warehouse.workers.fork): record its results
    from warehouse.workers import fork as aside
    from warehouse.runs import ingest
    forked = []

    class Recorded(aside.Aside):
        def result(self):
            got = super().result()
            forked.append(got is not None)
            return got
    monkeypatch.setattr(ingest, "Aside", Recorded)
    eng = open_db(db_url)
    ids = [ingest_file(eng, x, worker=True if order == "small_batches" else None).run_id for x in files]
    # (a run past the feed's budget is read back, and past the one-pass budget twice a section: its layers, then
    # its group tables)
    assert read_back == {"trace_first": ["eager", "trace"], "capped": ["eager", "eager", "trace", "trace"],
                         "capped_one_pass": ["eager", "trace"]}.get(order, [])
    assert forked == ([] if read_back else [True] * len(files))
    with eng.connect() as c:
        for r in ids:
            packed, size = c.execute(text("SELECT doc, raw_size FROM run_report WHERE run_id = :r"), {"r": r}).one()
            freq = c.execute(text("SELECT freq_mhz FROM run WHERE id = :r"), {"r": r}).scalar()
            stored = unpack_text(packed, size)
            assert stored == json.dumps(report.compute_parts(c, r, float(freq)), ensure_ascii=False)
        same = c.execute(text("SELECT trace_matches_eager FROM run WHERE id = :r"), {"r": ids[0]}).scalar()
    assert bool(same) == (order != "differ")
    eng.dispose()


def test_feed_past_its_budget_keeps_no_per_key_state(tmp_path, monkeypatch):
    """A run past the feed's budget is read back at the end: the feed lets go of what it learned per (op code,
    block, layer), which a capture whose layers are all new holds nearly per op (56 MiB of a 300,000-op
    ingest, kept until the end, before)."""
    from sqlalchemy import text

    from warehouse.analysis import report
    from warehouse.registry.columns import AT, OP_COLUMNS
    from warehouse.store.db import open_db

    eng = open_db(str(tmp_path / "w.db"))
    monkeypatch.setattr(report.ReportFeed, "MAX_OPS", 50)
    with eng.begin() as c:
        code = c.execute(text("INSERT INTO op_code (name, category, is_compute) VALUES ('MatmulDeviceOperation', "
                              "'matmul', 1) RETURNING id")).scalar_one()
        feed = report.ReportFeed(c)
        typed = [None] * len(OP_COLUMNS)
        typed[AT.kernel_ns] = 1000.0
        for batch in range(3):
            for i in range(40):
                n = batch * 40 + i
                feed.op("eager", n, code, f"block{n}", f"layer{n}", typed, "HiFi4")
            feed.flush()
            if batch == 0:  # within the budget: held, as columns, for the end
                assert len(feed.held) == 1 and len(feed.held[0][0]) == 40 and len(feed.pairs) == 40
        assert feed.fed > feed.MAX_OPS
        assert not feed.keys and not feed.texts and not feed.pairs and not feed.pair_ix and not feed.pending
        assert not feed.held
        assert feed.scans(True) is None  # and the parts are read back
    eng.dispose()
