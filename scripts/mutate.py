#!/usr/bin/env python3
"""Mutation check: apply each mutation that once passed the whole suite to a copy of the tree, run the tests that
should see it, and say whether they did (killed) or not (survived).

    python scripts/mutate.py [--only NAME ...] [--jobs N] [--list]

Each mutation is an exact text replacement in one file (it must match once); the copy is the working tree's
tracked files (`git ls-files`), so uncommitted edits are checked too. A mutation is killed only when every test named
for it ran (a test not found, deselected or skipped is no witness) and at least one of them failed; the verdicts
read pytest's JUnit report, never its exit status alone (exit 5, "no tests ran", is not a kill). Mutants run
``--jobs`` at a time (default: one per core), each in its own copy, printed in the list's order. Exit 1 when a
mutation survives, its tests did not run, or it no longer applies (the code moved: update its text here). CI runs
this after the whole suite has passed on the unmutated tree.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Mutation:
    name: str
    path: str
    old: str
    new: str
    tests: list[str]


# the two histories where a hiccup once moved a step by a night (tests/test_changes.py)
HICCUP_HISTORIES = [f"tests/test_changes.py::test_changes_name_every_step_and_nothing_else[sqlite-{h}]"
                    for h in ("hiccup_before_step", "eager_a_night_early")]

MUTATIONS = [
    Mutation("bound-threshold-66", "warehouse/capture/perffacts.py", "BOUND_PCT = 65", "BOUND_PCT = 66",
             ["tests/test_mutants.py::test_bound_is_at_or_above_65_percent"]),
    Mutation("sqlite-read-only-without-mode-ro", "warehouse/store/db.py", '?mode=ro"', '?mode=rwc"',
             ["tests/test_mutants.py::test_a_read_only_sqlite_engine_cannot_write",
              "tests/test_mutants.py::test_warehouse_sql_cannot_write_even_without_the_guard"]),
    Mutation("sql-command-opens-read-write", "warehouse/api.py",
             "with stream_sql(self._reader(), statement,", "with stream_sql(self._writer(), statement,",
             ["tests/test_friction.py::test_reads_never_write_sqlite"]),
    Mutation("api-reads-open-read-write", "warehouse/api.py",
             'open_db(self.url, create=False, readonly=True)', 'open_db(self.url, create=False)',
             ["tests/test_friction.py::test_reads_never_write_sqlite"]),
    Mutation("gate-z-tenfold", "warehouse/history/judge.py", "Z_GATE = 5.0", "Z_GATE = 50.0",
             ["tests/test_mutants.py::test_a_near_threshold_regression_is_found"]),
    Mutation("runs-page-until-by-time", "warehouse/web/app.py",
             "r.time[:10] <= until", "r.time <= until",
             ["tests/test_mutants.py::test_the_runs_page_date_filter_is_inclusive"]),
    Mutation("runs-page-until-exclusive", "warehouse/web/app.py",
             "r.time[:10] <= until", "r.time[:10] < until",
             ["tests/test_mutants.py::test_the_runs_page_date_filter_is_inclusive"]),
    Mutation("changes-night-from-one-detection", "warehouse/history/changes.py",
             "votes[d.night] += d.z", "votes[d.night] = max(votes[d.night], d.z)",
             HICCUP_HISTORIES),
    Mutation("changes-no-pair-series", "warehouse/history/changes.py", "PAIRS_SEEN = 3 ", "PAIRS_SEEN = 10 ** 9 ",
             HICCUP_HISTORIES),
    Mutation("report-post-glue-counted", "warehouse/analysis/reportscan.py", "if lay and not is_post(lay):",
             "if lay:", ["tests/test_report.py::test_report_matches_oracle[sqlite-dlv3_postmatmul]"]),
    Mutation("view-post-glue-counted", "warehouse/store/views.py",
             "AND layer <> '' AND __NOT_POST__", "AND layer <> ''",
             ["tests/test_report.py::test_views_equal_the_oracle[sqlite-dlv3_postmatmul]"]),
    Mutation("alignment-confirmed-by-one-op", "warehouse/capture/alignment.py", "CONFIRM = 3 ", "CONFIRM = 1 ",
             ["tests/test_align.py::test_alignment_attributes_drifted_traces_against_a_ground_truth"]),
    Mutation("changes-sections-not-combined", "warehouse/history/fdr.py", "TWO_SECTIONS_MARGIN = 1.0",
             "TWO_SECTIONS_MARGIN = 0.0",
             ["tests/test_changes.py::test_changes_name_every_step_and_nothing_else[sqlite-farm_block_step]"]),
    Mutation("gate-far-never", "warehouse/history/judge.py", "FAR = 2.0 ", "FAR = 200.0 ",
             ["tests/test_gate_hiccups.py::test_a_move_far_beyond_its_noise_blocks_where_nothing_can_corroborate"
              "[sqlite]"]),
    Mutation("gate-sections-never-agree", "warehouse/history/evidence.py",
             "and z >= CORROBORATE)", "and z >= 1e9 * CORROBORATE)",
             ["tests/test_gate_hiccups.py::test_a_step_in_eager_and_trace_is_a_regression_on_its_first_night[sqlite]"]),
    Mutation("gate-same-ops-one-op-code", "warehouse/history/gate.py", "SAME_OPS_SLACK_SEVERAL = 0.25 ",
             "SAME_OPS_SLACK_SEVERAL = 0.10 ",
             ["tests/test_gate_hiccups.py::test_a_step_in_eager_and_trace_is_a_regression_on_its_first_night[sqlite]"]),
    Mutation("series-store-one-scale", "warehouse/store/runseries.py",
             "    shown = stored / scale\n", "    shown = stored / 1000.0\n",
             ["tests/test_runseries.py::test_history_reads_the_views_figures[sqlite]"]),
    Mutation("changes-key-moved-with-the-level", "warehouse/history/levels.py",
             "    return bool(not math.isfinite(move) or move * want > 0 and abs(move) >= abs(want))\n",
             "    return True\n",
             ["tests/test_changes.py::test_changes_name_every_step_and_nothing_else[sqlite-drift]"]),
    Mutation("perf-sub-device-busy-summed", "warehouse/analysis/perf.py",
             "        busy, summed = table.sub_busy.get((dev, sub), (0.0, 0.0))\n",
             "        summed = table.sub_busy.get((dev, sub), (0.0, 0.0))[1]\n        busy = summed\n",
             ["tests/test_perf.py::test_a_partitioned_grid_gets_totals_per_sub_device[sqlite]"]),
    Mutation("perf-ranks-not-rebased", "warehouse/analysis/perf.py",
             "                r.device = r.device + k * (per_run or 0)\n", "                r.device = r.device\n",
             ["tests/test_ranks.py::test_ranks_read_together_equal_tt_perf_report[sqlite-deepseek_2ranks]"]),
    Mutation("gate-window-mixes-ranks", "warehouse/history/select.py",
             "                and self.rank.get(r) == mine]\n", "                ]\n",
             ["tests/test_ranks.py::"
              "test_the_gate_judges_each_rank_against_its_own_nights_and_each_capture_whole[sqlite]"]),
    Mutation("interning-inside-the-file-transaction", "warehouse/store/dialect.py",
             '    return name(conn) == "postgresql"\n', "    return False\n",
             ["tests/test_interning.py::test_an_open_ingest_never_holds_the_values_it_interned"]),
    Mutation("changes-ranks-in-one-history", "warehouse/history/select.py",
             "        if len(by_rank) < 2:\n            return []\n", "        if True:\n            return []\n",
             ["tests/test_ranks.py::test_changes_judge_each_rank_and_the_whole_capture[sqlite]"]),
    Mutation("whole-capture-not-summed", "warehouse/history/wholecapture.py",
             "np.where(np.isnan(v), got, got + v))", "np.where(np.isnan(v), got, np.fmax(got, v)))",
             ["tests/test_ranks.py::test_a_whole_capture_night_is_its_ranks_merged[sqlite]"]),
    Mutation("export-quotes-unchecked", "warehouse/capture/csvfile.py",
             "line.count(\",\") != commas or '\"' in line or", "line.count(\",\") != commas or",
             ["tests/test_export.py::test_rows_are_written_as_the_csv_module_writes_them[lf]"]),
    Mutation("new-warehouse-made-in-process", "warehouse/store/db.py",
             "    if _seen_by_a_new_connection(url) and can_fork():", "    if False:",
             ["tests/test_migrations.py::test_a_new_warehouse_is_created_in_a_fork_that_loads_alembic_for_it"]),
]


def _copy_tree(dst: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in files.decode().split("\0"):
        if rel and (ROOT / rel).is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dst / rel)


def verdict(junit: Path, tests: list[str]) -> str:
    """'killed' when every named test ran (a case of it, not skipped) and one failed; 'not run' when one did not
    run; else 'survived'. A named test is ``path::function`` (all its parameter cases) or one case ``...[id]``."""
    cases = []
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            outcome = ("skipped" if case.find("skipped") is not None else
                       "failed" if case.find("failure") is not None or case.find("error") is not None else "passed")
            cases.append((case.get("classname", ""), case.get("name", ""), outcome))
    failed = False
    for test in tests:
        path, _, name = test.partition("::")
        module = path.removesuffix(".py").replace("/", ".")
        mine = [o for c, n, o in cases if c == module and (n == name or ("[" not in name and n.startswith(name + "[")))]
        if not [o for o in mine if o != "skipped"]:
            return "not run"
        failed |= "failed" in mine
    return "killed" if failed else "survived"


def run(m: Mutation) -> str:
    """'killed', 'survived', 'not run' (a named test did not run) or 'stale' (its text no longer matches once)."""
    with tempfile.TemporaryDirectory(prefix="wh-mutant-") as tmp:
        tree = Path(tmp)
        _copy_tree(tree)
        target = tree / m.path
        src = target.read_text()
        if src.count(m.old) != 1:
            return "stale"
        target.write_text(src.replace(m.old, m.new))
        env = {**os.environ, "PYTHONPATH": str(tree)}  # the copy's package, before the installed one
        junit = tree / "mutant-junit.xml"
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                        *m.tests], cwd=tree, env=env, capture_output=True, text=True)
        return verdict(junit, m.tests)


def _timed(m: Mutation) -> tuple[str, float]:
    t0 = time.perf_counter()
    return run(m), time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="only these mutations (names)")
    ap.add_argument("--list", action="store_true", help="list the mutations and stop")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutants run at once (default: cores)")
    a = ap.parse_args()
    chosen = [m for m in MUTATIONS if not a.only or m.name in a.only]
    if a.list:
        for m in chosen:
            print(f"{m.name:36} {m.path}")
        return 0
    bad = 0
    # Each mutant is a pytest process of its own in a copy of its own (PostgreSQL tests name their databases
    # uniquely), so they can run side by side: threads only wait on those processes.
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for m, (verdict, took) in zip(chosen, pool.map(_timed, chosen)):
            bad += verdict != "killed"
            print(f"{m.name:36} {verdict:8} {took:6.1f} s", flush=True)
    print(f"{len(chosen) - bad} of {len(chosen)} killed")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
