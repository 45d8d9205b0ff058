"""What a new user met (issue 24's friction list), each on both back ends: SQL passed to the driver as written,
--block/--layer that do what --help says, exit 2 for an unknown label, every row of a Markdown comparison when
asked."""
from __future__ import annotations

import json

import pytest

from conftest import BACKENDS, _new_url, make_invoke
from corpus import cases


@pytest.fixture(scope="module", params=BACKENDS)
def two_runs(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("friction")
    gen = _new_url(request.param, folder)
    url = next(gen)
    wh = make_invoke(url)
    for k, name in enumerate(["dlv3_same", "dlv3_same"]):
        p = folder / f"ops_perf_results_2026_11_0{k + 1}_02_00_00.csv"
        data = cases()[name].read_bytes()
        p.write_bytes(data if k == 0 else data + b"\n")  # (other bytes: a second run)
        assert wh("ingest", p, "--label", "d").exit_code == 0
    yield wh, url
    for _ in gen:
        pass


def test_sql_goes_to_the_driver_as_written(two_runs):
    wh, url = two_runs
    r = wh("sql", "SELECT 'see :x here' AS a, '50%' AS b -- a :word in a comment", "--format", "csv")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == ["a,b", "see :x here,50%"]
    r = wh("sql", "SELECT COUNT(*) AS n FROM series_block WHERE key LIKE '%:stage1.block1%'", "--format", "csv")
    assert r.exit_code == 0 and r.stdout.splitlines() == ["n", "0"], r.output
    from warehouse.api import Warehouse  # the API keeps its :name parameters
    assert Warehouse(url).query("SELECT :v AS v", v=3) == [{"v": 3}]


def test_block_and_layer_do_what_help_says(two_runs):
    wh, _ = two_runs
    r = wh("compare", "1", "2", "--block", "stage2.block0", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["by"] == "block" and [x["key"] for x in doc["rows"]] == ["stage2.block0"]
    r = wh("compare", "1", "2", "--by", "layer", "--block", "stage2.block0", "--format", "json")
    assert r.exit_code == 0, r.output
    keys = [x["key"] for x in json.loads(r.stdout)["rows"]]
    assert keys and all(k.startswith("stage2.block0.") or k == "[stage2.block0 glue]" for k in keys), keys
    layer = keys[0]
    r = wh("trend", "--label", "d", "--layer", layer, "--format", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["keys"] == [layer], r.output
    r = wh("compare", "1", "2", "--by", "op-code", "--block", "stage2.block0")
    assert r.exit_code == 2 and "--block goes with --by block" in r.output


def test_unknown_label_and_markdown_top(two_runs):
    wh, _ = two_runs
    r = wh("runs", "--label", "nope")
    assert r.exit_code == 2 and "no runs with label 'nope'" in r.output
    every = wh("compare", "1", "2", "--by", "layer", "--top", "0", "--format", "md").stdout
    capped = wh("compare", "1", "2", "--by", "layer", "--format", "md").stdout
    n_layers = len(json.loads(wh("compare", "1", "2", "--by", "layer", "--format", "json").stdout)["rows"])
    assert n_layers > 30
    assert every.count("\n| ") == n_layers + 2 and "more rows" not in every  # header, total, every layer
    assert capped.count("\n| ") == 30 + 2 and f"{n_layers - 30} more rows" in capped
    assert "create-reader" in wh("db", "--help").output
