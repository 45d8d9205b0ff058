"""Regressions across nightly runs: injected slowdowns are found, noise is not; compare, trend, series views."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from conftest import BACKENDS, _new_url, make_invoke
from corpus import cases
from warehouse.capture.synthetic import nightly_series

NIGHTS = 12
SLOW_NIGHT = 10  # from this night on, every Conv2d is 25 % slower


@pytest.fixture(scope="module", params=BACKENDS)
def nightly(request, tmp_path_factory):
    """12 nightly captures of dlv3 with +-2 % noise; nights 0..9 tagged phase=before."""
    folder = tmp_path_factory.mktemp("nights")
    files = list(nightly_series(cases()["dlv3_same"], folder, NIGHTS, noise=0.02,
                                slow={SLOW_NIGHT: ("Conv2d", 1.25)}, seed=7))
    gen = _new_url(request.param, folder)
    url = next(gen)
    wh = make_invoke(url)
    for n, f in enumerate(files):
        phase = "before" if n < SLOW_NIGHT else "after"
        r = wh("ingest", f, "--label", "dlv3", "--tag", f"phase={phase}")
        assert r.exit_code == 0, r.output
    yield wh
    for _ in gen:
        pass


def test_slowdown_is_found(nightly):
    r = nightly("regressions", "--label", "dlv3", "--format", "json")
    assert r.exit_code == 3, r.output
    res = json.loads(r.stdout)
    regs = [f for f in res["regressions"] if f["metric"] == "kernel"]
    assert res["checked"][0]["run_id"] == NIGHTS and len(res["checked"][0]["window"]) == 7
    assert res["checked"][0]["sections"] == ["eager", "trace"]
    for sec in ("eager", "trace"):
        conv = next(f for f in regs if f["by"] == "op-code" and f["section"] == sec)
        assert conv["key"] == "Conv2dDeviceOperation" and 20 < conv["delta_pct"] < 30
        assert any(f["by"] == "section" and f["key"] == "total" and f["section"] == sec for f in regs)
    assert any(f["by"] == "layer" for f in regs) and any(f["by"] == "block" for f in regs)
    # noise is not reported: only the conv op code moved, nothing improved
    assert {f["key"] for f in regs if f["by"] == "op-code"} == {"Conv2dDeviceOperation"}
    assert res["improvements"] == []


def test_noise_alone_is_quiet(nightly):
    for last in ("1", "3"):
        r = nightly("regressions", "--tag", "phase=before", "--last", last)
        assert r.exit_code == 0, r.output
        assert r.output.startswith("0 regression(s), 0 improvement(s)")


def test_threshold_and_by(nightly):
    assert nightly("regressions", "--label", "dlv3", "--threshold", "50%").exit_code == 0
    r = nightly("regressions", "--label", "dlv3", "--by", "category", "--metric", "kernel", "--section", "trace",
                "--format", "md")
    assert r.exit_code == 3
    # (--section says what it still reads: eager, to corroborate the trace's moves)
    assert r.output.startswith("Warning: --section trace: findings of trace only; eager is still read"), r.output
    body = "\n".join(ln for ln in r.output.splitlines() if not ln.startswith("Warning:"))
    assert body.startswith("**1 regression(s), 0 improvement(s), 0 suspicious move(s) (1, 0 and 0 series) in run 12 "
                           "(2026-01-12 02:00, dlv3, phase=after; vs 7 runs)**"), body
    assert "conv2d / conv_transpose2d" in r.output
    r = nightly("regressions", "--label", "nope")
    assert r.exit_code == 2 and r.output.startswith("Error: no runs match")
    r = nightly("regressions", "--threshold", "abc")
    assert r.exit_code == 2


def test_slowdown_window_moves_on(nightly):
    """The second night of the slowdown, judged against a window of the night before (slow already): nothing new.
    (A window of two nights, one before the slowdown and one after, has their midpoint as its median: the second
    night is still a regression against it, until the history holds the new level, see _established.)"""
    r = nightly("regressions", "--label", "dlv3", "--window", "1", "--format", "json")
    assert r.exit_code == 0, r.output


def test_compare(nightly):
    r = nightly("compare", "1", str(NIGHTS), "--by", "op-code", "--format", "json")
    assert r.exit_code == 0
    res = json.loads(r.stdout)
    assert res["section"] == "trace" and res["total"]["key"] == "total"
    assert res["rows"][0]["key"] == "Conv2dDeviceOperation" and res["rows"][0]["delta_pct"] > 20
    deltas = [abs(x["delta_us"]) for x in res["rows"]]
    assert deltas == sorted(deltas, reverse=True)
    md = nightly("compare", "1", "latest", "--by", "layer", "--format", "md", "--top", "5").output
    assert md.startswith(f"**run {NIGHTS} (") and ", dlv3, phase=after) vs run 1 (" in md and "| total |" in md
    assert len([line for line in md.splitlines() if line.startswith("| ")]) == 1 + 1 + 5
    table = nightly("compare", "1", "2", "--section", "eager").output
    assert table.splitlines()[0].startswith("run 2 (") and \
        table.splitlines()[0].endswith("section eager, by layer, kernel time (us per iteration)")


def test_compare_keys_in_one_run_only(wh):
    assert wh("ingest", cases()["dlv3_same"]).exit_code == 0
    assert wh("ingest", cases()["segenc_notrace"]).exit_code == 0
    r = wh("compare", "1", "2", "--by", "op-code", "--format", "json", "--section", "eager")
    res = json.loads(r.stdout)
    assert "share" in r.output and "op codes: different models?" in r.output  # the warning on stderr
    assert res["section"] == "eager"
    status = {x["key"]: x["status"] for x in res["rows"]}
    assert status["Conv2dDeviceOperation"] == "only in A" and status["LayerNorm"] == "only in B"
    assert status["HaloDeviceOperation"] == "both"
    assert "only in B" in status.values()
    only_b = next(x for x in res["rows"] if x["status"] == "only in B")
    assert only_b["a_ops"] == 0 and only_b["delta_pct"] is None


def test_trend_table_and_plot(nightly, tmp_path):
    r = nightly("trend", "--by", "op-code", "--top", "3", "--format", "csv")
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert lines[0].startswith("run,time,label,tags,Conv2dDeviceOperation (us)")
    assert len(lines) == 1 + NIGHTS
    png = tmp_path / "t.png"
    r = nightly("trend", "--by", "block", "--plot", png)
    if r.exit_code == 2:  # matplotlib missing: the message names the extra
        assert "[plot]" in r.output
        pytest.skip("matplotlib is not installed")
    assert r.exit_code == 0 and png.read_bytes()[:4] == b"\x89PNG"
    svg = tmp_path / "t.svg"
    assert nightly("trend", "--plot", svg).exit_code == 0 and b"<svg" in svg.read_bytes()[:500]


def test_trend_without_matplotlib(nightly, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    r = nightly("trend", "--plot", tmp_path / "x.png")
    assert r.exit_code == 2
    assert r.output.startswith("Error: plots need matplotlib: pip install 'tt-profile-warehouse[plot]'")


def test_readme_sql_examples(nightly, tmp_path):
    """The worked SQL examples of the data model's page run and answer on a nightly warehouse."""
    readme = (Path(__file__).parent.parent / "docs" / "data-model.md").read_text()
    # (the per-op analysis example, after its marker, has its own test in test_perf.py)
    examples = re.findall(r"(?<!<!-- perf-example -->\n)```sql\n(.*?)```", readme, re.S)
    assert len(examples) >= 5
    # the per-device example reads an 8-device series
    from test_series_kinds import eight_devices
    src = eight_devices(cases()["dlv3_same"], tmp_path / "e" / "src.csv")
    for night in range(3):
        f = tmp_path / "e" / f"ops_perf_results_2026_11_2{night + 1}_02_00_00.csv"
        f.write_bytes(src.read_bytes().replace(b"\r\n", b"\r\n" + b"" * night) + b"\r\n" * night)
        assert nightly("ingest", f, "--label", "eight").exit_code == 0
    for sql in examples:
        r = nightly("sql", sql, "--format", "json")
        assert r.exit_code == 0, (sql, r.output)
        assert json.loads(r.stdout), sql


