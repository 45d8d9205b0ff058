"""The history series store (table run_series): each run's rollups as typed arrays, the very doubles the view
``rollup`` gives, kept in step with the rollups by ingest, a parallel ingest's merge and the upgrade, checked and
rebuilt by ``warehouse check``."""
from __future__ import annotations

import json

import numpy as np
import pytest
from sqlalchemy import inspect, text

from conftest import make_invoke
from warehouse.history.nightseries import fetch_history, fetch_pairs
from warehouse.history.series import select_runs
from warehouse.store import runseries
from warehouse.store.db import downgrade, make_engine, open_db, resolve_url, upgrade

from test_changes import DLV3


@pytest.fixture
def history(db_url: str, generated) -> None:
    """Eight nights of a model with a block step on the fifth, ingested as label ``m`` into this test's warehouse."""
    nights = generated("mkhistory", DLV3, "--nights", "8", "--seed", "5", "--step", "block:stage2.block0:5:1.05")
    assert make_invoke(db_url)("ingest", nights, "--label", "m").exit_code == 0



@pytest.mark.parametrize("values, scale", [
    ([1.0, 2.0, 3.0], 1000.0),                      # whole ns: int32
    ([1.5, 2.0, 3.0], 1000.0),                      # a mean over replays: float64
    ([7.0, 7.0, 7.0, 7.0], 1.0),                    # one value for all
    ([7.0, 7.0], 1000.0),                           # two rows: never the one-value form (8 bytes either way)
    ([float("nan")] * 3, 1000.0),                   # NULL everywhere: nothing
    ([float("nan"), 1.0, 2.0], 1000.0),             # a NULL among them
    ([0.0, -0.0, 5.0], 1000.0),                     # -0.0 stays -0.0
    ([-0.0, -0.0, -0.0], 1.0),
    ([2.0**31, 1.0, 2.0], 1000.0),                  # past int32
    ([float("inf"), 1.0, 2.0], 1000.0),             # sums past the float limit
    ([3.0], 1000.0),
])
def test_a_figure_decodes_to_the_views_doubles(values, scale):
    stored = np.array(values, dtype=float)
    blob = runseries.encode(stored, scale)
    got = runseries.decode(blob, len(stored), scale)
    assert np.array_equal(got.view(np.int64), (stored / scale).view(np.int64)) or (
        np.isnan(stored).all() and np.isnan(got).all())
    assert len(blob) <= 8 * len(stored)


def _view_series(url: str, runs: list[int]) -> dict[tuple[str, str, str, int], dict[str, list[float]]]:
    """What history reads, from the view rollup with plain SQL: (section, grouping, key, device) -> figure ->
    values by night (NaN where the night has no row or figure)."""
    eng = open_db(url, create=False)
    out: dict[tuple[str, str, str, int], dict[str, list[float]]] = {}
    try:
        with eng.connect() as c:
            for r in c.execute(text(
                    "SELECT run_id, section, grouping, key, device, kernel_us, fw_us, op2op_us, kernel_spread_us, "
                    "span_us FROM rollup WHERE section IN ('eager', 'trace') AND grouping IN ('section', 'block', "
                    "'op-code', 'block/op-code')")):
                if r.device != -1 and r.grouping in ("block", "block/op-code"):
                    continue
                d = out.setdefault((r.section, r.grouping, r.key, r.device), {})
                names = ("kernel", "fw", "op2op") if r.grouping == "block/op-code" else (
                    "kernel", "fw", "op2op", "kernel_spread", "span")
                for name in names:
                    d.setdefault(name, [float("nan")] * len(runs))[runs.index(r.run_id)] = (
                        float("nan") if getattr(r, f"{name}_us") is None else getattr(r, f"{name}_us"))
    finally:
        eng.dispose()
    return out


