"""Every kind of nightly regression is found by the default `warehouse regressions --label L`, naming what moved;
a series whose last run only replays the trace fewer times, or only has noise, passes. Series are made by
tests/mkseries.py (a copy of ../shared/tools/mkseries.py): one change injected into the last of 9 runs."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from conftest import BACKENDS, _new_url, make_invoke
from corpus import cases

EXTRA = Path(__file__).parent / "data" / "ttperf_extra"  # real captures not in the corpus (see its README)
DEEPSEEK, DECODE = "bh_8xp150_deepseek_v3_d_p", "bh_invalid_trace_decode_window"
SMOKE = "ttnnvis__smoke_ops_perf_results"  # an older column era on 2 Wormhole devices


def eight_devices(src: Path, dst: Path) -> Path:
    """An 8-device capture from a single-device sectioned one: every op row once per device (DEVICE ID 0..7,
    GLOBAL CALL COUNT = op index x 1024 + device), as tt-metal interleaves them; signposts once."""
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    cols = list(rows[0])
    out = []
    for i, r in enumerate(rows):
        if r["OP TYPE"] == "signpost":
            out.append(r)
            continue
        for dev in range(8):
            x = dict(r)
            x["DEVICE ID"] = str(dev)
            x["GLOBAL CALL COUNT"] = str(i * 1024 + dev)
            out.append(x)
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(dst, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(out)
    return dst


# name: (source, mkseries arguments, expected exit, what a finding must say)
KINDS = {
    "block_in_replayed_trace": ("clip_replays3", ["--slow-block", "stage6.block1"], 3,
                                {"section": "trace", "by": "block", "key": "stage6.block1", "metric": "kernel"}),
    "block_in_mismatched_trace": ("oft_mismatch", ["--slow-block", "stage2.block1"], 3,
                                  {"section": "trace", "by": "block", "key": "stage2.block1", "metric": "kernel"}),
    "op2op_of_a_block": ("dlv3_same", ["--slow-block", "stage2.block0", "--metric", "op2op", "--factor", "3"], 3,
                         {"by": "block", "key": "stage2.block0", "metric": "op2op"}),
    "one_device_of_eight": ("eight", ["--slow-device", "5"], 3, {"by": "section", "device": "5", "metric": "kernel"}),
    "op_code_without_sections": ("ttperfreport__bh_64_clip_encoder_1", ["--slow-op-code", "Matmul"],
                                 3, {"section": "(whole run)", "by": "op-code", "key": "Matmul"}),
    "op_code_in_custom_sections": ("ttperfreport__bh20_oft", ["--slow-op-code", "GridSampleOperation",
                                                              "--factor", "1.5"], 3,
                                   {"by": "op-code", "key": "GridSampleOperation", "metric": "kernel"}),
    "fewer_replays": ("clip_replays3", ["--last-replays", "2"], 0, None),
    "noise_only": ("oft2025_noise", [], 0, None),
    # real captures that are not in the corpus (tests/data/ttperf_extra): DeepSeek V3 on 8 Blackhole p150 devices,
    # and a Blackhole decode window with a custom section
    "real8_one_device": (DEEPSEEK, ["--slow-device", "5"], 3, {"by": "section", "device": "5", "metric": "kernel"}),
    "real8_op_code": (DEEPSEEK, ["--slow-op-code", "RingJointSDPADeviceOperation", "--factor", "1.3"], 3,
                      {"section": "(whole run)", "by": "op-code", "key": "RingJointSDPADeviceOperation",
                       "device": "all", "metric": "kernel"}),
    "real8_op2op": (DEEPSEEK, ["--slow-op-code", "MatmulDeviceOperation", "--metric", "op2op", "--factor", "3"], 3,
                    {"by": "op-code", "key": "MatmulDeviceOperation", "metric": "op2op"}),
    "real8_noise_only": (DEEPSEEK, [], 0, None),
    "decode_window_op_code": (DECODE, ["--slow-op-code", "SdpaDecodeDeviceOperation", "--factor", "1.3"], 3,
                              {"section": "PERF_DECODE", "by": "op-code", "key": "SdpaDecodeDeviceOperation",
                               "metric": "kernel"}),
    "decode_window_noise_only": (DECODE, [], 0, None),
    "old_era_one_device_of_two": (SMOKE, ["--slow-device", "1"], 3,
                                  {"by": "section", "device": "1", "metric": "kernel"}),
    "old_era_noise_only": (SMOKE, [], 0, None),
}


@pytest.fixture(scope="module", params=BACKENDS)
def series_wh(request, tmp_path_factory, generated):
    """One warehouse per back end holding every series, each under its own label (the series made once per
    session, for both back ends)."""
    folder = tmp_path_factory.mktemp("series")
    gen = _new_url(request.param, folder)
    url = next(gen)
    wh = make_invoke(url)
    for seed, (name, (source, args, _, _)) in enumerate(KINDS.items(), 11):  # own seeds: no two files alike
        if source == "eight":
            src = eight_devices(cases()["dlv3_same"], tmp_path_factory.getbasetemp() / "eight" / "src.csv")
        else:
            src = EXTRA / f"{source}.csv" if (EXTRA / f"{source}.csv").exists() else cases()[source]
        out = generated("mkseries", src, "--runs", "9", "--seed", str(seed), *args)
        r = wh("ingest", out, "--label", name)
        assert r.exit_code == 0, r.output
    yield wh
    for _ in gen:
        pass


@pytest.mark.parametrize("kind", list(KINDS))
def test_default_regressions_find_each_kind(series_wh, kind):
    _, _, exit_code, want = KINDS[kind]
    r = series_wh("regressions", "--label", kind, "--format", "json")
    assert r.exit_code == exit_code, r.output[:3000]
    res = json.loads(r.stdout)
    assert res["checked"] and len(res["checked"][0]["window"]) == 7
    if want is None:
        assert res["regressions"] == []
        return
    assert any(want.items() <= f.items() for f in res["regressions"]), \
        [(f["section"], f["by"], f["key"], f["device"], f["metric"], f["delta_pct"]) for f in res["regressions"]][:20]
    # the table names it too, with the run's capture time and label
    text = series_wh("regressions", "--label", kind).output
    assert want.get("key", want.get("device")) in text and "2026-11-09 02:00" in text and kind in text


def test_regressed_block_lists_its_op_codes(series_wh):
    res = json.loads(series_wh("regressions", "--label", "block_in_replayed_trace", "--format", "json").stdout)
    f = next(f for f in res["regressions"] if f["by"] == "block" and f["section"] == "trace")
    assert f["contributors"] and all(c["delta_us"] > 0 for c in f["contributors"][:1])


def test_regressed_layer_lists_its_op_codes_computed_from_ops(series_wh):
    """A layer's op codes are not stored in the rollups (warehouse.registry.measures: layer/op-code): the drill-down
    computes them from the ops of the window's runs, and names op codes that run in that layer."""
    res = json.loads(series_wh("regressions", "--label", "block_in_replayed_trace", "--format", "json").stdout)
    layers = [f for f in res["regressions"] if f["by"] == "layer" and f["section"] == "trace"]
    assert layers and all(f["contributors"] for f in layers)
    f = layers[0]
    assert f["contributors"][0]["delta_us"] > 0
    layer = f["key"].replace("'", "''")
    r = series_wh("sql", "SELECT DISTINCT op_code FROM op_history WHERE run_id = "
                  f"{int(f['run_id'])} AND section = 'trace' AND hist_layer = '{layer}'", "--format", "json")
    have = {row["op_code"] for row in json.loads(r.stdout)}
    assert {c["op_code"] for c in f["contributors"]} <= have


