"""A multi-host capture (``tt-run --tracy``: one file per rank) read as tt-perf-report reads the rank files given
together: ``warehouse perf R0 R1`` equals tt-perf-report 1.4.1 on both files (strict: every column, Advice too),
devices merged or not; a rank with another device count is refused, as tt-perf-report refuses it."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from corpus import GOLDEN
from test_perf import EQUAL, TTPERF, _compare
from ttperf_cases import RANKED


def _ingest_ranks(wh, files: list[Path]) -> list[str]:
    ids = []
    for f in files:
        r = wh("ingest", f)
        assert r.exit_code == 0, r.output
        ids.append(r.output.split(": run ")[1].split(":")[0])
    return ids


@pytest.mark.parametrize("name", list(RANKED))
def test_ranks_read_together_equal_tt_perf_report(wh, tmp_path, name):
    files = RANKED[name](tmp_path / name)
    ids = _ingest_ranks(wh, files)
    out = tmp_path / "ours.csv"
    r = wh("perf", *ids, "--csv", out)
    assert r.exit_code == 0, r.output
    res = _compare(GOLDEN / "ttperf" / "ranks" / f"{name}.csv", out)
    assert res.returncode == 0 and EQUAL in res.stdout, res.stdout
    # one rank alone is another table (four devices, not eight): the runs really were read together
    alone = tmp_path / "alone.csv"
    assert wh("perf", ids[0], "--csv", alone).exit_code == 0
    assert _compare(GOLDEN / "ttperf" / "ranks" / f"{name}.csv", alone).returncode == 1
    r = wh("perf", *ids)
    assert r.exit_code == 0 and r.output.startswith(f"runs {', '.join(ids)} read together:"), r.output


@pytest.mark.parametrize("merge", [True, False])
def test_ranks_equal_tt_perf_report_run_here(wh, tmp_path, merge):
    """tt-perf-report itself on the rank files: merged devices, and one row per (re-based) device."""
    if not TTPERF:
        pytest.skip("needs WAREHOUSE_TTPERF, tt-perf-report 1.4.1 in a venv of its own (.ci/run installs it)")
    files = RANKED["deepseek_2ranks"](tmp_path / "ranks")
    flags = [] if merge else ["--no-merge-devices"]
    ref = tmp_path / "ref.csv"
    subprocess.run([TTPERF, *map(str, files), "--ignore-signposts", "--no-summary", "--raw-op-codes", *flags,
                    "--csv", str(ref)], check=True, capture_output=True)
    ids = _ingest_ranks(wh, files)
    out = tmp_path / "ours.csv"
    assert wh("perf", *ids, *flags, "--csv", out).exit_code == 0
    res = _compare(ref, out)
    assert res.returncode == 0 and EQUAL in res.stdout, res.stdout
    if not merge:  # devices 0..7: rank 1's four moved up by four
        devices = {line.split(",")[4] for line in ref.read_text().splitlines()[1:]}
        assert devices == {str(d) for d in range(8)}


def test_a_rank_with_other_device_count_is_refused(wh, tmp_path):
    files = RANKED["deepseek_2ranks"](tmp_path / "ranks", drop_device=7)
    ids = _ingest_ranks(wh, files)
    r = wh("perf", *ids)
    assert r.exit_code != 0
    assert r.output.strip() == (f"Error: run {ids[1]} reports 3 device(s) (max DEVICE ID 2), expected 4 as run "
                                f"{ids[0]}: runs read together must have as many devices each"), r.output
    r = wh("perf", ids[0], ids[0])
    assert r.exit_code != 0 and r.output.strip() == "Error: a run is named twice: name each rank's run once"
