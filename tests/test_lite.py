"""The light read path (warehouse.store.lite): `warehouse runs` without SQLAlchemy, the same answer as the full path."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import make_invoke
from corpus import cases

from warehouse.store import lite
from warehouse.api import Warehouse

ROOT = Path(__file__).resolve().parent.parent


def _filled(wh) -> None:
    for i, name in enumerate(("dlv3_same", "oft_mismatch")):
        assert wh("ingest", cases()[name], "--label", "m", "--tag", f"night={i}").exit_code == 0


def test_the_light_path_knows_this_versions_views():
    from warehouse.store.views import VIEWS_HASH, _STAMP
    assert lite.VIEWS_HASH == VIEWS_HASH, "a view changed: run python scripts/gen_docs.py (it writes lite.VIEWS_HASH)"
    assert lite.VIEWS_STAMP == _STAMP


def test_runs_read_light_equal_the_full_path(sqlite_db):
    wh = make_invoke(sqlite_db)
    _filled(wh)
    light = Warehouse(sqlite_db)
    with light._light() as conn:
        assert conn is not None  # (a SQLite file at head: the light path serves it)
    full = Warehouse(sqlite_db)
    full._reader()  # an engine already open: the full path
    with full._light() as conn:
        assert conn is None
    for kw in ({}, {"warnings": True}, {"label": "m"}):
        assert [r.to_json() for r in light.runs(**kw)] == [r.to_json() for r in full.runs(**kw)]
    one = light.runs()[0].to_json()
    assert one["tags"] == {"night": "0"} and one["captured_at"] == "2026-11-01 02:00:00"
    assert isinstance(one["trace_matches_eager"], bool) and isinstance(one["freq_mhz"], float)


def test_runs_json_is_the_same_text_on_both_back_ends(db_url, sqlite_db):
    """The light path (SQLite) and the engine (PostgreSQL, or SQLite with an engine open) print one document."""
    outs = []
    for url in (db_url, sqlite_db):
        wh = make_invoke(url)
        _filled(wh)
        doc = json.loads(wh("runs", "--json", "--warnings").output)
        for r in doc:
            r.pop("ingested_at"), r.pop("source_path")
        outs.append(doc)
    assert outs[0] == outs[1]


def test_runs_as_a_process_imports_no_sqlalchemy(sqlite_db):
    """What makes it fast: the process never imports SQLAlchemy (the full path does)."""
    _filled(make_invoke(sqlite_db))
    probe = ("import sys, runpy; sys.argv = ['warehouse', '--db', sys.argv[1], 'runs'];\n"
             "try:\n    runpy.run_module('warehouse', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print('SQLA' if 'sqlalchemy' in sys.modules else 'LIGHT', file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", probe, sqlite_db], capture_output=True, text=True, cwd=ROOT)
    assert "oft_mismatch" in r.stdout or "ops_perf_results" in r.stdout, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "LIGHT", r.stderr


def test_the_light_path_steps_aside(tmp_path, sqlite_db, monkeypatch):
    """Missing, behind, a URL, not a database: None, and the full path says what is wrong."""
    with lite.reader(str(tmp_path / "none.db")) as c:
        assert c is None
    with lite.reader("sqlite:///" + str(tmp_path / "x.db")) as c:
        assert c is None
    junk = tmp_path / "junk.db"
    junk.write_text("not a database")
    with lite.reader(str(junk)) as c:
        assert c is None
    r = make_invoke(str(junk))("runs")
    assert r.exit_code != 0 and r.output.startswith("Error: ")
    _filled(make_invoke(sqlite_db))
    monkeypatch.setattr(lite, "head_revision_fast", lambda: "9999")
    with lite.reader(sqlite_db) as c:
        assert c is None  # (a warehouse behind this code: `db upgrade` is the full path's to say)


def test_report_reads_light_and_equals_the_full_path(sqlite_db):
    """`report` on the light path: the same document as through the engine, `latest` and its label included."""
    from warehouse.render.report import text, to_json
    wh = make_invoke(sqlite_db)
    _filled(wh)
    assert wh("ingest", cases()["clip_replays3"], "--label", "other").exit_code == 0
    light, full = Warehouse(sqlite_db), Warehouse(sqlite_db)
    full._reader()
    for ref, label in (("1", None), ("2", None), ("latest", None), ("latest", "m")):
        a, b = light.report(ref, label), full.report(ref, label)
        assert to_json(a) == to_json(b) and text(a) == text(b)
    assert light.report("latest", "m")["csv"].endswith("ops_perf_results_2026_11_02_02_00_00.csv")
    for bad in ("7", "x1", "latest"):
        errs = []
        for w in (light, full):
            try:
                w.report(bad, "nosuch" if bad == "latest" else None)
            except Exception as e:  # noqa: BLE001 - the two paths must fail alike
                errs.append((type(e), str(e)))
        assert len(errs) == 2 and errs[0] == errs[1], errs


def test_report_as_a_process_imports_no_sqlalchemy(sqlite_db, tmp_path):
    _filled(make_invoke(sqlite_db))
    probe = ("import sys, runpy; sys.argv = ['warehouse', '--db', sys.argv[1], 'report', '1', '--json', sys.argv[2]];\n"
             "try:\n    runpy.run_module('warehouse', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print('SQLA' if 'sqlalchemy' in sys.modules else 'LIGHT', file=sys.stderr)")
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-c", probe, sqlite_db, str(out)], capture_output=True, text=True, cwd=ROOT)
    assert "eager" in r.stdout and json.loads(out.read_text())["eager"]["ops"] > 0, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "LIGHT", r.stderr
