"""`warehouse changes`: the pure detector on signals with known steps, and the whole command on 30-night histories
built with mkhistory.py (run-level and per-op noise, hiccups, heavy op-to-op tails), scored by score_changes.py:
every step at its exact first night, the creep caught, no false, redundant or outlier finding, on both back ends."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from csvedit import read_lists
from conftest import BACKENDS, _new_url, make_invoke
from score_changes import score
from warehouse.history.changepoints import analyse, prepare, prepare_many
from warehouse.history.levels import PairTable, _level, replay_noises
from warehouse.history.rowstats import row_lower_quartiles, row_medians

HERE = Path(__file__).parent
DATA = HERE / "data"
DLV3 = DATA / "seedfmt/dlv3_same/ops_perf_results_2026_11_01_02_00_00.csv"
CLIP = DATA / "seedfmt/clip_replays3/reports/ops_perf_results_2026_11_04_02_00_00.csv"
DEEPSEEK = DATA / "ttperf_extra/bh_8xp150_deepseek_v3_d_p.csv"

# name: (source, mkhistory arguments); every seed its own
HISTORIES = {
    "block_step": (DLV3, ["--step", "block:stage2.block0:12:1.05", "--blip", "op:Matmul:8:1.3"]),
    "op_creep": (CLIP, ["--creep", "op:MinimalMatmulOp:14:0.004", "--replays", "22:2"]),
    "device_step": (DEEPSEEK, ["--step", "device:5:14:1.05"]),
    "noise": (DLV3, ["--blip", "all:all:15:1.2"]),
    # two seeds where one op's hiccup on the night before a step once named the step a night early (the pair
    # series and the night most of the evidence names made them exact; scripts/mutate.py undoes each)
    "hiccup_before_step": (DLV3, ["--step", "op:Conv2dDeviceOperation:15:1.04", "--seed", "2103"]),
    "eager_a_night_early": (CLIP, ["--step", "block:stage6.block1:9:1.04", "--step",
                                   "op:LayerNormDeviceOperation:21:1.06", "--blip", "all:all:15:1.2",
                                   "--seed", "3308"]),
    # a farm (cards of four speeds, a random 1-3 replays, nights missing, noisy collectives): a small block's +5 %
    # is 5.5 sigmas in the trace and 3.5 in eager, found by the sections' evidence combined (history.fdr)
    "farm_block_step": (CLIP, ["--cards", "1,1.012,0.991,1.006", "--missing", "0.1", "--outliers", "0.01",
                               "--noisy", "AllGather|ReduceScatter|AllReduce|Ccl|Collective:0.10",
                               "--replays-random", "1:3", "--step", "block:stage3.block1:14:1.05", "--seed", "117"]),
    # every op's durations drift up 5 % (a logistic from night 6), the FW cycles not: the sections' span over the
    # run-wide level moves back, which is the run's change seen from a figure that stayed, never a finding of its own
    "drift": (DLV3, ["--drift", "all:all:6:0.05"]),
}


# ------------------------------------------------------------------------------------------- the pure detector
def _signal(n: int, seed: int, sigma: float = 0.005) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 100 * np.exp(rng.normal(0, sigma, n))


@pytest.mark.parametrize("night, factor", [(8, 1.04), (15, 0.97), (22, 1.10), (6, 1.05)])
def test_a_step_is_found_at_its_first_night(night, factor):
    x = _signal(30, night)
    x[night:] *= factor
    res = analyse(x, tau=6.0)
    assert [s.index for s in res.steps] == [night] and res.creep is None
    assert (res.steps[0].after > res.steps[0].before) == (factor > 1)
    assert abs(res.steps[0].change - (factor - 1)) < 0.01


def test_noise_and_outliers_are_not_steps():
    for seed in range(40):
        x = _signal(30, 100 + seed)
        x[seed % 30] *= 1.5  # a one-night hiccup
        x[(seed + 11) % 30] *= 1.2
        res = analyse(x, tau=6.0)
        assert res.steps == [] and res.creep is None, (seed, res.steps)
        assert seed % 30 in {o.index for o in res.outliers}


def test_a_run_of_slow_nights_is_no_level():
    """Timing noise is one-sided: several slow nights in a row early on do not make the rest a step down."""
    x = _signal(30, 7)
    x[[0, 1, 3]] *= 1.03
    assert analyse(x, tau=6.0).steps == []


def test_a_creep_is_one_creep_from_its_start_or_later():
    x = _signal(30, 3, 0.003)
    x[12:] *= (1.004 ** np.arange(1, 19))
    res = analyse(x, tau=6.0)
    assert res.creep is not None and res.steps == []
    assert res.creep.index >= 12 and res.creep.change > 0.05


def test_an_excursion_is_not_two_changes():
    x = _signal(30, 5)
    x[14:17] *= 1.05
    assert analyse(x, tau=6.0).steps == []


def test_the_newest_nights_alone_are_not_a_change_yet():
    x = _signal(30, 9)
    x[28:] *= 1.1
    assert analyse(x, tau=6.0).steps == []


def test_row_medians_are_numpys_medians_of_the_finite_values():
    rng = np.random.default_rng(11)
    m = np.round(rng.normal(size=(400, 9)), 1)  # (ties)
    m[rng.random(m.shape) < 0.3] = np.nan
    for row, got in zip(m, row_medians(m)):
        f = row[np.isfinite(row)]
        assert (np.isnan(got) and not len(f)) or got == np.median(f)


def test_row_lower_quartiles_are_numpys_bit_for_bit():
    """The prepared series' split judgement reads lower quartiles of thousands of row groups: the same doubles as
    np.percentile's, whatever the length (its interpolation is two-sided)."""
    rng = np.random.default_rng(12)
    for n in range(1, 120):
        m = rng.normal(size=(5, n)) * rng.uniform(0.001, 50) + rng.normal()
        assert np.array_equal(row_lower_quartiles(m).view(np.int64), np.percentile(m, 25, axis=1).view(np.int64))