def test_replays_are_iterations(wh, db_url):
    """Three replay sessions: the trace figures are per replay (the mean), their spread is the noise."""
    from warehouse.store.db import open_db
    from warehouse.history.series import fetch
    assert wh("ingest", cases()["clip_replays3"]).exit_code == 0
    eng = open_db(db_url)
    with eng.connect() as c:
        p = fetch(c, [1], "trace", "section")[(1, "total", -1)]
        e = fetch(c, [1], "eager", "section")[(1, "total", -1)]
        how = dict(c.exec_driver_sql("SELECT hist_how, COUNT(*) FROM op_history WHERE section = 'trace' "
                                     "GROUP BY hist_how").all())
    eng.dispose()
    assert p.iterations == 3 and p.ops == 660 and e.ops == 660
    assert p.spreads["kernel"] is not None and p.spreads["kernel"] > 0
    assert how == {"position": 1980}


def _replay_without_a_layer(tmp_path: Path) -> Path:
    """clip_replays3 whose last replay lacks the ops of its first layer (they are aligned around: that layer
    has two iterations of three)."""
    import csv as csvmod

    src = cases()["clip_replays3"]
    with open(src, newline="") as f:
        rows = list(csvmod.reader(f))
    h = rows[0]
    oc, rs = h.index("OP CODE"), h.index("METAL TRACE REPLAY SESSION ID")
    eager_ops, layer_pos, layer = 0, [], None
    for r in rows[1:]:
        name = r[oc]
        if name == "trace":
            break
        if name.startswith("c:"):
            layer = name if layer is None else "done"
            continue
        if name.startswith(("m:", "eager")) or not r[rs] == "" or name.endswith("_end"):
            continue
        if layer not in (None, "done"):
            layer_pos.append(eager_ops)
        eager_ops += 1
    last = [i for i, r in enumerate(rows) if len(r) > rs and r[rs] == "3"]
    drop = {last[k] for k in layer_pos}
    assert 0 < len(drop) < 20
    out = tmp_path / "ops_perf_results_2026_11_28_02_00_00.csv"
    with open(out, "w", newline="") as f:
        csvmod.writer(f, lineterminator="\r\n" if b"\r\n" in src.read_bytes()[:5000] else "\n").writerows(
            r for i, r in enumerate(rows) if i not in drop)
    return out


