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


def _stale_views(url: str) -> None:
    """As the owner: make the view stamp another release's (a dashboard host on another version)."""
    from sqlalchemy import create_engine, text
    eng = create_engine(url)
    with eng.begin() as c:
        c.execute(text("DROP VIEW warehouse_views"))
        c.execute(text("CREATE VIEW warehouse_views AS SELECT 'stale' AS hash"))
    eng.dispose()


def _stamp(url: str) -> str:
    from sqlalchemy import create_engine, text
    eng = create_engine(url)
    with eng.connect() as c:
        v = c.execute(text("SELECT hash FROM warehouse_views")).scalar()
    eng.dispose()
    return str(v)


def test_reads_never_write_sqlite(tmp_path):
    """Stale views: every read command answers (with a warning) and the file is not rewritten."""
    import hashlib
    db = tmp_path / "w.db"
    wh = make_invoke(str(db))
    assert wh("ingest", cases()["dlv3_same"], "--label", "d").exit_code == 0
    _stale_views(f"sqlite:///{db}")
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    for args in (["runs"], ["sql", "SELECT COUNT(*) FROM run"], ["report", "1", "-q"], ["export", "1", "-o",
                 str(tmp_path / "e.csv")], ["schema"], ["trend", "--label", "d"], ["compare", "1", "1"]):
        r = wh(*args)
        assert r.exit_code == 0, (args, r.output)
        assert "views are another version's" in r.stderr, args
    from starlette.testclient import TestClient
    from warehouse.web.app import create_app
    assert TestClient(create_app(str(db)), base_url="http://127.0.0.1").get("/").status_code == 200
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before and _stamp(f"sqlite:///{db}") == "stale"
    assert wh("db", "upgrade").exit_code == 0 and _stamp(f"sqlite:///{db}") != "stale"  # a writer refreshes


def test_reads_never_write_postgres_reader_role(pg_url):
    """Stale views: the SELECT-only role's read commands and dashboard answer (with a warning)."""
    from sqlalchemy.engine import make_url
    wh = make_invoke(pg_url)
    assert wh("ingest", cases()["dlv3_same"], "--label", "d").exit_code == 0
    assert wh("db", "create-reader", "wh_reader_ro").exit_code == 0
    reader_url = make_url(pg_url).set(username="wh_reader_ro").render_as_string(hide_password=False)
    _stale_views(pg_url)
    reader = make_invoke(reader_url)
    for args in (["runs"], ["sql", "SELECT COUNT(*) FROM run"], ["report", "1", "-q"], ["trend", "--label", "d"],
                 ["regressions", "--label", "d"], ["schema"]):
        r = reader(*args)
        assert r.exit_code == 0, (args, r.output)
        assert "views are another version's" in r.stderr, args
    from starlette.testclient import TestClient
    from warehouse.web.app import create_app
    assert TestClient(create_app(reader_url), base_url="http://127.0.0.1").get("/").status_code == 200
    assert _stamp(pg_url) == "stale"


def test_a_file_stored_before_says_what_label_it_keeps(tmp_path):
    db = str(tmp_path / "w.db")
    wh = make_invoke(db)
    src = cases()["dlv3_same"]
    assert wh("ingest", src, "--label", "old").exit_code == 0
    r = wh("ingest", src, "--label", "new")
    assert r.exit_code == 0 and "already ingested as run 1 (it keeps its label 'old'; `warehouse tag 1 --label new`" \
        in r.output, r.output
    assert "keeps" not in wh("ingest", src, "--label", "old").output
    from warehouse.api import Warehouse
    w = Warehouse(db)
    assert w.query("SELECT COUNT(*) AS n FROM run") == [{"n": 1}]
    assert w._reader() is w._reader()  # one engine for every query of a notebook


def test_an_ingest_through_the_reader_role_says_so(pg_url):
    from sqlalchemy.engine import make_url
    wh = make_invoke(pg_url)
    assert wh("ingest", cases()["dlv3_same"]).exit_code == 0
    assert wh("db", "create-reader", "wh_reader_in").exit_code == 0
    reader = make_invoke(make_url(pg_url).set(username="wh_reader_in").render_as_string(hide_password=False))
    r = reader("ingest", cases()["clip_replays3"])
    assert r.exit_code != 0 and "file's" not in r.output, r.output
    assert "reader role" in r.output or "lacks a privilege" in r.output, r.output