def test_levels_of_many_groups_are_each_groups_level():
    """Every block's and op code's level over its pairs at once, and the run-wide level over any of them, from one
    table of the pairs: the numbers of one group at a time, for groups of every size, empty ones, holes and series
    left out (fewer than 90 % of the nights, not positive)."""
    rng = np.random.default_rng(13)
    n = 40
    series, groups = [], []
    for _ in range(200):
        group = []
        for _ in range(int(rng.integers(0, 12))):
            v = np.exp(rng.normal(size=n) * 0.05) * rng.uniform(1, 1000)
            if rng.random() < 0.3:
                v[rng.integers(0, n, size=int(rng.integers(1, 9)))] = np.nan
            if rng.random() < 0.05:
                v[:] = -1.0
            group.append(len(series))
            series.append(v)
        groups.append(np.array(group, dtype=np.intp))
    table = PairTable(np.vstack(series), n)
    for group, got in zip(groups, table.levels(groups)):
        assert np.array_equal(_level([series[i] for i in group], n), got)
    some = np.flatnonzero(rng.random(len(series)) < 0.5)
    assert np.array_equal(table.level(some), _level([series[i] for i in some], n))
    assert np.array_equal(table.level(np.array([], dtype=np.intp)), np.ones(n))


def test_replay_noise_of_many_series_is_each_series_median():
    """The noise a night's replays show, for every series at once: np.median over each series' nights with
    replays (0 with fewer than three), bit for bit."""
    rng = np.random.default_rng(5)
    n, rows = 30, 300
    v = np.exp(rng.normal(size=(rows, n)) * 0.1) * 100
    k = rng.integers(1, 7, size=(rows, n)).astype(float)
    s = np.abs(rng.normal(size=(rows, n))) * 3
    s[rng.random((rows, n)) < 0.2] = np.nan
    v[rng.random((rows, n)) < 0.05] = np.nan
    k[:10] = 1.0  # (no replays: no noise)
    got = replay_noises(v, s, k)
    for r in range(rows):
        ok = np.isfinite(s[r]) & np.isfinite(v[r]) & (v[r] > 0) & (k[r] > 1)
        d2 = np.interp(k[r][ok], [2, 3, 4, 5, 10], [1.13, 1.69, 2.06, 2.33, 3.08])
        want = float(np.median(s[r][ok] / d2 / np.sqrt(k[r][ok]) / v[r][ok])) if ok.sum() >= 3 else 0.0
        assert got[r] == want, r


