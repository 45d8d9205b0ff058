"""Ingest: runs, sections, ops, signposts and attribution as the oracle defines them, plus markers."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from sqlalchemy import text

from corpus import cases
from warehouse.store.db import open_db


def q(url: str, sql: str, **p):
    eng = open_db(url)
    with eng.connect() as c:
        rows = [tuple(r) for r in c.execute(text(sql), p)]
    eng.dispose()
    return rows


def run_id(result) -> int:
    return int(result.output.split(": run ")[1].split(":")[0])


def test_ingest_corpus_case(wh, db_url):
    src = cases()["dlv3_same"]
    r = wh("ingest", src, "--label", "nightly", "--tag", "branch=main", "--tag", "host=bh-01")
    assert r.exit_code == 0, r.output
    assert "run 1: 774 ops, 2 sections, 84 signposts" in r.output
    (rid, name, rows, ops, sps, capt, freq, fsrc, arch, same, label, namecol) = q(
        db_url, "SELECT id, file_name, row_count, op_count, signpost_count, captured_at, freq_mhz, freq_source, "
                "arch, trace_matches_eager, label, name_column FROM run")[0]
    assert (name, rows, ops, sps, label, namecol) == (src.name, 858, 774, 84, "nightly", "OP CODE")
    assert str(capt).startswith("2026-11-01 02:00:00")
    assert freq == 1350.0 and fsrc.endswith("profile_log_device.csv") and arch == "blackhole"
    assert bool(same)
    assert q(db_url, "SELECT key, value FROM run_tag ORDER BY key") == [("branch", "main"), ("host", "bh-01")]
    secs = q(db_url, "SELECT name, kind, start_row, end_row FROM section ORDER BY ordinal")
    assert [s[:2] for s in secs] == [("eager", "eager"), ("trace", "trace")]
    assert all(s[3] is not None and s[3] > s[2] for s in secs)
    # trace ops inherit block / layer by position, and say so
    inherited = q(db_url, "SELECT COUNT(*) FROM op_detail WHERE section = 'trace' "
                          "AND attribution = 'eager_position'")[0][0]
    assert inherited == 387
    pairs = q(db_url, "SELECT e.block, e.layer, t.block, t.layer FROM op_detail e JOIN op_detail t "
                      "ON t.run_id = e.run_id AND t.pos = e.pos AND t.section = 'trace' WHERE e.section = 'eager'")
    assert len(pairs) == 387 and all(p[:2] == p[2:] for p in pairs)
    assert any(p[0] for p in pairs) and any(p[1] for p in pairs)
    kinds = dict(q(db_url, "SELECT kind, COUNT(*) FROM signpost GROUP BY kind"))
    assert kinds["section_start"] == 2 and kinds["section_end"] == 2 and kinds["block"] > 0 and kinds["layer"] > 0


def test_mismatched_trace_does_not_inherit(wh, db_url):
    assert wh("ingest", cases()["oft_mismatch"]).exit_code == 0
    assert q(db_url, "SELECT trace_matches_eager FROM run")[0][0] in (0, False)
    assert q(db_url, "SELECT COUNT(*) FROM op_detail WHERE attribution = 'eager_position'")[0][0] == 0
    (freq, src) = q(db_url, "SELECT freq_mhz, freq_source FROM run")[0]
    assert freq == 1350.0 and ".logs" in src


def test_freq_sources(wh, db_url, corpus_copy):
    assert wh("ingest", cases()["oft2025_noise"]).exit_code == 0
    assert wh("ingest", corpus_copy("segenc_notrace")).exit_code == 0
    assert wh("ingest", corpus_copy("dlv3_same"), "--freq-mhz", "1000").exit_code == 0
    got = q(db_url, "SELECT freq_mhz, freq_source FROM run ORDER BY id")
    assert got[0][0] == 1000.0 and got[0][1].endswith("profile_log_device.csv")
    assert got[1] == (1350.0, "default")
    assert got[2] == (1000.0, "option")


def test_custom_sections_and_markers(wh, db_url):
    assert wh("ingest", cases()["ttperfreport__bh20_oft_integral_image_trace"]).exit_code == 0
    secs = q(db_url, "SELECT name, kind, start_row, end_row FROM section ORDER BY start_row")
    assert [s[:2] for s in secs] == [("integral_image", "custom")] * 3
    assert all(e is not None for *_, e in secs)
    # ops inside each section remember the start signpost as their marker
    rows = q(db_url, "SELECT o.row_no, o.marker_row FROM op o ORDER BY o.row_no")
    for _name, _kind, start, end in secs:
        inside = [m for r, m in rows if start < r < end]
        assert inside and all(m == start for m in inside)
        members = q(db_url, "SELECT row_no FROM op_custom_section WHERE start_row = :s ORDER BY row_no", s=start)
        assert [r for (r,) in members] == [r for r, _ in rows if start < r < end]


def test_started_finished_pairs(wh, db_url):
    assert wh("ingest", cases()["ttperfreport__ops_perf_results_2025_09_18_11_39_20"]).exit_code == 0
    names = [n for (n,) in q(db_url, "SELECT name FROM section WHERE end_row IS NOT NULL")]
    assert names.count("TTBasicBlock forward") == 16
    assert {"Topdown", "Slicing", "Head", "ResNet module", "OFT block"} <= set(names)
    # a start without its end is kept as an open section, with a warning
    assert q(db_url, "SELECT COUNT(*) FROM section WHERE name = 'OftNet module' AND end_row IS NULL")[0][0] == 1
    assert q(db_url, "SELECT COUNT(*) FROM run_warning WHERE message LIKE '%OftNet finished%'")[0][0] == 1
    # nested sections are numbered by their start (an inner one closes first, and was once numbered first)
    ords = [o for (o,) in q(db_url, "SELECT ordinal FROM section ORDER BY start_row, id")]
    assert ords == list(range(1, len(ords) + 1)) and len(ords) > 20


def test_idempotent(wh, db_url):
    src = cases()["dlv3_same"]
    assert wh("ingest", src).exit_code == 0
    r = wh("ingest", src)
    assert r.exit_code == 0
    assert r.output.strip() == f"{src}: already ingested as run 1"
    assert q(db_url, "SELECT COUNT(*) FROM run")[0][0] == 1


def test_folders_and_globs(wh, db_url, tmp_path):
    data = Path(cases()["dlv3_same"]).parent.parent
    r = wh("ingest", data)  # the seedfmt folder: every ops_perf_results*.csv below it
    assert r.exit_code == 0, r.output
    assert q(db_url, "SELECT COUNT(*) FROM run")[0][0] == len(list(data.iterdir()))
    real = Path(cases()["ttperfreport__bh20_oft"]).parent
    r = wh("ingest", str(real / "ttperfreport__bh*.csv"))
    assert r.exit_code == 0
    assert q(db_url, "SELECT COUNT(*) FROM run")[0][0] == 5 + 4


def test_runs_listing(wh, corpus_copy):
    wh("ingest", corpus_copy("dlv3_same"), "--label", "dlv3", "--tag", "sha=abc")
    wh("ingest", corpus_copy("segenc_notrace"))
    r = wh("runs")
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert lines[0].split() == ["id", "captured", "label", "tags", "file", "ops", "history", "attribution"]
    assert "dlv3" in lines[2] and "sha=abc" in lines[2] and "774" in lines[2]
    assert "position 387 signpost 385" in lines[2]
    data = json.loads(wh("runs", "--json").output)
    assert [d["id"] for d in data] == [1, 2]
    assert data[0]["tags"] == {"sha": "abc"} and data[1]["op_count"] == 1004
    assert data[0]["attribution"] == {"none": 2, "position": 387, "signpost": 385}
    assert [d["id"] for d in json.loads(wh("runs", "--json", "--label", "dlv3").output)] == [1]


def _rewrite(src: Path, dst: Path, fn) -> Path:
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    header, body = fn(rows[0], rows[1:])
    with open(dst, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([header] + body)
    return dst


def test_multi_device_op_name_and_loc(wh, db_url, tmp_path):
    """Older files say OP NAME; 8 devices interleave; other tools append a LOC column."""
    def eight(header, body):
        header = ["OP NAME" if h == "OP CODE" else h for h in header] + ["LOC"]
        di, gi = header.index("DEVICE ID"), header.index("GLOBAL CALL COUNT")
        out = []
        for k, row in enumerate(body[:50]):
            for dev in range(8):
                r = list(row) + [f"model.py:{k}"]
                r[di], r[gi] = str(dev), str(k * 1024 + dev)
                out.append(r)
        return header, out
    f = _rewrite(cases()["ttperfreport__bh_64_clip_encoder_1"], tmp_path / "ops_perf_results_multi.csv", eight)
    r = wh("ingest", f)
    assert r.exit_code == 0, r.output
    assert q(db_url, "SELECT name_column, op_count FROM run")[0] == ("OP NAME", 400)
    assert q(db_url, "SELECT device_id, COUNT(*) FROM op GROUP BY device_id ORDER BY device_id") == \
        [(d, 50) for d in range(8)]
    assert q(db_url, "SELECT MAX(global_call_count) FROM op")[0][0] == 49 * 1024 + 7


def test_pandas_resaved(wh, db_url, tmp_path):
    """LF endings, floats like 175104.0, quoted cells with "", trace ids, negative gaps."""
    def resave(header, body):
        k, g = header.index("DEVICE KERNEL DURATION [ns]"), header.index("OP TO OP LATENCY [ns]")
        t, s = header.index("METAL TRACE ID"), header.index("METAL TRACE REPLAY SESSION ID")
        a = header.index("ATTRIBUTES")
        for i, r in enumerate(body):
            if r[k]:
                r[k] = f"{float(r[k]):.1f}"
            r[g] = str(-1234) if i == 3 else r[g]
            r[t], r[s] = "1", "2"
            r[a] = r[a] + ' "quoted"'
        return header, body
    f = _rewrite(cases()["ttperfreport__bh_p100_dlv3"], tmp_path / "ops_perf_results_pandas.csv", resave)
    assert wh("ingest", f).exit_code == 0
    assert q(db_url, "SELECT newline, export_exact FROM run")[0] in [("\n", 1), ("\n", True)]
    assert q(db_url, "SELECT MIN(op2op_ns) FROM op")[0][0] == -1234.0
    assert q(db_url, "SELECT DISTINCT trace_id, replay_session FROM op") == [("1", "2")]
    out = tmp_path / "back.csv"
    assert wh("export", "1", "-o", out).exit_code == 0
    assert out.read_bytes() == f.read_bytes()


def test_progress_bar_on_a_terminal(db_url, monkeypatch):
    from click.testing import CliRunner
    from warehouse.cli import cli
    monkeypatch.setattr("warehouse.cli.base._stderr_terminal", lambda: True)
    data = Path(cases()["dlv3_same"]).parent.parent
    r = CliRunner().invoke(cli, ["--db", db_url, "ingest", str(data)])
    assert r.exit_code == 0
    assert r.stderr.startswith("ingest")  # the bar (click draws it only on a real terminal)
    assert len([line for line in r.stdout.splitlines() if ": run " in line]) == 5
    r = CliRunner().invoke(cli, ["--db", db_url, "ingest", str(cases()["dlv3_same"])])
    assert r.stderr == ""  # one small file: no bar


def test_check_shows_progress_over_runs(db_url, monkeypatch):
    """`check` verifies each run's rollups and report against its ops (the long part on a large warehouse): the
    library reports progress over those steps, and the CLI draws a bar on a terminal (none in a pipe)."""
    from click.testing import CliRunner
    from warehouse.cli import cli
    from warehouse.runs.maintenance import check_warehouse
    data = Path(cases()["dlv3_same"]).parent.parent
    assert CliRunner().invoke(cli, ["--db", db_url, "ingest", str(data)]).exit_code == 0
    seen: list[tuple[int, int]] = []
    eng = open_db(db_url)
    assert check_warehouse(eng, lambda done, total: seen.append((done, total))) == []
    eng.dispose()
    assert seen == [(k, 15) for k in range(1, 16)]  # 5 runs: rollups, report parts, then export hashes
    r = CliRunner().invoke(cli, ["--db", db_url, "check"])
    assert r.exit_code == 0 and r.stdout.strip() == "warehouse ok" and r.stderr == ""
    monkeypatch.setattr("warehouse.cli.base._stderr_terminal", lambda: True)
    r = CliRunner().invoke(cli, ["--db", db_url, "check"])
    assert r.exit_code == 0 and r.stdout.strip() == "warehouse ok" and r.stderr.startswith("check"), r.stderr


def test_implausible_measurements_are_warned(wh, tmp_path):
    head = "OP CODE,OP TYPE,DEVICE KERNEL DURATION [ns],DEVICE FW DURATION [ns],OP TO OP LATENCY [ns]"
    rows = ["A,tt_dnn_device,100,200,5", "B,tt_dnn_device,300,200,-40", "C,tt_dnn_device,2000000000,3000000000,-1",
            "D,tt_dnn_device,10,20,3"]
    f = tmp_path / "ops_perf_results_odd.csv"
    f.write_text("\r\n".join([head] + rows) + "\r\n", newline="")
    r = wh("ingest", f)
    assert r.exit_code == 0 and "3 warning(s)" in r.output, r.output
    out = wh("runs", "--warnings").output
    assert "run 1: row 2: 2 op(s) with negative op-to-op latencies" in out
    assert "run 1: row 3: 1 op(s) with kernel durations over a second" in out
    assert "run 1: row 2: 1 op(s) with kernel durations longer than the FW duration" in out


def test_implausible_measurements_from_the_kept_columns_are_the_sqls(tmp_path, corpus_copy):
    """Ingest finds implausible measurements in the op columns it kept for the rollups (no pass over the run's
    ops): the same counts and first rows as the SQL's conditions, on every corpus capture and the odd file
    above, run before history's corrections or after."""
    from warehouse.runs import ingest as ing
    from warehouse.runs import notices
    from warehouse.store.db import open_db

    head = "OP CODE,OP TYPE,DEVICE ID,DEVICE KERNEL DURATION [ns],DEVICE FW DURATION [ns],OP TO OP LATENCY [ns]," \
           "DEVICE FW START CYCLE,DEVICE FW END CYCLE"
    odd = tmp_path / "ops_perf_results_odd.csv"
    odd.write_text("\n".join([head, "A,tt_dnn_device,0,100,200,5,10,20", "B,tt_dnn_device,-1,300,200,-40,30,25",
                               "C,tt_dnn_device,1,2000000000,3000000000,-1,,", "D,tt_dnn_device,,,,,,",
                               "E,tt_dnn_device,0,50,50,0,60,60"]) + "\n")
    eng = open_db(str(tmp_path / "w.db"))
    seen: list[tuple[list, list]] = []
    real = notices.implausible

    def both(conn, run_id, captured=None):
        got = real(conn, run_id, captured)
        seen.append((got, real(conn, run_id, None)))
        assert captured is not None and captured.columns() is not None
        return got
    notices.implausible = both
    try:
        stored = [not ing.ingest_file(eng, f).existing for f in [odd, *(corpus_copy(name) for name in cases())]]
    finally:
        notices.implausible = real
    assert all(kept == sql for kept, sql in seen) and len(seen) == sum(stored) > 10
    assert sum(len(kept) for kept, _ in seen) >= 5  # (the odd file's five kinds at least)
    eng.dispose()


