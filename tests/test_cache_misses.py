"""The newest measures in history: program-cache misses (the ops whose PROGRAM CACHE HIT is 0, per iteration) and
the trace's kernel and firmware durations (DEVICE TRACE KERNEL / FIRMWARE DURATION [ns], which tt-metal's
post-processor writes for traced ops): `trend` reads them per key and night, and `changes` names the night from which
more programs are built, or the traced kernels are slower, as a change for the worse."""
from __future__ import annotations

import shutil
import json
from pathlib import Path

import pytest

from conftest import BACKENDS, _new_url, make_invoke
from csvedit import TIMES, read_rows, write_rows

HERE = Path(__file__).parent
DEEPSEEK = HERE / "data/ttperf_extra/bh_8xp150_deepseek_v3_d_p.csv"  # 208 ops on 8 devices, PROGRAM CACHE HIT


TRACE_COLUMNS = ("DEVICE TRACE KERNEL DURATION [ns]", "DEVICE TRACE FIRMWARE DURATION [ns]")


def _misses(path: Path, built: int, traced: float) -> None:
    """The file with its first ``built`` ops' programs built (PROGRAM CACHE HIT False), the rest from the cache, and
    the trace's durations added: the kernel and FW durations times ``traced``."""
    rows = read_rows(path)
    for i, r in enumerate(rows):
        r["PROGRAM CACHE HIT"] = "False" if i < built else "True"
        for new, old in zip(TRACE_COLUMNS, TIMES):
            r[new] = f"{float(r[old]) * traced:.0f}"
    write_rows(path, rows)


@pytest.fixture(scope="module", params=BACKENDS)
def misses(request, tmp_path_factory, generated):
    """Twelve nights: 8 programs built a night, then 48 from night 7 on; the traced kernels 20 % slower from
    night 7 on."""
    folder = tmp_path_factory.mktemp("misses")
    gen = _new_url(request.param, folder)
    wh = make_invoke(next(gen))
    shutil.copytree(generated("mkhistory", DEEPSEEK, "--nights", "12", "--seed", "81", "--outliers", "0"), folder / "n")
    for n, f in enumerate(sorted((folder / "n").glob("*.csv")), 1):
        _misses(f, 8 if n < 7 else 48, 1.0 if n < 7 else 1.2)
    assert wh("ingest", folder / "n", "--label", "misses").exit_code == 0
    yield wh
    for _ in gen:
        pass


def test_trend_reads_the_misses(misses):
    doc = json.loads(misses("trend", "--label", "misses", "--by", "section", "--metric", "cache_misses",
                            "--format", "json").stdout)
    values = next(iter(doc["values"].values()))
    assert values == [8.0] * 6 + [48.0] * 6, doc


def test_changes_names_the_night_more_programs_are_built(misses):
    r = misses("changes", "--label", "misses", "--metric", "cache_misses", "--format", "json")
    assert r.exit_code == 0, r.output
    found = [c for c in json.loads(r.stdout)["changes"] if "cache_misses" in c["metrics"]]
    assert found and all(c["time"][:10] == "2026-10-07" and c["worse"] for c in found), found
    # (one cause: every device builds more; inside it the capture's total, 8 -> 48 a night, and the op codes whose
    # programs started being built, 0 -> 8 each)
    (cause,) = found
    inside = {(k["by"], k["key"]): (k.get("before"), k.get("after")) for k in [cause, *cause["contributors"]]}
    assert inside[("section", "total")] == (8.0, 48.0), inside
    assert sum(1 for (by, _k), ba in inside.items() if by == "op-code" and ba == (0.0, 8.0)) == 4, inside




def test_the_trace_durations_are_metrics(misses):
    doc = json.loads(misses("trend", "--label", "misses", "--by", "section", "--metric", "trace_kernel",
                            "--format", "json").stdout)
    values = next(iter(doc["values"].values()))
    before, after = sum(values[:6]) / 6, sum(values[6:]) / 6
    assert 1.15 < after / before < 1.25, values
    r = misses("changes", "--label", "misses", "--metric", "trace_kernel", "--metric", "trace_fw", "--format",
               "json")
    found = [c for c in json.loads(r.stdout)["changes"] if {"trace_kernel", "trace_fw"} & set(c["metrics"])]
    assert found and found[0]["time"][:10] == "2026-10-07" and found[0]["worse"], found
    assert 15 < found[0]["change_pct"] < 25, found[0]
