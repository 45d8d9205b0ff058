"""`warehouse export RUN --format perfetto`: every corpus capture's timeline follows the trace-event format's rules
(complete events with finite, non-negative times; each track in time order; enclosing tracks never overlap), with one
slice per op that has FW cycles, on both back ends."""
from __future__ import annotations

import json
import math
from collections import defaultdict

import pytest
from sqlalchemy import text

from warehouse.store.db import open_db


@pytest.fixture(scope="module")
def traces(corpus_wh, tmp_path_factory):
    invoke, ids, url = corpus_wh
    folder = tmp_path_factory.mktemp("perfetto")
    out = {}
    for name, run_id in ids.items():
        path = folder / f"{name}.json"
        r = invoke("export", str(run_id), "--format", "perfetto", "-o", path)
        assert r.exit_code == 0, (name, r.output)
        out[name] = (run_id, json.loads(path.read_text()))  # (json: NaN or Infinity would fail the readers)
    return url, out


def follows_the_rules(name: str, doc: dict) -> tuple[list[dict], dict]:
    """The trace-event format's rules on one document: phases known, numbers finite, each track's slices in time
    order and (sections, blocks, op lanes) never overlapping. Its op slices, and the names of its processes and
    threads by (pid, tid)."""
    events = doc["traceEvents"]
    assert doc["displayTimeUnit"] == "ns"
    by_track: dict[tuple, list[dict]] = defaultdict(list)
    for e in events:
        assert e["ph"] in ("M", "X", "i"), (name, e)
        if e["ph"] == "M":
            continue
        assert math.isfinite(e["ts"]) and e["ts"] >= 0, (name, e)
        if e["ph"] == "X":
            assert math.isfinite(e["dur"]) and e["dur"] >= 0, (name, e)
            by_track[(e["pid"], e["tid"])].append(e)
    for track, evs in by_track.items():
        ts = [e["ts"] for e in evs]
        assert ts == sorted(ts), (name, track)
        if track[1] in (0, 1) or evs[0]["cat"] == "op":  # sections, blocks, each op lane: no overlap
            for a, b in zip(evs, evs[1:]):
                assert a["ts"] + a["dur"] <= b["ts"] + 1e-3, (name, track, a, b)
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events if e["name"] in ("process_name",
                                                                                         "thread_name")}
    return [e for e in events if e.get("cat") == "op"], names


def test_every_capture_follows_the_trace_event_rules(traces):
    url, out = traces
    eng = open_db(url, create=False)
    for name, (run_id, doc) in out.items():
        assert doc["otherData"]["run"] == run_id
        ops, names = follows_the_rules(name, doc)
        with eng.connect() as c:
            want = c.execute(text("SELECT COUNT(*) FROM op WHERE run_id = :r AND fw_start_cycle IS NOT NULL AND "
                                  "fw_end_cycle IS NOT NULL"), {"r": run_id}).scalar_one()
            devices = c.execute(text("SELECT COUNT(DISTINCT device_id) FROM op WHERE run_id = :r AND "
                                     "fw_start_cycle IS NOT NULL"), {"r": run_id}).scalar_one()
        assert len(ops) == want, name
        assert len({e["pid"] for e in ops}) == devices and all((e["pid"], None) in names for e in ops), name
        assert all({"op_code", "kernel_ns", "row"} <= set(e["args"]) for e in ops[:50]), name
    eng.dispose()


def test_slices_are_fw_cycles_at_the_chip_frequency(traces):
    url, out = traces
    run_id, doc = next(iter(out.values()))
    eng = open_db(url, create=False)
    with eng.connect() as c:
        freq = c.execute(text("SELECT freq_mhz FROM run WHERE id = :r"), {"r": run_id}).scalar_one()
        row = c.execute(text("SELECT row_no, fw_start_cycle, fw_end_cycle FROM op WHERE run_id = :r AND "
                             "fw_start_cycle IS NOT NULL ORDER BY row_no LIMIT 1"), {"r": run_id}).one()
    eng.dispose()
    op = next(e for e in doc["traceEvents"] if e.get("cat") == "op" and e["args"]["row"] == row.row_no)
    assert op["dur"] == pytest.approx((row.fw_end_cycle - row.fw_start_cycle) / freq, abs=2e-3)


def test_an_unknown_run_is_one_error_line(corpus_wh):
    invoke, _, _ = corpus_wh
    r = invoke("export", "999999", "--format", "perfetto")
    assert r.exit_code == 2 and r.output.startswith("Error: ") and "Traceback" not in r.output


def test_the_dashboard_links_and_serves_the_timeline(corpus_wh):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from warehouse.web.app import create_app
    _, ids, url = corpus_wh
    run_id = next(iter(ids.values()))
    client = TestClient(create_app(url), base_url="http://127.0.0.1")
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200 and f"/runs/{run_id}/trace.json" in page.text
    r = client.get(f"/runs/{run_id}/trace.json")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    assert any(e.get("cat") == "op" for e in r.json()["traceEvents"])
