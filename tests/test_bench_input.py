"""The bench measures what users have: every row of its input distinct (issue 26), not the corpus repeated."""
from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _bench():
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows(path: Path) -> list[tuple[str, ...]]:
    with open(path, newline="") as f:
        return [tuple(r) for r in list(csv.reader(f))[1:]]


@pytest.mark.parametrize("source", ["dlv3", "oft"])
def test_every_row_of_the_bench_input_is_distinct(tmp_path, source):
    bench = _bench()
    path = bench.realistic_csv(bench.BENCH_SOURCES[source], tmp_path, 3000)
    rows = _rows(path)
    assert len(rows) > 3000
    assert len(set(rows)) == len(rows)
    # ...op rows included, their call counts and cycles too: not only the signposts differ
    assert 2900 <= bench.op_rows(path) <= 3100
    with open(path, newline="") as f:
        header = next(csv.reader(f))
    kind, cycle = header.index("OP TYPE"), header.index("DEVICE FW START CYCLE")
    ops = [r for r in rows if r[kind] != "signpost" and r[cycle]]
    assert len({r[cycle] for r in ops}) == len(ops)


def test_the_old_repeated_input_would_fail_that(tmp_path):
    """The check above can fail: the repeated-row input the bench used to measure holds each row many times."""
    bench = _bench()
    path = tmp_path / "ops_perf_results_2026_01_01_02_00_00.csv"
    bench.scale_csv(bench.REPEATED_SOURCES["dlv3"], path, 3000)
    rows = _rows(path)
    assert len(set(rows)) * 3 < len(rows)
