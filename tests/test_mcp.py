"""`warehouse mcp`: the agent server, started as a subprocess and driven through the MCP SDK's own client over
stdio, on both back ends: its tools, bounded answers, refusals, and triage only when allowed."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import BACKENDS, _new_url, make_invoke

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from warehouse.mcp import MAX_BYTES  # noqa: E402

HERE = Path(__file__).resolve().parent
DLV3 = HERE / "data/seedfmt/dlv3_same/ops_perf_results_2026_11_01_02_00_00.csv"
WAREHOUSE = Path(sys.executable).parent / "warehouse"


@pytest.fixture(scope="module", params=BACKENDS)
def url(request, tmp_path_factory, generated):
    """16 nights of dlv3 with stage2.block0 8 % slower from night 10 (label ``dlv3``)."""
    folder = tmp_path_factory.mktemp("mcp")
    gen = _new_url(request.param, folder)
    u = next(gen)
    h = generated("mkhistory", DLV3, "--nights", "16", "--seed", "5", "--step", "block:stage2.block0:10:1.08")
    assert make_invoke(u)("ingest", h, "--label", "dlv3").exit_code == 0
    yield u
    for _ in gen:
        pass


def _session(url: str, *extra: str):
    """The answers of a scripted session: a list of (tool, arguments, is_error, text)."""
    calls: list[tuple[str, dict]] = []

    async def run(script):
        params = StdioServerParameters(command=str(WAREHOUSE), args=["--db", url, "mcp", *extra])
        out = []
        async with Client(params) as c:
            tools = [t.name for t in (await c.list_tools()).tools]
            out.append(("list_tools", {}, False, json.dumps(tools)))
            for name, args in script:
                r = await c.call_tool(name, args)
                out.append((name, args, bool(r.is_error), r.content[0].text))
        return out
    return calls, run


def test_tools_answers_and_refusals(url):
    _, run = _session(url)
    script = [("inventory", {}), ("inventory", {"run": "latest"}), ("changes", {"label": "dlv3"}),
              ("perf_table", {"run": "latest"}), ("gate", {"label": "dlv3"}),
              ("sql", {"query": "SELECT id, label FROM run ORDER BY id"}),
              ("sql", {"query": "DELETE FROM run"}), ("triage", {"ident": "c-000000000000", "status": "expected"})]
    out = anyio.run(run, script)
    tools = json.loads(out[0][3])
    assert {"inventory", "run_summary", "perf_table", "compare_runs", "changes", "gate", "trend", "sql",
            "triage"} <= set(tools)
    for name, _args, _err, text in out:
        assert len(text.encode()) <= MAX_BYTES, name
    inv = json.loads(out[1][3])
    assert inv["runs"] == 16 and inv["labels"]["items"][0]["label"] == "dlv3"
    run_inv = json.loads(out[2][3])
    assert run_inv["ops"] > 0 and {s["name"] for s in run_inv["sections"]} >= {"eager"}
    changes = json.loads(out[3][3])
    steps = [c for c in changes["changes"]["items"] if c["key"] == "stage2.block0"]
    assert steps and steps[0]["time"].startswith("2026-10-10") and steps[0]["kind"] == "step", changes
    assert "us per iteration" in changes["units"]
    perf = json.loads(out[4][3])
    assert len(perf["rows"]["items"]) == 10 and "more" in perf["rows"] and "Advice" in perf["rows"]["items"][0]
    gate = json.loads(out[5][3])
    assert "regressed" in gate and gate["checked"][0]["series_judged"] > 0
    rows = json.loads(out[6][3])
    assert rows["columns"] == ["id", "label"] and len(rows["rows"]) == 10 and "more" in rows
    assert out[7][2] and "refused" in out[7][3]  # a write
    assert out[8][2] and "--allow-triage" in out[8][3]  # triage without the flag


def test_triage_with_the_flag(url):
    _, run = _session(url, "--allow-triage", "--dashboard-url", "http://perf.example:8000")
    out = anyio.run(run, [("changes", {"label": "dlv3"})])
    changes = json.loads(out[1][3])
    assert changes["link"] == "http://perf.example:8000/changes?label=dlv3"
    ident = changes["changes"]["items"][0]["id"]
    out = anyio.run(run, [("triage", {"ident": ident, "status": "acknowledged", "note": "bigger tiles",
                                     "label": "dlv3"})])
    assert not out[1][2], out[1][3]
    assert ident in out[1][3] and "acknowledged" in out[1][3]
