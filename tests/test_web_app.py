"""The dashboard in process (Starlette's TestClient) and over a real server: every route with hostile parameters
answers 200, 400 or 404 and never a traceback; a slow /sql does not hold the other pages; the export download is
streamed from a verified spool, byte-identical to `warehouse export`."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from starlette.routing import Route

from conftest import BACKENDS, _new_url, make_invoke
from corpus import cases

MKSERIES = Path(__file__).parent / "mkseries.py"

# every route's query parameters; the test fails when a route is added without its entry here
PARAMS: dict[str, list[str]] = {
    "/": ["label", "tag", "since", "until", "format"],
    "/runs/{run}": ["format"],
    "/runs/{run}/report.{kind:str}": [],
    "/runs/{run}/export.csv": [],
    "/runs/{run}/perf.csv": [],
    "/runs/{run}/trace.json": [],
    "/runs/{run}/timeline": ["format", "row"],
    "/compare": ["a", "b", "by", "section", "metric", "format"],
    "/regressions": ["label", "format"],
    "/changes": ["label", "since", "until", "format"],
    "/farm": [],
    "/trend": ["label", "by", "key", "metric", "section", "top", "last", "format"],
    "/sql": ["q", "format"],
}
HOSTILE = ["", "abc", "-1", "0", "1.5", "99999999999999999999", "\u0661", "'; DROP TABLE run; --", "%00", "all",
           "latest", "2026-13-45", "x" * 300]
PATH_VALUES = {"run": ["1", "latest", "abc", "-1", "999999", "99999999999999999999"], "kind:str": ["json", "md", "x"]}


@pytest.fixture(scope="module", params=BACKENDS)
def site(request, tmp_path_factory):
    """A 9-night series (the last night's stage6.block1 30 % slower) and the app over it."""
    folder = tmp_path_factory.mktemp("webapp")
    gen = _new_url(request.param, folder)
    url = next(gen)
    wh = make_invoke(url)
    subprocess.run([sys.executable, str(MKSERIES), str(cases()["clip_replays3"]), str(folder / "n"), "--runs", "9",
                    "--seed", "3", "--slow-block", "stage6.block1"], check=True, capture_output=True)
    assert wh("ingest", folder / "n", "--label", "clip").exit_code == 0
    assert wh("ingest", cases()["ttperfreport__bh20_oft_integral_image_trace"], "--label", "plain").exit_code == 0
    from warehouse.web.app import create_app
    yield create_app(url), wh, url, folder
    for _ in gen:
        pass


def _paths(template: str) -> list[str]:
    out = [template]
    for name, values in PATH_VALUES.items():
        if "{" + name + "}" in template:
            out = [p.replace("{" + name + "}", v) for p in out for v in values]
    return out


@pytest.mark.slow  # (every page with every hostile parameter: the slow tier)
def test_no_parameter_gives_a_500(site):
    from starlette.testclient import TestClient
    app, *_ = site
    routes = [r.path for r in app.routes if isinstance(r, Route)]
    assert sorted(routes) == sorted(PARAMS), "a route without its PARAMS entry"
    client = TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)
    tried = 0
    for template, names in PARAMS.items():
        for path in _paths(template):
            cases_ = [{}] + [{n: v} for n in names for v in HOSTILE]
            if "a" in names:  # compare: both runs given, the rest hostile
                cases_ += [{"a": "1", "b": "9", n: v} for n in names if n not in "ab" for v in HOSTILE]
            if template == "/trend":
                cases_ += [{"label": "clip", n: v} for n in names for v in HOSTILE]
            for params in cases_:
                r = client.get(path, params=params)
                tried += 1
                assert r.status_code in (200, 400, 404), (path, params, r.status_code, r.text[:300])
                assert "Traceback" not in r.text, (path, params)
    assert tried > 500