@pytest.mark.parametrize("case", ["clip_replays3", "oft_mismatch", "dlv3_same", "replay_without_a_layer"])
def test_a_layer_drill_down_of_some_layers_equals_the_whole_ones(wh, db_url, case, tmp_path):
    """The layer / op code rows computed for a few layers (what regressions asks) are those of the whole run's
    computation for these layers, per iteration of every iteration of the section (not only of theirs)."""
    from warehouse.store.db import open_db
    from warehouse.registry.measures import GROUPINGS
    from warehouse.analysis.rollups import computed_rows

    src = _replay_without_a_layer(tmp_path) if case == "replay_without_a_layer" else cases()[case]
    assert wh("ingest", src).exit_code == 0
    g = next(g for g in GROUPINGS if g.key == "layer/op-code")
    eng = open_db(db_url)
    with eng.connect() as c:
        sections = [s for (s,) in c.exec_driver_sql("SELECT DISTINCT section FROM rollup_row")]
        compared = 0
        for sec in sections:
            whole = computed_rows(c, [1], sec, g)
            layers = sorted({r[1].rsplit(" / ", 1)[0] for r in whole})
            # every third layer, and each layer alone (a layer that misses an iteration, as unmatched ops do,
            # still divides by all of them)
            for some in [set(layers[::3]) | {"[? glue]"}, *({layer} for layer in layers)]:
                part = computed_rows(c, [1], sec, g, some)
                assert sorted(part) == sorted(r for r in whole if r[1].rsplit(" / ", 1)[0] in some), (sec, some)
                compared += len(part)
        assert compared > 10
    eng.dispose()