def test_occurrences_are_the_running_counts_of_their_keys(tmp_path, corpus_copy):
    """An op's occurrence (ingest counts it a batch at a time, warehouse.capture.occurrence) is the number of ops before
    it in its run with its section name, place and op code: SQL's row number over the same keys, on every corpus
    capture (a trace that inherits the eager attribution takes the eager op's at its position instead)."""
    from warehouse.registry.codes import ATTRIBUTION
    from warehouse.runs.ingest import ingest_file

    eng = open_db(str(tmp_path / "w.db"))
    for name in cases():
        ingest_file(eng, corpus_copy(name))
    with eng.connect() as c:
        rows = c.execute(text(
            "SELECT o.run_id, o.row_no, o.occurrence, ROW_NUMBER() OVER (PARTITION BY o.run_id, s.name, o.place_id, "
            "o.op_code_id ORDER BY o.row_no) - 1 FROM op o LEFT JOIN section s ON s.id = o.section_id "
            "WHERE o.attribution IS NULL OR o.attribution <> :inherited"), {"inherited": ATTRIBUTION["eager_position"]}
        ).all()
    eng.dispose()
    assert len(rows) > 10_000 and any(r[2] > 0 for r in rows)
    assert [r for r in rows if r[2] != r[3]] == []


def test_a_run_planned_big_keeps_no_per_op_state_and_stores_the_same(tmp_path, corpus_copy, monkeypatch):
    """A file whose scan foretells more rows than plan.BIG_ROWS (here made small) is planned big and keeps no
    per-op state for its end: its report parts, rollup keys and by-id rows are read back there. What it stores is
    what `check` computes from its ops, and the connection's page cache is as it was."""
    from warehouse.capture import plan as budgets
    from warehouse.runs import ingest as ing
    from warehouse.runs.maintenance import check_warehouse

    monkeypatch.setattr(budgets, "BIG_ROWS", 100)
    seen = []
    real = ing._FileIngest._keep_per_op_state

    def keep(self):
        real(self)
        seen.append((self.plan.big, self.feed.fed > self.feed.MAX_OPS, self.keys.given_up, self.capture.full))
    monkeypatch.setattr(ing._FileIngest, "_keep_per_op_state", keep)
    from warehouse.analysis import report
    read_back = []
    real_scan = report._scan
    monkeypatch.setattr(report, "_scan", lambda *a, **k: (read_back.append(a[2]), real_scan(*a, **k))[1])
    eng = open_db(str(tmp_path / "w.db"))
    r = ing.ingest_file(eng, corpus_copy("dlv3_same"), worker=True)
    assert r.ops > 100 and seen == [(True, True, True, True)] and read_back == ["eager", "trace"]
    with eng.connect() as c:
        assert c.exec_driver_sql("PRAGMA cache_size").scalar() == -8192
    assert check_warehouse(eng) == []
    eng.dispose()
