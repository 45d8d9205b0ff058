"""One application layer: every CLI command and every dashboard route goes through :class:`warehouse.Warehouse`
(each is run with the class's methods recorded; tests/test_architecture.py holds the adapters to it), and its
results are typed (dataclasses whose ``to_json()`` is what ``--format json`` prints)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click
import pytest

from conftest import make_invoke
from corpus import cases

ROOT = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    from warehouse.cli import cli

    def walk(g: click.Group, pre: str = "") -> list[str]:
        out = []
        for name, c in g.commands.items():
            out += walk(c, pre + name + " ") if isinstance(c, click.Group) else [pre + name]
        return out
    return walk(cli)


@pytest.fixture
def recorded(monkeypatch) -> list[str]:
    """The names of the Warehouse methods called (and ``__init__`` for each one made)."""
    from warehouse.api import Warehouse
    calls: list[str] = []
    for name, fn in list(vars(Warehouse).items()):
        if callable(fn) and (not name.startswith("_") or name == "__init__"):
            def wrapper(*a, __fn=fn, __name=name, **k):
                calls.append(__name)
                return __fn(*a, **k)
            monkeypatch.setattr(Warehouse, name, wrapper)
    return calls


@pytest.fixture(scope="module")
def nights(tmp_path_factory) -> list[Path]:
    from warehouse.capture.synthetic import nightly_series
    folder = tmp_path_factory.mktemp("nights")
    return list(nightly_series(cases()["dlv3_same"], folder, 9, noise=0.02, slow={7: ("Conv", 1.3)}, seed=2))


def test_every_cli_command_goes_through_the_warehouse(tmp_path, nights, recorded, monkeypatch):
    url = str(tmp_path / "w.db")
    wh = make_invoke(url)
    import uvicorn
    monkeypatch.setattr(uvicorn.Server, "run", lambda *a, **k: None)  # serve: build the app, do not listen
    mcpserver = pytest.importorskip("mcp.server.mcpserver")
    monkeypatch.setattr(mcpserver.MCPServer, "run", lambda *a, **k: None)  # mcp: build the server, do not serve
    # one real invocation per command (a command added without one here fails the first assertion)
    runs = [("ingest", *nights, "--label", "m"), ("runs",), ("export", "1", "-o", tmp_path / "x.csv"),
            ("report", "1", "-q"), ("perf", "1"), ("compare", "1", "2", "--by", "block"),
            ("regressions", "--label", "m"), ("changes", "--label", "m"), ("trend", "--label", "m"),
            ("tag", "1", "--tag", "k=v"), ("sql", "SELECT COUNT(*) AS n FROM run"), ("schema",),
            ("copy", "--from", url, "--to", tmp_path / "other.db", "1"), ("check",), ("db upgrade",),
            ("db current",), ("db check",), ("db create-reader", "reader"), ("serve",), ("mcp",),
            ("triage",), ("ranks", "1", "2"), ("rm", "9", "--yes")]
    assert sorted(r[0] for r in runs) == sorted(_commands())
    for cmd, *args in runs:
        recorded.clear()
        r = wh(*cmd.split(), *args)
        # (regressions exits 3 on the slowed night; create-reader is PostgreSQL's: a usage error here)
        assert r.exit_code in (0, 2, 3) and "Traceback" not in r.output, (cmd, r.output)
        assert recorded and set(recorded) - {"__init__"} or cmd in ("serve", "mcp"), (cmd, recorded)
        assert "__init__" in recorded, cmd
    assert recorded  # (serve made its Warehouse)


def test_every_dashboard_route_goes_through_the_warehouse(tmp_path, nights, recorded):
    pytest.importorskip("starlette")
    from starlette.routing import Mount
    from starlette.testclient import TestClient

    from warehouse.web.app import create_app
    url = str(tmp_path / "w.db")
    assert make_invoke(url)("ingest", *nights, "--label", "m").exit_code == 0
    app = create_app(url)
    paths = {"runs": "/", "run": "/runs/2", "report": "/runs/2/report.json", "export": "/runs/2/export.csv",
             "trace": "/runs/2/trace.json", "timeline": "/runs/2/timeline",
             "perf": "/runs/2/perf.csv", "compare": "/compare?a=1&b=2", "regressions": "/regressions?label=m",
             "changes": "/changes?label=m", "farm": "/farm", "trend": "/trend?label=m",
             "sql": "/sql?q=SELECT+1+AS+x"}
    routes = [r.name for r in app.routes if not isinstance(r, Mount)]
    assert sorted(routes) == sorted(paths)
    client = TestClient(app, base_url="http://127.0.0.1")
    for name, path in paths.items():
        recorded.clear()
        r = client.get(path)
        assert r.status_code == 200, (name, r.text[:300])
        assert set(recorded) - {"__init__"}, (name, recorded)


def test_results_are_typed_and_print_their_json(tmp_path, nights):
    from warehouse import Warehouse
    from warehouse.history.compare import Comparison
    from warehouse.history.gate import Gate
    from warehouse.history.trend import Trend
    url = str(tmp_path / "w.db")
    wh = Warehouse(url)
    done = wh.ingest(nights, label="m")
    assert all(dataclasses.is_dataclass(o) and o.run_id for o in done)
    inv = make_invoke(url)
    for res, cmd, kind in [(wh.compare(1, 2, by="block"), ("compare", "1", "2", "--by", "block"), Comparison),
                           (wh.regressions(label="m"), ("regressions", "--label", "m"), Gate),
                           (wh.trend(label="m", last=30), ("trend", "--label", "m"), Trend)]:
        assert isinstance(res, kind) and dataclasses.is_dataclass(res)
        printed = json.loads(inv(*cmd, "--format", "json").stdout)
        assert json.loads(json.dumps(res.to_json())) == printed, cmd
    assert wh.regressions(label="m").regressed  # (night 7 slowed every conv by 30 %)


def test_errors_name_the_api_parameters_and_the_cli_its_flags(tmp_path):
    from warehouse import Warehouse
    from warehouse.errors import NotFound
    url = str(tmp_path / "w.db")
    Warehouse(url).ingest(cases()["dlv3_same"])
    with pytest.raises(NotFound) as e:
        Warehouse(url).compare(1, 1, section="nosuch")
    assert str(e.value).startswith("section 'nosuch': no such section") and e.value.param == "section"
    r = make_invoke(url)("compare", "1", "1", "--section", "nosuch")
    assert r.exit_code == 2 and r.output.startswith("Error: --section 'nosuch': no such section"), r.output
    with pytest.raises(Exception) as e2:
        Warehouse(url).ingest(cases()["dlv3_same"], freq_mhz=-3)
    assert str(e2.value).startswith("freq_mhz -3")
    r = make_invoke(url)("ingest", cases()["dlv3_same"], "--freq-mhz", "-3")
    assert r.exit_code == 2 and "Error: --freq-mhz -3" in r.output, r.output


def test_back_end_differences_live_in_dialect():
    """No business module tests the back end's name: it asks warehouse.store.dialect (db.py builds engines, and
    query.py holds the SQL guard's SQLite half, by design); migration-only code is in migrations/legacy.py."""
    import re
    allowed = {"dialect.py", "db.py", "query.py"}
    pattern = re.compile(r"\.dialect\.name\b|get_backend_name\(\)|dialect\.name\(conn\) == ")
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "warehouse").rglob("*.py"))
             if p.name not in allowed and "migrations" not in p.parts
             for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not found, found
    legacy_names = ("ROW_CELLS_V7", "backfill_v8", "reencode_cells", "iter_legacy_rows", "to_chunks")
    live = [f"{p.relative_to(ROOT)}: {n}" for p in sorted((ROOT / "warehouse").rglob("*.py"))
            if "migrations" not in p.parts for n in legacy_names if re.search(rf"\b{n}\b", p.read_text())]
    assert not live, live