def test_numbers_and_times_print_the_same_on_both_back_ends(two_runs):
    """`sql` prints a float to the digits a double holds (a sum that added to 43298.909999999996 on one back end
    and 43298.91 on the other prints 43298.91 on both), an op count as an integer, a time without SQLite's
    '.000000' and a flag as 0 / 1."""
    wh, _ = two_runs
    r = wh("sql", "SELECT run_time, ops, op2op_us, fw_us FROM series_block WHERE run_id = 1 AND section = '' "
           "AND key = 'stage0.block1'", "--format", "csv")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == ["run_time,ops,op2op_us,fw_us", "2026-11-01 02:00:00,16,43298.91,674.547"]
    r = wh("sql", "SELECT run_time, trace_matches_eager AS m, freq_mhz FROM run_info WHERE run_id = 1",
           "--format", "json")
    assert json.loads(r.stdout) == [{"run_time": "2026-11-01 02:00:00", "m": 1, "freq_mhz": 1350}]
    r = wh("sql", "SELECT SUM(kernel_us) AS k, COUNT(*) AS n FROM op_detail WHERE run_id = 1")
    assert r.stdout.splitlines()[2].split() == ["16987.77", "774"], r.output


def test_plain_values():
    from datetime import datetime
    from decimal import Decimal

    from warehouse.render import plain
    assert plain(69557.18100000001) == 69557.181 and repr(plain(0.1 + 0.2)) == "0.3"
    assert plain(387.0) == 387 and isinstance(plain(387.0), int) and plain(1e300) == 1e300
    assert plain(Decimal("86.4987080103359173")) == plain(86.49870801033592) == 86.4987080103359
    assert plain(True) == 1 and plain(float("nan")) != plain(float("nan"))
    assert plain(datetime(2026, 11, 1, 2)) == plain("2026-11-01 02:00:00.000000") == "2026-11-01 02:00:00"
    assert plain("2026-11-01 02:00:00.500000") == "2026-11-01 02:00:00.500000" == plain(datetime(2026, 11, 1, 2, 0, 0,
                                                                                                  500000))
    assert plain("not a time .000000") == "not a time .000000"


@pytest.mark.skipif("postgresql" not in BACKENDS, reason="needs WAREHOUSE_TEST_PG_URL")
def test_json_documents_are_the_same_text_on_both_back_ends(tmp_path):
    """Every JSON document a command prints is the same text on SQLite and on PostgreSQL (the ingest time
    aside): the same keys in the same order (two runs captured at the same second once came back in another
    order) and the same numbers."""
    import re

    from warehouse.capture.synthetic import nightly_series
    (tmp_path / "nights").mkdir()
    data = list(nightly_series(cases()["dlv3_same"], tmp_path / "nights", 10, noise=0.03,
                               slow={8: ("Conv", 1.3)}, seed=4))
    commands = [("runs", "--json"), ("compare", "1", "2", "--format", "json"),
                ("regressions", "--label", "m", "--format", "json"), ("changes", "--label", "m", "--format", "json"),
                ("trend", "--label", "m", "--format", "json"), ("perf", "1", "--format", "json"),
                ("compare", "11", "12", "--format", "json", "--by", "op-code"),
                ("sql", "--format", "json", "SELECT * FROM series_block ORDER BY run_id, section, key"),
                ("sql", "--format", "json", "SELECT * FROM section_summary ORDER BY run_id, section"),
                ("triage", "--format", "json")]
    outs: dict[str, list[str]] = {}
    for backend in ("sqlite", "postgresql"):
        gen = _new_url(backend, tmp_path / backend)
        (tmp_path / backend).mkdir()
        wh = make_invoke(next(gen))
        assert wh("ingest", *data, "--label", "m").exit_code == 0
        assert wh("ingest", cases()["oft_mismatch"], cases()["dlv3_postmatmul"], "--label", "x").exit_code == 0
        outs[backend] = []
        for c in commands:
            r = wh(*c)
            assert r.exit_code in (0, 3), (c, r.output)  # (3: the gate found a regression)
            outs[backend].append(re.sub(r'"ingested_at": "[^"]*"', "", r.stdout))
        for _ in gen:
            pass
    for c, a, b in zip(commands, outs["sqlite"], outs["postgresql"]):
        assert a == b, c