def test_bad_parameters_say_what_is_wrong(site):
    from starlette.testclient import TestClient
    app, *_ = site
    client = TestClient(app, base_url="http://127.0.0.1")
    for path, params, words in [
            ("/trend", {"top": "abc"}, "top='abc'"), ("/trend", {"metric": "bogus"}, "metric='bogus'"),
            ("/trend", {"last": "x"}, "last='x'"), ("/compare", {"a": "1", "b": "2", "metric": "bogus"}, "kernel"),
            ("/changes", {"label": "clip", "since": "yesterday"}, "YYYY-MM-DD"), ("/runs/abc", {}, "run id")]:
        r = client.get(path, params={**params, "format": "json"})
        assert r.status_code == 400 and words in r.json()["error"], (path, r.text)
    assert client.get("/runs/999999", params={"format": "json"}).status_code == 404


def test_export_download_is_the_verified_file(site, tmp_path):
    from starlette.testclient import TestClient
    app, wh, url, folder = site
    client = TestClient(app, base_url="http://127.0.0.1")
    r = client.get("/runs/9/export.csv")
    assert r.status_code == 200 and r.headers["content-length"] == str(len(r.content))
    assert wh("export", "9", "-o", tmp_path / "e.csv").exit_code == 0
    assert r.content == (tmp_path / "e.csv").read_bytes() == sorted(folder.glob("n/*.csv"))[-1].read_bytes()


def test_a_slow_query_does_not_hold_the_other_pages(site):
    """While one /sql runs for seconds, the runs page is served (endpoints run in a thread pool, not on the event
    loop): the runs page's answer arrives before the slow query's."""
    uvicorn = pytest.importorskip("uvicorn")
    app, *_ = site
    with socket_free() as port:
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port}"
        slow_sql = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 12000000) "
                    "SELECT COUNT(*) FROM c") if not str(app.state.warehouse.url).startswith("postgresql") else \
            "SELECT COUNT(*) FROM generate_series(1, 60000000)"
        done: dict[str, float] = {}

        def slow() -> None:
            q = urllib.parse.quote(slow_sql)
            try:
                urllib.request.urlopen(f"{base}/sql?q={q}&format=json", timeout=60).read()
            except urllib.error.HTTPError:  # (its 10 s limit on a loaded machine: it was slow all the same)
                pass
            done["slow"] = time.monotonic()
        t = threading.Thread(target=slow)
        t.start()
        time.sleep(0.5)  # the slow query is under way
        assert "slow" not in done, "the slow query was not slow: make it longer"
        body = urllib.request.urlopen(f"{base}/?format=json", timeout=60).read()
        done["runs"] = time.monotonic()
        t.join()
        server.should_exit = True
        thread.join(timeout=10)
    assert b'"runs"' in body
    assert done["runs"] < done["slow"], "the runs page waited for the slow query"


class socket_free:
    """A free local port (context manager)."""

    def __enter__(self) -> int:
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def __exit__(self, *exc: object) -> None:
        return None


def test_the_run_page_links_its_neighbours_perf_table_and_trends(site, tmp_path):
    from starlette.testclient import TestClient
    app, wh, *_ = site
    client = TestClient(app, base_url="http://127.0.0.1")
    html = client.get("/runs/5").text
    for link in ('href="/runs/4" id="previous"', 'href="/runs/6" id="next"', 'href="/compare?a=4&amp;b=5&amp;by=block"',
                 'href="/trend?label=clip&amp;by=block&amp;last=0"', 'href="/changes?label=clip"',
                 'href="/runs/5/perf.csv"'):
        assert link in html, link
    assert 'id="previous"' not in client.get("/runs/1").text and 'id="next"' not in client.get("/runs/9").text
    r = client.get("/runs/5/perf.csv")
    assert wh("perf", "5", "--csv", tmp_path / "p.csv").exit_code == 0
    assert r.status_code == 200 and r.text == (tmp_path / "p.csv").read_text()
    plain = client.get("/runs/10").text  # a capture without sections says why its report tables are empty
    assert 'id="no-sections"' in plain and "eager's op sequence" not in plain and "None" not in plain
    assert 'id="no-sections"' not in html and "eager's op sequence" in html
