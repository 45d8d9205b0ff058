"""The dashboard in a real headless browser (Debian's chromium through Playwright), as a person uses it, on SQLite
and PostgreSQL: the runs, a run's report (numbers equal `report --json`), a comparison, the regressed block named,
its trend drawn with the regression marked, and SQL that cannot write. Screenshots go to $WAREHOUSE_TEST_ARTIFACTS
(default: a temporary folder)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import BACKENDS, _new_url, make_invoke
from corpus import cases

pytestmark = pytest.mark.slow  # (the slow tier: a headless browser)

CHROMIUM = "/usr/bin/chromium"
MKSERIES = Path(__file__).parent / "mkseries.py"
MKHISTORY = Path(__file__).parent / "mkhistory.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module", params=BACKENDS)
def site(request, tmp_path_factory):
    """A warehouse with a 9-night series (the last night's stage6.block1 30 % slower) and the dashboard over it."""
    uvicorn = pytest.importorskip("uvicorn") if not os.environ.get("CI") else __import__("uvicorn")
    from warehouse.web.app import create_app
    folder = tmp_path_factory.mktemp("web")
    gen = _new_url(request.param, folder)
    url = next(gen)
    wh = make_invoke(url)
    subprocess.run([sys.executable, str(MKSERIES), str(cases()["clip_replays3"]), str(folder / "n"), "--runs", "9",
                    "--seed", "3", "--slow-block", "stage6.block1"], check=True, capture_output=True)
    assert wh("ingest", folder / "n", "--label", "clip", "--tag", "branch=main").exit_code == 0
    # a 12-night history whose block stage6.block1 is 10 % slower from night 7 on (2026-10-07)
    subprocess.run([sys.executable, str(MKHISTORY), str(cases()["clip_replays3"]), str(folder / "h"), "--nights",
                    "12", "--seed", "5", "--step", "block:stage6.block1:7:1.10"], check=True, capture_output=True)
    assert wh("ingest", folder / "h", "--label", "hist").exit_code == 0
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(url), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    shots = Path(os.environ.get("WAREHOUSE_TEST_ARTIFACTS") or folder / "screens") / request.param
    shots.mkdir(parents=True, exist_ok=True)
    yield f"http://127.0.0.1:{port}", wh, url, shots
    server.should_exit = True
    thread.join(timeout=10)
    for _ in gen:
        pass


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ModuleNotFoundError:
        if os.environ.get("CI"):
            raise
        pytest.skip("pip install '.[web,webtest]' to run the browser tests (CI always runs them)")
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            raise AssertionError("Debian's chromium is needed (.ci/run installs it)")
        pytest.skip("apt-get install chromium to run the browser tests (CI always runs them)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    pg = browser.new_page(viewport={"width": 1280, "height": 900})
    yield pg
    pg.close()


def _submit(page, button: str) -> None:
    """Click a form's button and wait for the page it loads (a click waits only for the navigation to start: the
    old or a half-parsed page may still be the one read)."""
    with page.expect_navigation():
        page.click(button)


def test_runs_and_a_run_report(site, page, tmp_path):
    base, wh, url, shots = site
    page.goto(base + "/")
    rows = page.locator("#runs tbody tr")
    assert rows.count() == 21  # the 9 nights of clip, the 12 of hist
    assert any("clip" in t and "branch=main" in t for t in rows.all_inner_texts())
    page.screenshot(path=str(shots / "runs.png"))
    page.select_option("select[name=label]", "clip")
    _submit(page, "form.filters button")
    assert page.locator("#runs tbody tr").count() == 9
    newest = page.locator("#runs tbody tr a").first
    run_id = newest.inner_text()
    newest.click()
    assert page.url.endswith(f"/runs/{run_id}")
    shown = page.locator("[data-field='trace.kernel_sum_us']").inner_text()
    assert wh("report", run_id, "--json", tmp_path / "r.json", "-q").exit_code == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert float(shown) == report["trace"]["kernel_sum_us"]
    assert page.locator("text=report JSON").count() == 1
    page.screenshot(path=str(shots / "run.png"))
    # a sortable table: clicking "kernel us" sorts the category table descending on the second click
    table = page.locator("table.group").first
    table.locator("th", has_text="kernel us").click()
    table.locator("th", has_text="kernel us").click()
    vals = [float(t) for t in table.locator("tbody tr td:nth-child(3)").all_inner_texts()]
    assert vals == sorted(vals, reverse=True)
    data = json.loads(page.goto(base + f"/runs/{run_id}?format=json").text())
    assert data["report"]["trace"]["kernel_sum_us"] == report["trace"]["kernel_sum_us"]


def test_a_runs_timeline_draws_every_slice_and_names_an_op(site, page):
    """The run page links the run's timeline; it draws every slice of the Perfetto export (sections, blocks, ops),
    and hovering an op shows its op code and figures."""
    base, wh, url, shots = site
    page.goto(base + "/runs/9")
    page.click("#timeline-page")
    assert page.url.endswith("/runs/9/timeline")
    page.wait_for_selector("#timeline[data-drawn]")
    doc = json.loads(page.request.get(base + "/runs/9/trace.json").text())
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert int(page.locator("#timeline").get_attribute("data-slices")) == len(xs) > 100
    assert int(page.locator("#timeline").get_attribute("data-drawn")) == len(xs)  # (the whole run in view)
    assert "ops on 1 device(s)" in page.locator("#timeline-status").inner_text()
    # an op in the middle of the run, opened by its CSV row (?row=N): in view, and named on hover
    op = [e for e in xs if e.get("cat") == "op"][len(xs) // 4]
    page.goto(base + f"/runs/9/timeline?row={op['args']['row']}")
    page.wait_for_selector("#timeline[data-drawn]")
    assert 0 < int(page.locator("#timeline").get_attribute("data-drawn")) < len(xs)
    i = page.evaluate(f"window.warehouseTimeline.index({op['args']['row']})")
    spot = page.evaluate(f"window.warehouseTimeline.middle({i})")
    assert spot["name"] == op["name"]
    page.mouse.move(spot["x"], spot["y"])
    tip = page.locator("#timeline .tip")
    assert tip.is_visible()
    text = tip.inner_text()
    assert op["name"] in text and f"row: {op['args']['row']}" in text and "kernel_ns" in text
    page.screenshot(path=str(shots / "timeline.png"))
    page.dblclick("#timeline canvas")  # the whole run again
    assert int(page.locator("#timeline").get_attribute("data-drawn")) == len(xs)
    data = json.loads(page.goto(base + "/runs/9/timeline?format=json").text())
    assert data["trace"] == "/runs/9/trace.json" and data["run"]["id"] == 9


def test_compare_regressions_and_trend(site, page):
    base, wh, url, shots = site
    page.goto(base + "/compare?a=1&b=9&by=block")
    assert page.locator("#compare tbody tr").count() > 3
    assert page.locator("#compare tr.worse", has_text="stage6.block1").count() == 1
    page.screenshot(path=str(shots / "compare.png"))
    page.goto(base + "/regressions?label=clip")
    verdict = page.locator("#verdict").inner_text()
    assert int(verdict.split()[0]) >= 1 and "in run 9 (2026-11-09 02:00, clip, branch=main)" in verdict
    link = page.locator("#findings").get_by_role("link", name="stage6.block1", exact=True).first
    assert link.count() == 1
    page.screenshot(path=str(shots / "regressions.png"))
    link.click()
    assert "/trend?" in page.url
    chart = page.locator("#chart svg")
    assert chart.count() == 1 and page.locator("#chart circle").count() == 9
    assert page.locator("#chart circle.regressed").count() >= 1
    title = page.locator("#chart circle.regressed title").first.text_content()
    assert "stage6.block1: run 9, 2026-11-09" in title
    page.screenshot(path=str(shots / "trend.png"))
    page.locator("#chart circle.regressed").first.click()  # a point is a link to its run
    assert page.url.endswith("/runs/9")


def test_changes_page_draws_each_cause_with_its_step(site, page):
    base, wh, url, shots = site
    page.goto(base + "/changes")
    page.select_option("select[name=label]", "hist")
    _submit(page, "form.filters button")
    causes = page.locator("#changes tr.cause")
    assert causes.count() == 1, page.locator("#changes").inner_text()
    row = causes.first.inner_text()
    assert "stage6.block1" in row and "2026-10-07" in row and "new" in row
    cli = json.loads(wh("changes", "--label", "hist", "--format", "json").stdout)["changes"]
    assert [c["id"] for c in cli] == [causes.first.get_attribute("id")]
    assert page.locator("#changes tr.contributor").count() >= 1  # its op codes, nested
    chart = page.locator("section.change svg")
    assert chart.count() == 1 and chart.locator("circle").count() == 12
    assert chart.locator("line.step").count() == 1 and chart.locator("line.level").count() == 2
    step_x = float(chart.locator("line.step").get_attribute("x1"))
    marked = chart.locator("circle.regressed")
    assert marked.count() == 1 and float(marked.get_attribute("cx")) == pytest.approx(step_x, abs=0.2)
    assert f"run {cli[0]['run_id']}" in marked.locator("title").text_content()
    page.screenshot(path=str(shots / "changes.png"), full_page=True)
    # the triage state shows (the dashboard only reads it: recorded through the CLI)
    assert wh("triage", cli[0]["id"], "--status", "expected", "--label", "hist", "--note", "new kernel").exit_code == 0
    page.reload()
    assert "expected" in page.locator("#changes tr.cause").first.inner_text()
    marked = page.locator("section.change svg circle.regressed")
    marked.click()
    assert page.url.endswith(f"/runs/{cli[0]['run_id']}")
    data = json.loads(page.goto(base + "/changes?label=hist&format=json").text())
    assert data["res"]["changes"][0]["triage"] == "expected" and len(data["res"]["changes"][0]["series"]) == 12


def test_regressions_page_is_one_row_per_cause(site, page):
    base, wh, url, shots = site
    page.goto(base + "/regressions?label=clip")
    causes = page.locator("#findings tr.cause")
    cli = json.loads(wh("regressions", "--label", "clip", "--format", "json").stdout)["findings"]
    assert causes.count() == len(cli) == 1, page.locator("#findings").inner_text()
    assert "stage6.block1" in causes.first.inner_text() and causes.first.get_attribute("id") == cli[0]["id"]
    kids = page.locator("#findings tr.contributor")
    assert kids.count() == len(cli[0]["contributors"]) >= 1


def test_sql_reads_and_refuses_writes(site, page):
    base, wh, url, shots = site
    page.goto(base + "/sql")
    page.fill("textarea[name=q]", "SELECT label, COUNT(*) AS runs FROM run GROUP BY label ORDER BY label")
    _submit(page, "form.sql button")
    assert [t.split() for t in page.locator("#result tbody tr").all_inner_texts()] == [["clip", "9"], ["hist", "12"]]
    page.screenshot(path=str(shots / "sql.png"))
    for stmt in ("DELETE FROM op", "UPDATE run SET label = 'x'", "DROP TABLE op"):
        page.goto(base + "/sql")
        page.fill("textarea[name=q]", stmt)
        _submit(page, "form.sql button")
        assert page.locator("#error").count() == 1, stmt
    r = wh("sql", "SELECT COUNT(*) AS n, MIN(label) AS l FROM run", "--format", "csv")
    assert r.stdout.splitlines()[1] == "21,clip"
    csv_text = page.request.get(base + "/sql?q=SELECT+COUNT(*)+AS+n+FROM+run&format=csv").text()
    assert csv_text.splitlines() == ["n", "21"]