@pytest.mark.parametrize("before, after", [(2, 0), (0, 2), (2, 2), (1, 1), (3, 1)])
def test_window_medians_are_the_medians_of_each_windows_finite_values(before, after):
    """The sliding medians of the cleaning step (a sorting network inside, a sort at the ends and around gaps)
    against np.median of each window, row by row."""
    from warehouse.history.changepoints import _window_medians_rows

    rng = np.random.default_rng(before * 10 + after)
    for n in (1, 3, 5, 6, 30):
        m = np.round(rng.normal(size=(40, n)), 1)
        m[rng.random(m.shape) < 0.2] = np.nan
        got = _window_medians_rows(m, before, after)
        for r in range(len(m)):
            for i in range(n):
                part = m[r, max(0, i - before):i + after + 1]
                part = part[np.isfinite(part)]
                if len(part):
                    assert got[r, i] == np.median(part), (n, r, i)
                else:
                    assert np.isnan(got[r, i])


@pytest.mark.parametrize("n", [8, 9, 30, 61])
def test_series_prepared_together_are_the_series_prepared_alone(n):
    """The detector prepares a history's series as matrices (prepare_many): every number equals the one-series
    path, for complete series, flat ones, ones with gaps or non-positive nights, and any noise floor."""
    rng = np.random.default_rng(n)
    series, noise = [], []
    for i in range(240):
        x = 100 * np.exp(rng.normal(0, [0.0, 1e-6, 0.005, 0.05][i % 4], n))
        if i % 7 == 0:
            x[rng.integers(n)] *= 3  # a hiccup
        if i % 5 == 0:
            x[n // 2:] *= 1.05  # a step
        if i % 11 == 0:
            x = np.round(x)  # ties
        if i % 13 == 0:
            x[rng.integers(n)] = np.nan if i % 2 else 0.0  # a gap: prepared alone
        series.append(x)
        noise.append([0.0, 0.001, 0.01][i % 3])
    together = prepare_many(series, floor=1e-4 if n % 2 else 0.0, replay_noise=noise)
    for x, rn, got in zip(series, noise, together):
        want = prepare(x, floor=1e-4 if n % 2 else 0.0, replay_noise=rn)
        assert np.array_equal(want.idx, got.idx) and np.array_equal(want.z, got.z)
        assert np.array_equal(want.zc, got.zc) and want.bad == got.bad
        assert (want.sigma, want.best_z) == (got.sigma, got.best_z)


# ------------------------------------------------------------------------------------------- the whole command
class _Histories(Mapping[str, Path]):
    """The 30-night histories of :data:`HISTORIES` in one warehouse, each made and ingested (under its name as the
    label) when first asked for: by its folder (``folders[name]``) or by a command naming it (``--label name``).
    A test, or the mutation check running one case, pays for the histories it reads only."""

    def __init__(self, wh: Any, generated: Any) -> None:
        self.wh, self.generated = wh, generated
        self.made: dict[str, Path] = {}

    def __getitem__(self, name: str) -> Path:
        if name not in self.made:
            src, args = HISTORIES[name]
            seed = 301 + list(HISTORIES).index(name)  # (each history's own seed, whatever the order asked)
            folder = self.generated("mkhistory", src, "--nights", "30", "--seed", str(seed), *args)
            r = self.wh("ingest", folder, "--label", name)
            assert r.exit_code == 0, r.output
            self.made[name] = folder
        return self.made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(HISTORIES)

    def __len__(self) -> int:
        return len(HISTORIES)

    def __call__(self, *args: Any, **kw: Any) -> Any:
        """The CLI, after the history a ``--label`` names is in."""
        if "--label" in args and args[args.index("--label") + 1] in HISTORIES:
            self[args[args.index("--label") + 1]]
        return self.wh(*args, **kw)


@pytest.fixture(scope="module", params=BACKENDS)
def histories(request, tmp_path_factory, generated):
    gen = _new_url(request.param, tmp_path_factory.mktemp("hist"))
    url = next(gen)
    lazy = _Histories(make_invoke(url), generated)
    yield lazy, lazy
    for _ in gen:
        pass


@pytest.mark.parametrize("name", list(HISTORIES))
def test_changes_name_every_step_and_nothing_else(histories, name):
    wh, folders = histories
    r = wh("changes", "--label", name, "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    truth = json.loads((folders[name] / "truth.json").read_text())
    s = score(truth, doc["changes"])
    assert s["exact"] == s["events"] and s["creeps_caught"] == s["creeps"], (s, doc["changes"])
    assert s["false"] == 0 and s["redundant"] == 0 and s["blips"] == 0, (s, doc["changes"])
    for c in doc["changes"]:  # the JSON contract
        for k in ("id", "kind", "by", "key", "time", "run_id", "before", "after", "change_pct", "confidence",
                  "sections", "metrics", "devices", "contributors"):
            assert k in c, k
        assert c["kind"] in ("step", "creep") and c["id"].startswith("c-")
    ids = [c["id"] for c in doc["changes"]]
    assert ids == [c["id"] for c in json.loads(wh("changes", "--label", name, "--format", "json").stdout)["changes"]]


def test_the_blip_nights_are_outliers_apart(histories):
    wh, _ = histories
    doc = json.loads(wh("changes", "--label", "noise", "--format", "json").stdout)
    assert doc["changes"] == []
    assert any(o["kind"] == "outlier" and o["key"] == "all" and o["time"].startswith("2026-10-15")
               for o in doc["outliers"]), doc["outliers"]
    doc = json.loads(wh("changes", "--label", "block_step", "--format", "json").stdout)
    assert any(o["key"] == "Matmul" and o["time"].startswith("2026-10-08") for o in doc["outliers"])


def test_the_gate_is_quiet_over_a_noisy_month(histories):
    """Twenty nights of the gate over realistic noise (hiccuped ops, heavy op-to-op tails): the blip night and the
    step's night, nothing else to speak of (it was hundreds of findings: one op's hiccup in one section, a 7-night
    MAD for the noise)."""
    wh, _ = histories
    doc = json.loads(wh("regressions", "--label", "noise", "--last", "20", "--format", "json").stdout)
    blocking = [c for c in doc["findings"] if c["kind"] != "suspicious"]
    assert {c["time"][:10] for c in blocking} == {"2026-10-15"}, blocking
    assert blocking[0]["by"] == "section" and blocking[0]["key"] == "all"
    # (what no evidence backs is said, never blocking: a hiccup in one section, one replay, one pair)
    assert all(c["evidence"] == [] for c in doc["findings"] if c["kind"] == "suspicious")
    doc = json.loads(wh("regressions", "--label", "block_step", "--last", "20", "--format", "json").stdout)
    blocking = [c for c in doc["findings"] if c["kind"] != "suspicious"]
    first = blocking[0]
    assert (first["time"][:10], first["by"], first["key"]) == ("2026-10-12", "block", "stage2.block0"), blocking
    # (the step's first nights, until the history holds its new level)
    assert all(c["time"][:10] in ("2026-10-12", "2026-10-13", "2026-10-14") for c in blocking), blocking


def test_a_block_cause_nests_its_op_codes_and_shows_where(histories):
    wh, _ = histories
    doc = json.loads(wh("changes", "--label", "block_step", "--format", "json").stdout)
    (c,) = doc["changes"]
    assert (c["by"], c["key"], c["time"][:10]) == ("block", "stage2.block0", "2026-10-12")
    assert c["sections"] == ["eager", "trace"] and "kernel" in c["metrics"] and 4 < c["change_pct"] < 6.5
    assert c["contributors"] and all(k["by"] == "op-code" for k in c["contributors"])
    # (told, and drawn, by the trace's series, a mean over replays, not eager's one iteration)
    assert c["series_of"] == "trace kernel" and len(c["series"]) == 30
    text = wh("changes", "--label", "block_step").output
    assert "step block stage2.block0" in text and "2026-10-12" in text
    # (what was judged, as the gate says it: lost coverage must not read as a quiet history)
    cov = json.loads(wh("changes", "--label", "block_step", "--format", "json").stdout)["coverage"]
    assert cov["series_judged"] > 400 and cov["new_keys"] == cov["gone_keys"] == 0, cov
    assert f"coverage: {cov['series_judged']:,} series judged, " in text
    md = wh("changes", "--label", "block_step", "--format", "md").output
    # (the gate's rows: the mark, the id triage takes, the cause)
    assert f"| ▲ | `{c['id']}` | block stage2.block0 |" in md and len(md) < 65536
    assert c["id"] in text


def test_since_until_and_errors(histories):
    wh, _ = histories
    doc = json.loads(wh("changes", "--label", "block_step", "--since", "2026-10-13", "--format", "json").stdout)
    assert doc["changes"] == []  # the step's night is before the window
    # the step's night the first in view (none of its old level shown): named on its own night, with the id and
    # size it has without --since (the detector reads the history before the view)
    whole = json.loads(wh("changes", "--label", "block_step", "--format", "json").stdout)["changes"]
    doc = json.loads(wh("changes", "--label", "block_step", "--since", "2026-10-12", "--format", "json").stdout)
    assert [(c["id"], c["time"][:10], c["change_pct"]) for c in doc["changes"]] == \
        [(c["id"], c["time"][:10], c["change_pct"]) for c in whole]
    assert doc["runs"][0]["time"][:10] == "2026-10-12" and len(doc["changes"][0]["series"]) == len(doc["runs"])
    r = wh("changes", "--label", "nosuch")
    assert r.exit_code == 2 and "no runs match" in r.output
    r = wh("changes", "--label", "block_step", "--since", "yesterday")
    assert r.exit_code == 2
    r = wh("changes", "--label", "block_step", "--until", "2026-10-03")
    assert r.exit_code == 2 and "changes need at least" in r.output


# ------------------------------------------------------------------------------------------- the gate, by cause
MKSERIES = HERE / "mkseries.py"
OFT = DATA / "seedfmt/oft_mismatch/ops_perf_results_2026_11_02_02_00_00.csv"


@pytest.fixture(scope="module")
def gate_series(tmp_path_factory):
    """The 3,141-op model, 9 nights each: one block 30 % slower in the last; every op 30 % slower in the last."""
    folder = tmp_path_factory.mktemp("gate")
    db = str(folder / "w.db")
    wh = make_invoke(db)
    for seed, (name, args) in enumerate((("one_block", ["--slow-block", "stage2.block1"]),
                                         ("every_op", ["--slow-device", "0"])), 21):
        subprocess.run([sys.executable, str(MKSERIES), str(OFT), str(folder / name), "--runs", "9", "--seed",
                        str(seed), *args], check=True, capture_output=True)
        assert wh("ingest", folder / name, "--label", name).exit_code == 0
    return wh, db


def test_gate_one_slowed_block_is_one_cause_with_its_insides(gate_series):
    wh, _ = gate_series
    r = wh("regressions", "--label", "one_block", "--format", "json")
    assert r.exit_code == 3
    doc = json.loads(r.stdout)
    regs = [c for c in doc["findings"] if c["kind"] == "regression"]
    assert len(regs) == 1, [(c["by"], c["key"]) for c in regs]
    (c,) = regs
    assert (c["by"], c["key"]) == ("block", "stage2.block1") and c["sections"] == ["eager", "trace"]
    kinds = {k["by"] for k in c["contributors"]}
    assert {"op-code", "layer"} <= kinds, kinds
    assert len(doc["regressions"]) > 10  # the series behind the one cause are still listed
    md = wh("regressions", "--label", "one_block", "--format", "md").output
    assert md.count("| 🔺 |") == 1 and len(md) < 65536


def test_gate_every_op_slower_is_one_whole_run_cause_quickly(gate_series):
    import time
    from warehouse.store.db import open_db
    from warehouse.history.gate import find_regressions
    wh, db = gate_series
    doc = json.loads(wh("regressions", "--label", "every_op", "--format", "json").stdout)
    regs = [c for c in doc["findings"] if c["kind"] == "regression"]
    assert [(c["by"], c["key"]) for c in regs] == [("section", "all")] and 25 < regs[0]["change_pct"] < 35
    assert not [c for c in doc["findings"] if c["kind"] == "improvement"]
    eng = open_db(db, create=False)
    t0 = time.perf_counter()
    find_regressions(eng, label="every_op")
    took = time.perf_counter() - t0
    eng.dispose()
    assert took < 20, took  # (the bench measures it; this only catches the 88 s of before)


def test_gate_markdown_stays_within_a_pr_comment():
    from warehouse.history.causes import Cause
    from warehouse.history.gate import Gate
    from warehouse.render.regressions import markdown
    cause = Cause(id="r-x", kind="regression", by="block", key="b" * 200, time="2026-11-09 02:00:00", run_id=9,
                  before=1.0, after=2.0, change_pct=100.0, delta_us=1.0, confidence=1.0, sections=["trace"],
                  metrics=["kernel"], devices=["all"])
    res = Gate(checked=[], findings=[cause] * 2000, invalid=[], threshold=0.05, min_us=1.0, window=7,
               metrics=["kernel"], by=["block"], warnings=[], runs={})
    md = markdown(res)
    assert len(md) < 65536 and "more: `warehouse regressions --format json`" in md


# ------------------------------------------------------------------------------------------- PR gating
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pr_capture_against_mains_nights(backend, tmp_path):
    """Main's nights carry branch=main; a PR's capture (another label, its own tag) is checked against them with
    --run and --baseline-tag / --baseline-label, exit 3 on a regression, 0 when it is only noise."""
    gen = _new_url(backend, tmp_path)
    url = next(gen)
    try:
        wh = make_invoke(url)
        subprocess.run([sys.executable, str(MKSERIES), str(OFT), str(tmp_path / "main"), "--runs", "8", "--seed",
                        "41"], check=True, capture_output=True)
        assert wh("ingest", tmp_path / "main", "--label", "oft", "--tag", "branch=main").exit_code == 0
        subprocess.run([sys.executable, str(MKSERIES), str(OFT), str(tmp_path / "pr"), "--runs", "2", "--seed", "42",
                        "--slow-block", "stage2.block1"], check=True, capture_output=True)
        pr = sorted((tmp_path / "pr").glob("*.csv"))
        r = wh("ingest", pr[0], "--label", "pr-17", "--tag", "branch=pr-17")
        assert r.exit_code == 0
        quiet = int(r.output.split(": run ")[1].split(":")[0])
        r = wh("ingest", pr[1], "--label", "pr-17", "--tag", "branch=pr-17")
        slow = int(r.output.split(": run ")[1].split(":")[0])
        r = wh("regressions", "--run", str(quiet), "--baseline-tag", "branch=main")
        assert r.exit_code == 0, r.output
        r = wh("regressions", "--run", str(slow), "--baseline-tag", "branch=main", "--format", "json")
        assert r.exit_code == 3, r.output
        doc = json.loads(r.stdout)
        assert [(c["by"], c["key"]) for c in doc["findings"] if c["kind"] == "regression"] == \
            [("block", "stage2.block1")]
        assert len(doc["baseline"]["runs"]) == 7 and slow not in doc["baseline"]["runs"]
        r = wh("regressions", "--label", "pr-17", "--baseline-label", "oft")  # the PR label's newest run
        assert r.exit_code == 3, r.output
        from warehouse.api import Warehouse
        res = Warehouse(url).regressions(run=slow, baseline_tags={"branch": "main"})
        assert res.findings[0]["key"] == "stage2.block1"
        r = wh("regressions", "--run", "999", "--baseline-tag", "branch=main")
        assert r.exit_code == 2
    finally:
        for _ in gen:
            pass


def test_changes_says_when_the_newest_night_is_an_invalid_capture(tmp_path):
    db = str(tmp_path / "w.db")
    wh = make_invoke(db)
    subprocess.run([sys.executable, str(HERE / "mkhistory.py"), str(DLV3), str(tmp_path / "h"), "--nights", "10",
                    "--seed", "77"], check=True, capture_output=True)
    assert wh("ingest", tmp_path / "h", "--label", "m").exit_code == 0
    head = DLV3.read_text().splitlines()[0]
    bad = tmp_path / "ops_perf_results_2026_10_30_02_00_00.csv"
    bad.write_text(head + "\n")
    assert wh("ingest", bad, "--label", "m").exit_code == 0
    r = wh("changes", "--label", "m", "--format", "json")
    assert r.exit_code == 4 and "INVALID CAPTURE" in r.output, r.output
    doc = json.loads(r.stdout)
    assert doc["newest_invalid"] and doc["invalid"][-1]["problems"] and len(doc["runs"]) == 10


def test_several_models_under_one_label_are_warned_about_and_left_out(tmp_path):
    """Five different captures under one label: no +900,000 % 'regressions', a warning naming the runs."""
    from corpus import cases
    db = str(tmp_path / "w.db")
    wh = make_invoke(db)
    names = ["dlv3_same", "clip_replays3", "oft_mismatch", "ttperfreport__bh_64_clip_encoder_1",
             "ttperfreport__bh20_oft"]
    for k, name in enumerate(names):
        p = tmp_path / f"ops_perf_results_2026_11_{k + 1:02d}_02_00_00.csv"
        p.write_bytes(cases()[name].read_bytes())
        assert wh("ingest", p, "--label", "mixed").exit_code == 0
    r = wh("regressions", "--label", "mixed", "--format", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and not doc["regressions"], r.output[-2000:]
    assert any("another model" in w for w in doc["warnings"]), doc["warnings"]


def test_trend_leaves_another_model_out_unless_asked(tmp_path):
    """Four nights of one model and one capture of another under one label: the trend draws the model's four."""
    from corpus import cases
    db = str(tmp_path / "w.db")
    wh = make_invoke(db)
    subprocess.run([sys.executable, str(HERE / "mkseries.py"), str(DLV3), str(tmp_path / "n"), "--runs", "4",
                    "--seed", "2"], check=True, capture_output=True)
    assert wh("ingest", tmp_path / "n", "--label", "m").exit_code == 0
    other = tmp_path / "ops_perf_results_2026_11_20_02_00_00.csv"
    other.write_bytes(cases()["clip_replays3"].read_bytes())
    assert wh("ingest", other, "--label", "m").exit_code == 0
    r = wh("trend", "--label", "m", "--by", "op-code", "--format", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["runs"] == [1, 2, 3, 4], doc["runs"]
    assert any("run 5" in w and "--all-models" in w for w in doc["warnings"]), doc["warnings"]
    doc = json.loads(wh("trend", "--label", "m", "--by", "op-code", "--all-models", "--format", "json").stdout)
    assert doc["runs"] == [1, 2, 3, 4, 5]


# ------------------------------------------------------------------------------------------- triage
def _next_night(src: Path, dst: Path) -> Path:
    """The same capture a night later (a new file: its durations nudged by 0.1 %)."""
    import csv as _csv
    rows = read_lists(src, encoding="utf-8-sig")
    k = rows[0].index("DEVICE KERNEL DURATION [ns]")
    for r in rows[1:]:
        if r[k].strip():
            try:
                r[k] = f"{float(r[k]) * 1.001:.0f}"
            except ValueError:
                pass
    dst.parent.mkdir(parents=True, exist_ok=True)
    with dst.open("w", newline="") as f:
        _csv.writer(f).writerows(rows)
    return dst


@pytest.mark.parametrize("backend", BACKENDS)
def test_triage_moves_the_baseline_and_invalid_nights_leave_it(backend, tmp_path):
    gen = _new_url(backend, tmp_path)
    url = next(gen)
    try:
        wh = make_invoke(url)
        subprocess.run([sys.executable, str(MKSERIES), str(OFT), str(tmp_path / "n"), "--runs", "9", "--seed", "51",
                        "--slow-device", "0"], check=True, capture_output=True)
        assert wh("ingest", tmp_path / "n", "--label", "fw").exit_code == 0
        doc = json.loads(wh("regressions", "--label", "fw", "--format", "json").stdout)
        (cause,) = [c for c in doc["findings"] if c["kind"] == "regression"]
        last = sorted((tmp_path / "n").glob("*.csv"))[-1]
        # the night after, at the new level: without triage the gate fires again (the window is the old level)
        after = _next_night(last, tmp_path / "m" / "ops_perf_results_2026_11_10_02_00_00.csv")
        assert wh("ingest", after, "--label", "fw").exit_code == 0
        assert wh("regressions", "--label", "fw").exit_code == 3
        r = wh("triage", cause["id"], "--status", "expected", "--label", "fw", "--note", "new firmware")
        assert r.exit_code == 0 and "expected" in r.output, r.output
        assert wh("regressions", "--label", "fw").exit_code == 0  # the window starts at the step now
        assert wh("regressions", "--label", "fw", "--last", "2").exit_code == 0  # and the step's own night
        listed = json.loads(wh("triage", "--format", "json").stdout)
        assert [(d["id"], d["status"], d["note"]) for d in listed] == [(cause["id"], "expected", "new firmware")]
        # a night called invalid leaves every baseline, and the gate says so when it is the newest
        newest = max(x["id"] for x in json.loads(wh("runs", "--json").output))
        assert wh("triage", f"run:{newest}", "--status", "invalid", "--note", "bad board").exit_code == 0
        r = wh("regressions", "--label", "fw")
        assert r.exit_code == 4 and "triaged invalid: bad board" in r.output, r.output
        # errors
        assert wh("triage", "c-nosuch", "--status", "expected", "--label", "fw").exit_code == 2
        assert wh("triage", "run:99999", "--status", "invalid").exit_code == 2
        assert wh("triage", cause["id"], "--status", "maybe").exit_code == 2
        assert wh("triage", cause["id"]).exit_code == 2
        # removing the run removes its decisions
        assert wh("rm", str(newest), "--yes").exit_code == 0
        assert len(json.loads(wh("triage", "--format", "json").stdout)) == 1
    finally:
        for _ in gen:
            pass


def test_contributors_that_tie_are_ordered_by_name_on_every_back_end():
    """Two contributors whose printed changes are equal come in the order of their names, not in the order a back
    end hands rows over (PostgreSQL's string_agg and SQLite's scan once ordered one such tie differently)."""
    from warehouse.history.changes import _by_impact

    cs = [{"by": "op-code", "key": k, "section": "eager", "delta_us": d}
          for k, d in (("Unary", 0.029), ("Reshape", -0.029), ("Matmul", 1.5), ("Add", 0.01))]
    assert [c["key"] for c in sorted(cs, key=_by_impact)] == ["Matmul", "Reshape", "Unary", "Add"]


def test_a_step_that_undoes_an_earlier_one_names_it():
    """A regression fixed again: the second step names the first (one episode); another key's, a step the same
    way or of another size, does not."""
    from warehouse.history.causes import Cause
    from warehouse.history.causes import link_fixes

    def step(ident: str, run: int, key: str, before: float, after: float) -> Cause:
        return Cause(ident, "step", "block", key, None, run, before, after, 100 * (after / before - 1),
                     after - before, 1.0, ["eager"], ["kernel"], ["all"])
    up, down = step("c-up", 3, "b0", 100, 106), step("c-down", 9, "b0", 106, 100.5)
    other = step("c-other", 12, "b1", 100, 94)
    again = step("c-again", 14, "b0", 100.5, 90)  # (down by 10 %: no like size to undo)
    link_fixes([again, other, down, up], list(range(20)))
    assert (up.fixes, down.fixes, other.fixes, again.fixes) == (None, "c-up", None, None)


def test_row_statistics_equal_numpys_row_by_row():
    """The gate's every-key-at-once statistics give numpy's numbers, NaN nights and all."""
    import warnings

    from warehouse.history.rowstats import medians_over, row_quantiles
    rng = np.random.default_rng(7)
    m = rng.lognormal(0, 1, (300, 31))
    m[rng.random(m.shape) < 0.2] = np.nan
    m[5] = np.nan  # a key without any figure
    m[6, 1:] = np.nan  # one figure
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanquantile(m, [0.5, 0.75], axis=1)
        got = row_quantiles(m, [0.5, 0.75])
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, equal_nan=True)
        cols = [np.arange(7), np.arange(3, 10), np.arange(7)] * 100
        med, cnt = medians_over(m, np.arange(300), cols)
        for i, c in enumerate(cols):
            np.testing.assert_allclose(med[i], np.nanmedian(m[i, c]), rtol=1e-12, equal_nan=True)
            assert cnt[i] == np.isfinite(m[i, c]).sum()


def test_coverage_counts_short_new_and_gone_keys():
    """A key first seen on night 5 is new, one the newest night lacks is gone, one with 3 nights is too short to
    judge; the (block, op code) pairs and other sections are no keys of `changes`' own."""
    from warehouse.history.changes import _coverage
    n = 12
    full = {"kernel": np.ones(n)}

    def late(k: int) -> dict[str, np.ndarray]:
        v = np.ones(n)
        v[:k] = np.nan
        return {"kernel": v}
    gone = {"kernel": np.r_[np.ones(n - 1), np.nan]}
    short = {"kernel": np.r_[np.full(n - 3, np.nan), np.ones(3)]}
    data = {("eager", "block", "b0", -1): full, ("eager", "block", "b1", -1): late(4),
            ("eager", "op-code", "X", -1): gone, ("eager", "op-code", "Y", -1): short,
            ("eager", "block/op-code", "b0 / X", -1): late(6), ("other", "block", "b9", -1): late(2)}
    assert _coverage(data, n, ["eager"], ["kernel"]) == {"too_little_history": 1, "new_keys": 2, "gone_keys": 1}


def test_series_numbered_once_per_distinct_night_are_numbered_as_all_nights_together():
    """A year's pairs are numbered by their first night: nights that repeat another's keys are numbered once, and
    the numbers are those of every night's keys taken together in order."""
    from warehouse.history.nightseries import first_come_parts
    from warehouse.history.series import first_come

    rng = np.random.default_rng(11)
    base = rng.permutation(50).astype(np.int64)
    other = np.concatenate([base[:30], rng.permutation(np.arange(50, 70))]).astype(np.int64)
    nights = [base, base, other, base, other[::-1].copy(), base[:10].copy(), np.array([], dtype=np.int64), other]
    want = first_come(np.concatenate(nights))
    got = first_come_parts(nights)
    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
    assert [len(x) for x in first_come_parts([])] == [0, 0]
