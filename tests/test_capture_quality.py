"""A crashed capture never passes the gate: a night cut in eager, inside the trace, inside its last replay, with or
without a partial last row, or with negative durations, is refused by ingest or gives exit 4 with the reason; a trace
that closes properly with fewer replays is a change of set-up (judged per iteration), not a broken capture."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BACKENDS, _new_url, make_invoke
from corpus import DATA

HERE = Path(__file__).parent
CLIP = DATA / "seedfmt" / "clip_replays3" / "reports" / "ops_perf_results_2026_11_04_02_00_00.csv"
NIGHTS = 9


@pytest.fixture(scope="module", params=BACKENDS)
def nights(request, tmp_path_factory, generated):
    """Nine noisy nights of a 3-replay capture, the first eight ingested under label m; yields (invoke, night 9)."""
    folder = tmp_path_factory.mktemp("quality")
    files = sorted(generated("mkhistory", CLIP, "--nights", str(NIGHTS), "--seed", "41").glob("ops_perf_results_*.csv"))
    gen = _new_url(request.param, folder)
    wh = make_invoke(next(gen))
    for f in files[:-1]:
        assert wh("ingest", f, "--label", "m").exit_code == 0
    yield wh, files[-1]
    for _ in gen:
        pass


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


def _cut(src: Path, dst: Path, at: float | None = None, *, before: bytes | None = None, partial: bool) -> Path:
    """``src`` cut at a share of its bytes (or just before the line starting ``before``), with the next line's first
    half left in when ``partial``."""
    data = src.read_bytes()
    k = int(len(data) * at) if at is not None else data.index(b"\n" + (before or b"")) + 1
    k = data.rfind(b"\n", 0, k) + 1  # (a whole line's end)
    out = data[:k]
    if partial:
        nxt = data[k:data.index(b"\n", k)]
        out += nxt[:len(nxt) // 2]
    dst.write_bytes(out)
    return dst


def _replay_start(src: Path, session: int) -> bytes:
    """The first bytes of the first row of trace replay ``session`` (its cells up to the replay id)."""
    lines = _lines(src)
    head = lines[0].decode().split(",")
    col = head.index("METAL TRACE REPLAY SESSION ID")
    for ln in lines[1:]:
        cells = ln.decode(errors="replace").split(",")
        if len(cells) > col and cells[col].strip() == str(session):
            return ln
    raise AssertionError("no such replay")


CUTS = {
    "in eager": dict(at=0.15),
    "in the trace (50 %)": dict(at=0.5),
    "in the trace (90 %)": dict(at=0.9),
    "in the last replay": dict(at=0.97),
    "just before the last replay": "replay",
}


@pytest.mark.parametrize("partial", [False, True], ids=["whole rows", "partial last row"])
@pytest.mark.parametrize("where", list(CUTS))
def test_a_crashed_capture_is_exit_4(nights, tmp_path, where, partial):
    wh, night = nights
    spec = CUTS[where]
    name = night.name
    if spec == "replay":
        cut = _cut(night, tmp_path / name, before=_replay_start(night, 3), partial=partial)
    else:
        cut = _cut(night, tmp_path / name, **spec, partial=partial)
    r = wh("ingest", cut, "--label", "m")
    if r.exit_code != 0:  # refused by ingest: fine, nothing stored
        assert r.exit_code == 1 and "Error:" in r.output, r.output
        return
    run_id = r.output.split(": run ")[1].split(":")[0]
    try:
        g = wh("regressions", "--label", "m")
        assert g.exit_code == 4, (where, g.output)
        doc = json.loads(wh("regressions", "--label", "m", "--format", "json").stdout)
        assert doc["invalid"] and doc["invalid"][0]["run_id"] == int(run_id), doc["invalid"]
        assert doc["invalid"][0]["problems"], doc["invalid"]
        c = wh("changes", "--label", "m")
        assert c.exit_code == 4, c.output
    finally:
        assert wh("rm", "--yes", run_id).exit_code == 0


def test_negative_durations_are_an_invalid_night(nights, tmp_path):
    wh, night = nights
    lines = _lines(night)
    head = lines[0].decode().split(",")
    k = head.index("DEVICE KERNEL DURATION [ns]")
    out = [lines[0]]
    for i, ln in enumerate(lines[1:]):
        cells = ln.decode().split(",")
        if len(cells) > k and cells[k].strip() and i % 3 == 0:
            cells[k] = "-" + cells[k]
        out.append(",".join(cells).encode())
    bad = tmp_path / night.name
    bad.write_bytes(b"\n".join(out))
    r = wh("ingest", bad, "--label", "m")
    assert r.exit_code == 0, r.output
    run_id = r.output.split(": run ")[1].split(":")[0]
    try:
        g = wh("regressions", "--label", "m")
        assert g.exit_code == 4 and "negative kernel durations" in g.output, g.output
    finally:
        assert wh("rm", "--yes", run_id).exit_code == 0


def test_fewer_replays_that_close_properly_are_no_broken_capture(nights, tmp_path):
    """The trace of the night keeps two of its three replays and closes: a change of set-up, judged per
    iteration (no exit 4)."""
    wh, night = nights
    lines = _lines(night)
    head = lines[0].decode().split(",")
    col = head.index("METAL TRACE REPLAY SESSION ID")
    keep = [ln for ln in lines if not (len(c := ln.decode(errors="replace").split(",")) > col
                                       and c[col].strip() == "3")]
    fewer = tmp_path / night.name
    fewer.write_bytes(b"\n".join(keep))
    r = wh("ingest", fewer, "--label", "m")
    assert r.exit_code == 0, r.output
    run_id = r.output.split(": run ")[1].split(":")[0]
    try:
        g = wh("regressions", "--label", "m")
        assert g.exit_code in (0, 3), g.output
        assert "invalid" not in g.output.lower() or "0 invalid" in g.output.lower(), g.output
    finally:
        assert wh("rm", "--yes", run_id).exit_code == 0


def test_a_future_dated_capture_never_freezes_the_history(wh, tmp_path):
    """A file whose name carries a date in the future takes the place of the night it was ingested on: the next real
    night is still the one judged, and every history command says why that run sits where it does."""
    oft = DATA / "seedfmt/oft_mismatch/ops_perf_results_2026_11_02_02_00_00.csv"
    subprocess.run([sys.executable, str(HERE / "mkseries.py"), str(oft), str(tmp_path / "n"), "--runs", "10", "--seed",
                    "3"], check=True, capture_output=True)
    nights = sorted((tmp_path / "n").glob("*.csv"))
    for f in nights[:8]:
        assert wh("ingest", f, "--label", "x").exit_code == 0
    wrong = tmp_path / "ops_perf_results_2027_06_01_02_00_00.csv"
    wrong.write_bytes(nights[8].read_bytes())
    r = wh("ingest", wrong, "--label", "x")
    assert r.exit_code == 0 and "1 warning(s)" in r.output
    bad = int(r.output.split(": run ")[1].split(":")[0])
    r = wh("ingest", nights[9], "--label", "x")
    real = int(r.output.split(": run ")[1].split(":")[0])
    doc = json.loads(wh("regressions", "--label", "x", "--format", "json").stdout)
    assert [c["run_id"] for c in doc["checked"]] == [real]
    assert doc["checked"][0]["window"][-1] == bad  # (the mis-dated night sits where it was ingested)
    assert any(f"run {bad}: the file name's capture time 2027-06-01" in w for w in doc["warnings"]), doc["warnings"]
    r = wh("changes", "--label", "x", "--format", "json")
    assert any(f"run {bad}: the file name's capture time 2027-06-01" in w for w in json.loads(r.stdout)["warnings"])