def test_history_reads_the_views_figures(db_url, history):
    """Every series history reads from the store equals the view rollup's figures, bit for bit, on both back
    ends (a night's rows of a step, a device, a block and its pairs)."""
    eng = open_db(db_url, create=False)
    try:
        with eng.connect() as c:
            runs = select_runs(c, "m")
            got = fetch_history(c, runs)
            # (the pairs read apart first, as `changes` reads them: the same series in the same order)
            apart = fetch_history(c, runs, pairs=fetch_pairs(c, runs))
    finally:
        eng.dispose()
    want = _view_series(db_url, runs)
    assert set(got) == set(want) and len(want) > 100
    assert list(apart) == list(got) and any(g == "block/op-code" for _, g, _, _ in got)
    for sk, figs in got.items():
        assert figs.keys() == apart[sk].keys() and all(
            np.array_equal(v, apart[sk][k], equal_nan=True) for k, v in figs.items()), sk
    for sk, figs in want.items():
        for name, values in figs.items():
            assert np.array_equal(np.array(values), got[sk][name], equal_nan=True), (sk, name)


def test_check_sees_stale_series_and_repair_mends_them(db_url, history):
    wh = make_invoke(db_url)
    before = wh("changes", "--label", "m", "--format", "json").stdout
    eng = open_db(db_url, create=False)
    try:
        with eng.begin() as c:
            c.execute(text("DELETE FROM run_series WHERE run_id = 3 AND grouping = 'block'"))
            c.execute(text("UPDATE run_series SET data = :d WHERE run_id = 4 AND figure = 'kernel_us' "
                           "AND grouping = 'section'"), {"d": np.array([1.0, 2.0], dtype="<f8").tobytes()})
    finally:
        eng.dispose()
    r = wh("check")
    assert r.exit_code == 1
    assert "run 3: its history series" in r.output and "run 4: its history series" in r.output
    r = wh("check", "--repair")
    assert r.exit_code == 0, r.output
    assert "rebuilt the history series of 8 run(s)" in r.output
    assert wh("changes", "--label", "m", "--format", "json").stdout == before


def test_a_run_without_series_is_named_not_misread(db_url, history):
    """A run whose series are missing (deleted by hand) is an error that says what to run, never a night
    silently left out of history."""
    wh = make_invoke(db_url)
    eng = open_db(db_url, create=False)
    try:
        with eng.begin() as c:
            c.execute(text("DELETE FROM run_series WHERE run_id = 2 AND figure = 'fw_us'"))
            c.execute(text("DELETE FROM run_series WHERE run_id = 6"))
    finally:
        eng.dispose()
    r = wh("changes", "--label", "m")
    assert r.exit_code == 1
    assert r.output.startswith("Error: run(s) 6 have no history series") and "check --repair" in r.output
    r = wh("regressions", "--label", "m")
    assert r.exit_code == 1 and "run(s) 6 have no history series" in r.output


def test_upgrade_builds_the_series_of_runs_stored_before(db_url, history):
    """A warehouse from before the table (revision 0018) gets every run's series from `db upgrade`, and history
    answers as it did."""
    wh = make_invoke(db_url)
    before = wh("changes", "--label", "m", "--format", "json").stdout
    engine = make_engine(resolve_url(db_url))
    try:
        downgrade(engine, "0018")
        with engine.connect() as c:
            assert "run_series" not in inspect(c).get_table_names()
        upgrade(engine, "head")
        with engine.connect() as c:
            assert c.execute(text("SELECT COUNT(DISTINCT run_id) FROM run_series")).scalar() == 8
    finally:
        engine.dispose()
    assert wh("changes", "--label", "m", "--format", "json").stdout == before
    assert wh("check").exit_code == 0


def test_the_whole_run_of_sectioned_runs_is_read_from_the_rollups(db_url, history):
    """The series leave out the whole run of a run with sections (history reads its sections); the gate asked for
    the whole run (`--section all`) still judges it, from the rollups."""
    wh = make_invoke(db_url)
    eng = open_db(db_url, create=False)
    try:
        with eng.connect() as c:
            assert c.execute(text("SELECT COUNT(*) FROM run_series WHERE section = ''")).scalar() == 0
    finally:
        eng.dispose()
    r = wh("regressions", "--label", "m", "--section", "all", "--format", "json")
    assert r.exit_code in (0, 3), r.output
    checked = json.loads(r.stdout)["checked"]
    assert checked[0]["sections"] == ["(whole run)"] and checked[0]["series_judged"] > 100
