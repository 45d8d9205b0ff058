"""Every metric in history: a nightly series where, from one night on, the FPU utilisation of one block drops
(its PM COMPUTE falls, its kernel time does not) and one matmul becomes DRAM-bound (its kernel time halves, so
tt-perf-report's DRAM % crosses 65), is found by `regressions` and `changes` with the metric named, on every
back end; the same series with noise only is not; compare and trend give the metric's own figures."""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest

from conftest import BACKENDS, _new_url, make_invoke
from corpus import cases

BLOCK = "stage2.block0"  # its FPU utilisation drops
LAYER = "stage1.block0.conv21"  # its matmul becomes DRAM-bound
NIGHTS, STEP = 12, 8  # nights 9..12 carry the change (index 8 on)
KERNEL, FW, COMPUTE, UTIL = ("DEVICE KERNEL DURATION [ns]", "DEVICE FW DURATION [ns]", "PM COMPUTE [ns]",
                             "PM FPU UTIL (%)")


def _members(rows: list[dict]) -> list[tuple[str, str, str] | None]:
    """Each row's (section, block, layer), None for signposts: eager by its m: / c: signposts, trace by position
    modulo the eager ops (the trace replays eager's ops in order)."""
    out: list[tuple[str, str, str] | None] = []
    sec, block, layer, eager, tpos = None, "", "", [], 0
    for r in rows:
        code = r["OP CODE"]
        if r["OP TYPE"] == "signpost":
            if code in ("eager", "trace"):
                sec, block, layer = code, "", ""
            elif code.endswith("_end"):
                sec = None
            elif code.startswith("m:"):
                block, layer = code[2:], ""
            elif code.startswith("c:"):
                layer = code[2:]
            out.append(None)
            continue
        if sec == "eager":
            eager.append((block, layer))
            out.append(("eager", block, layer))
        elif sec == "trace" and eager:
            out.append(("trace", *eager[tpos % len(eager)]))
            tpos += 1
        else:
            out.append(("", "", ""))
    return out