def test_key_filters_and_metric_choice(series_wh):
    r = series_wh("regressions", "--label", "op2op_of_a_block", "--block", "stage2.block0", "--metric", "op2op")
    assert r.exit_code == 3 and "stage2.block0" in r.output and "kernel" not in r.output.split("\n", 1)[1]
    r = series_wh("regressions", "--label", "op2op_of_a_block", "--block", "nosuch")
    assert r.exit_code == 2 and "no block 'nosuch'" in r.output and "--key" not in r.output
    r = series_wh("regressions", "--label", "op2op_of_a_block", "--metric", "kernel")
    assert r.exit_code == 0  # only op-to-op moved


def test_compare_trend_and_tag(series_wh, tmp_path):
    r = series_wh("runs", "--label", "noise_only", "--json")
    ids = [x["id"] for x in json.loads(r.output)]
    r = series_wh("compare", str(ids[0]), str(ids[-1]), "--by", "block", "--metric", "op2op")
    assert r.exit_code == 0 and "op-to-op time" in r.output and "noise_only" in r.output
    r = series_wh("trend", "--label", "block_in_replayed_trace", "--block", "stage6.block1", "--format", "json")
    res = json.loads(r.output)
    vals = res["values"]["stage6.block1"]
    assert len(vals) == 9 and vals[-1] > 1.2 * max(vals[:-1])
    assert res["meta"][str(res["runs"][-1])]["time"].startswith("2026-11-09") if isinstance(
        next(iter(res["meta"])), str) else True
    r = series_wh("tag", str(ids[-1]), "--tag", "commit=abc123", "--label", "noise_only")
    assert r.exit_code == 0 and "commit=abc123" in r.output
    r = series_wh("regressions", "--label", "noise_only", "--tag", "commit=abc123")
    assert r.exit_code == 0 and "no run with history" in r.output
    r = series_wh("regressions", "--label", "no-such-label")
    assert r.exit_code == 2 and "no runs match label 'no-such-label'" in r.output