def make_series(src: Path, out: Path, seed: int, change: bool) -> None:
    """``NIGHTS`` captures of ``src`` with +-2 % kernel / FW jitter (PM FPU UTIL kept = 100 x PM COMPUTE / kernel,
    as tt-metal writes it); with ``change``, from night ``STEP`` on: BLOCK's PM COMPUTE x 0.6 and LAYER's matmul
    kernel and FW x 0.5."""
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    cols = list(rows[0])
    members = _members(rows)
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    for night in range(NIGHTS):
        changed = change and night >= STEP
        res = []
        for r, m in zip(rows, members):
            x = dict(r)
            if m is not None and x[KERNEL].strip():
                jit = 1 + rng.uniform(-0.02, 0.02)
                if changed and m[2] == LAYER and x["OP CODE"] == "Matmul":
                    jit *= 0.5
                kernel = float(x[KERNEL]) * jit
                x[KERNEL] = f"{kernel:.0f}"
                if x[FW].strip():
                    x[FW] = f"{float(x[FW]) * jit:.0f}"
                if x.get(COMPUTE, "").strip() and kernel > 0:
                    compute = float(x[COMPUTE]) * (0.6 if changed and m[1] == BLOCK else 1.0)
                    x[COMPUTE] = f"{compute:.0f}"
                    x[UTIL] = f"{100 * compute / float(x[KERNEL]):.3f}"
            res.append(x)
        with open(out / f"ops_perf_results_2026_11_{night + 1:02d}_02_00_00.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(res)


@pytest.fixture(scope="module", params=BACKENDS)
def wh(request, tmp_path_factory):
    """A warehouse per back end with the changed series (label ``step``) and a noise-only one (``noise``)."""
    folder = tmp_path_factory.mktemp("metrics")
    gen = _new_url(request.param, folder)
    url = next(gen)
    invoke = make_invoke(url)
    src = cases()["dlv3_same"]
    for label, change, seed in (("step", True, 5), ("noise", False, 6)):
        make_series(src, folder / label, seed, change)
        r = invoke("ingest", folder / label, "--label", label)
        assert r.exit_code == 0, r.output
    invoke.folder = folder
    invoke.url = url
    yield invoke
    for _ in gen:
        pass


def _json(r) -> dict:
    assert r.exit_code in (0, 3), r.output
    return json.loads(r.output)


def test_regressions_find_the_fpu_utilisation_drop_of_one_block(wh):
    r = wh("regressions", "--label", "step", "--last", "4", "--metric", "fpu_util", "--format", "json")
    assert r.exit_code == 3, r.output
    doc = _json(r)
    mine = [f for f in doc["regressions"] if f["metric"] == "fpu_util" and f["by"] == "block"]
    assert {f["key"] for f in mine} == {BLOCK}, doc["regressions"]
    f = min(mine, key=lambda x: x["run_id"])
    assert f["unit"] == "%" and f["kind"] == "regression" and f["delta_us"] < 0  # a utilisation that fell
    assert f["delta_pct"] == pytest.approx(-40, abs=3)
    # the first night of the change is where it is found
    assert doc["runs"][str(f["run_id"])]["time"].startswith("2026-11-09")
    # the cause says which metric, in its unit
    top = [c for c in doc["findings"] if c["key"] == BLOCK and "fpu_util" in c["metrics"]]
    assert top and top[0]["unit"] == "%"
    # its text output names the metric
    text = wh("regressions", "--label", "step", "--last", "4", "--metric", "fpu_util").output
    assert BLOCK in text and "fpu_util" in text


def test_regressions_find_the_matmul_that_became_dram_bound(wh):
    r = wh("regressions", "--label", "step", "--last", "4", "--metric", "bound_dram", "--by", "layer",
           "--by", "op-code", "--format", "json")
    assert r.exit_code == 3, r.output
    doc = _json(r)
    found = {(f["by"], f["key"]) for f in doc["regressions"] if f["metric"] == "bound_dram"}
    assert ("layer", LAYER) in found and ("op-code", "Matmul") in found, found
    f = min((f for f in doc["regressions"] if f["by"] == "layer" and f["key"] == LAYER), key=lambda x: x["run_id"])
    assert doc["runs"][str(f["run_id"])]["time"].startswith("2026-11-09")
    assert f["unit"] == "ops" and f["baseline_us"] == 0 and f["value_us"] >= 1
    # the op identities whose Bound changed, named
    cause = next(c for c in doc["findings"] if "bound_dram" in c["metrics"])
    assert any(o.get("identity", "").endswith(f"{LAYER} / Matmul #1") and o["bound"] == "DRAM"
               and o["was"] == "SLOW" for o in cause["bound_changes"]), cause


def test_noise_only_series_has_no_finding_on_the_new_metrics(wh):
    r = wh("regressions", "--label", "noise", "--last", "4", "--metric", "fpu_util", "--metric", "bound_dram",
           "--metric", "bound_slow", "--metric", "pm_compute", "--format", "json")
    assert r.exit_code == 0, r.output
    assert _json(r)["regressions"] == []


def test_changes_name_the_metric_and_the_night(wh):
    r = wh("changes", "--label", "step", "--metric", "fpu_util", "--metric", "bound_dram", "--format", "json")
    doc = _json(r)
    steps = {(c["by"], c["key"], tuple(c["metrics"])): c for c in doc["changes"]}
    fpu = [c for (by, key, ms), c in steps.items() if by == "block" and key == BLOCK and "fpu_util" in ms]
    assert fpu and fpu[0]["time"].startswith("2026-11-09"), doc["changes"]
    dram = [c for (by, key, ms), c in steps.items() if "bound_dram" in ms]
    assert dram and all(c["time"].startswith("2026-11-09") for c in dram), doc["changes"]
    # the matmul that became DRAM-bound, by its identity, in both sections
    named = {(b["identity"].split(" / ")[0], b["was"], b["bound"]) for c in dram for b in c["bound_changes"]
             if b["identity"].endswith(f"{LAYER} / Matmul #1")}
    assert named == {("eager", "SLOW", "DRAM"), ("trace", "SLOW", "DRAM")}, dram
    noise = _json(wh("changes", "--label", "noise", "--metric", "fpu_util", "--metric", "bound_dram",
                     "--format", "json"))
    assert noise["changes"] == []


def _util_of(path: Path, section: str) -> float:
    """A section's FPU utilisation straight from the CSV: kernel-weighted PM FPU UTIL over its ops that have it."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    num = den = 0.0
    for r, m in zip(rows, _members(rows)):
        if m is None or m[0] != section or not r[UTIL].strip():
            continue
        num += float(r[UTIL]) * float(r[KERNEL])
        den += float(r[KERNEL])
    return num / den


def test_compare_and_trend_give_the_metric_from_the_ops(wh):
    last = sorted((wh.folder / "step").glob("*.csv"))[-1]
    doc = _json(wh("compare", "1", "12", "--by", "section", "--section", "eager", "--metric", "fpu_util",
                   "--format", "json"))
    assert doc["unit"] == "%"
    assert doc["total"]["b_us"] == pytest.approx(_util_of(last, "eager"), abs=5e-4)
    t = _json(wh("trend", "--label", "step", "--by", "block", "--key", BLOCK, "--metric", "fpu_util",
                 "--format", "json"))
    series = t["values"][BLOCK]
    assert len(series) == NIGHTS and all(v is not None for v in series)
    assert max(series[STEP:]) < 0.7 * min(series[:STEP])


def test_any_csv_column_by_name_is_a_metric(wh):
    # a column named as it is in the CSV reads as its family metric does (here PM FPU UTIL, fpu_util)
    named = _json(wh("compare", "1", "12", "--by", "block", "--section", "trace", "--metric", "col:PM FPU UTIL (%)",
                     "--format", "json"))
    family = _json(wh("compare", "1", "12", "--by", "block", "--section", "trace", "--metric", "fpu_util",
                      "--format", "json"))
    assert named["unit"] == "%" and len(named["rows"]) == len(family["rows"]) > 5
    assert [(r["key"], r["a_us"], r["b_us"]) for r in named["rows"]] == \
        [(r["key"], r["a_us"], r["b_us"]) for r in family["rows"]]
    # a time column is summed in us, and found when it moves (the matmul's TRISC1 kernel does not: noise only)
    t = _json(wh("trend", "--label", "step", "--by", "section", "--metric",
                 "col:DEVICE TRISC1 KERNEL DURATION [ns]", "--format", "json"))
    assert t["unit"] == "us" and all(v and v > 0 for v in t["values"]["total"])
    # a name no run has is an error that says so, not an empty answer
    r = wh("regressions", "--label", "step", "--metric", "col:NO SUCH COLUMN [ns]")
    assert r.exit_code == 2 and "no run read has a CSV column 'NO SUCH COLUMN [ns]'" in r.output, r.output


def test_dashboard_takes_the_metric(wh):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from warehouse.web.app import create_app

    client = TestClient(create_app(wh.url), base_url="http://127.0.0.1")
    page = client.get("/regressions", params={"label": "step", "metric": "fpu_util", "last": "4"})
    assert page.status_code == 200 and BLOCK in page.text and "fpu_util" in page.text and " %" in page.text
    page = client.get("/changes", params={"label": "step", "metric": "bound_dram"})
    assert page.status_code == 200 and "stage1.block0" in page.text and "bound_dram" in page.text
    page = client.get("/compare", params={"a": "1", "b": "12", "by": "block", "metric": "fpu_util"})
    assert page.status_code == 200 and "A %" in page.text
    assert client.get("/regressions", params={"label": "step", "metric": "nope"}).status_code == 400
