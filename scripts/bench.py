#!/usr/bin/env python3
"""Benchmarks of the warehouse, each against a reference measured in the same run (this machine is shared and
noisy: ratios, not absolute times, are the targets).

    python scripts/bench.py [--oracle ../shared/oracle/profile_summary.py] [--ops 100000] [--big-ops 1000000]
                            [--runs 1000] [--skip-big] [--out bench-out]

Every input is what a real long capture is (scripts/mkbig.py --unique: the real rows of a corpus capture, each
with its own call count, cycles and host times moving forward and its durations jittered +-2 %, the static cells
repeating as the program's do, sectioned by scripts/seedfmt.py): every row is distinct. Figures 1 and 2 add, on a
labelled second line, the old input that repeats the sectioned corpus case row for row (which flatters interning
and compression). Beside figures 1 and 2, pyarrow's own CSV -> zstd Parquet time and size on the same file.

On two 100,000-op sectioned CSVs, one built from the dlv3 capture (112 columns) and one from bh20_oft (119
columns, heavier cells):
1. ingest time / the sqlite3 shell's `.import` of the same CSV, wall (<= 1.0) and 1c. CPU of every process (<= 1.5)
2. database growth per ingested run / the CSV's size: the first run into an empty warehouse   (<= 0.10)
   2b. the same model's next night (its static cells, places and rollup keys are stored already) (<= 0.08)
4. `warehouse report` time / the oracle's time on the same CSV                                 (<= 0.15)
7. `warehouse perf --csv` time / tt-perf-report 1.4.1's on the same CSV (--tt-perf-report PATH)  (< 1)
13. `warehouse export` (byte-identical) / `zstd -d` of the same CSV compressed at level 3         (<= 5)
Figures measured on processes print their CPU seconds (user + system, every process) beside the wall.
and:
3. peak memory of `warehouse ingest` at 10k, 100k, 300k and 1,000,000 ops (--memory-ops)     (<= 150 MiB)
8. a folder of nightly files: files per minute with `--jobs 2` / with `--jobs 1`                (> 1)
5. history: `regressions` (7-run window) / one `report` of a 20,000-op run                       (<= 0.5)
   `regressions` on 40 runs / on 8 runs (<= 1.5); `trend` over 40 runs / one report (<= 0.5);
   a year, 365 runs of 20,000 ops: `regressions` and `trend` each (< 1 s); in process, the same ratios, and
   against computing a report from the run's ops (the report now reads parts stored at ingest: a constant)
11. `warehouse runs` on the 40-run warehouse, the whole process                                  (<= 0.2 s)
12. the Parquet lake (`export --format parquet`): of the whole corpus, its size per CSV byte (beside the
    warehouse's) and its time per run; of a year of nightlies (365 runs), a first export, then one more night
    exported incrementally (only its files are written) and an export with nothing new
No network; the CSVs are built from the corpus copied into tests/data.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from warehouse.capture.synthetic import scale_csv  # noqa: E402

SECTIONED = ROOT / "tests" / "data" / "seedfmt" / "dlv3_same" / "ops_perf_results_2026_11_01_02_00_00.csv"
OFT = ROOT / "tests" / "data" / "seedfmt" / "oft_mismatch" / "ops_perf_results_2026_11_02_02_00_00.csv"
REAL = ROOT / "tests" / "data" / "real"
BENCH_SOURCES = {"dlv3": REAL / "ttperfreport__bh_p100_dlv3.csv", "oft": REAL / "ttperfreport__bh20_oft.csv"}
REPEATED_SOURCES = {"dlv3": SECTIONED, "oft": OFT}  # the old input (figures 1 and 2, second line)
MKBIG = ROOT / "scripts" / "mkbig.py"
THOUSAND = ROOT / "tests" / "data" / "seedfmt" / "segenc_notrace" / "ops_perf_results_2026_11_03_02_00_00.csv"
WAREHOUSE = [sys.executable, "-m", "warehouse"]


def realistic_csv(real: Path, folder: Path, ops: int, seed: int = 1,
                  name: str = "ops_perf_results_2026_01_01_02_00_00.csv", layout_seed: int | None = None) -> Path:
    """``folder/name``: a sectioned capture of about ``ops`` ops built from the real capture ``real`` as a real
    long capture is (scripts/mkbig.py --unique: every row distinct), with its device log beside it. The same
    ``layout_seed`` with another ``seed`` is the same model on another night."""
    folder.mkdir(parents=True, exist_ok=True)
    layout = [] if layout_seed is None else ["--layout-seed", str(layout_seed)]
    subprocess.run([sys.executable, str(MKBIG), str(real), str(folder), "--ops", str(ops), "--unique",
                    "--seed", str(seed), "--name", name, *layout], check=True, stdout=subprocess.DEVNULL)
    return folder / name


def op_rows(path: Path) -> int:
    """The op rows (not signposts) of a CSV."""
    import csv
    with open(path, newline="") as f:
        rows = csv.reader(f)
        header = next(rows)
        kind = header.index("OP TYPE")
        return sum(1 for r in rows if r[kind] != "signpost")


PARQUET = """
import sys, time
t0 = time.perf_counter()
import pyarrow.csv as pc, pyarrow.parquet as pq
pq.write_table(pc.read_csv(sys.argv[1]), sys.argv[2], compression="zstd")
"""


def parquet_reference(csv_path: Path, out: Path) -> tuple[float, int] | None:
    """pyarrow's own CSV -> zstd Parquet of ``csv_path`` as a process (the time a user would otherwise pay, with
    Python's start-up as ours has), and the Parquet file's size; None without pyarrow (`pip install pyarrow`)."""
    try:
        import pyarrow  # noqa: F401
    except ModuleNotFoundError:
        return None
    dst = out / "reference.parquet"
    secs = min(timed([sys.executable, "-c", PARQUET, str(csv_path), str(dst)])[0] for _ in range(2))
    return secs, dst.stat().st_size


def measured(cmd: list[str], **kw) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system, of the process and every child it waited for: an ingest's
    reading worker and its forks) and peak RSS (KiB) of a child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    _, status, usage = os.wait4(p.pid, 0)  # (the rusage of a reaped child includes its own reaped children)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if p.returncode not in (0, 3):
        raise SystemExit(f"Error: {' '.join(map(str, cmd))} failed ({p.returncode}): {err.strip()[-500:]}")
    return dt, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def timed(cmd: list[str], **kw) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of a child process."""
    wall, _, rss = measured(cmd, **kw)
    return wall, rss


def _tree_pss_kib(pid: int) -> int:
    """Proportional set size of a process and its children (KiB): memory they share (a forked worker's copy of
    its parent's pages) counts once, split between them."""
    total = 0
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(c) for c in f.read().split()]
    except OSError:
        return 0
    for p in [pid, *kids]:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration):
            pass
    return total


def timed_tree(cmd: list[str]) -> tuple[float, int, int]:
    """Wall seconds, the peak of the process tree's summed memory (PSS, sampled every 20 ms, KiB) and the
    largest single process's peak RSS (KiB) of a command that may start worker processes (ingest reads the
    file in one)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while True:
        done, status, usage = os.wait4(p.pid, os.WNOHANG)  # (this child's own usage, not earlier ones')
        if done:
            break
        peak = max(peak, _tree_pss_kib(p.pid))
        time.sleep(0.02)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0, 3):
        raise SystemExit(f"Error: {' '.join(map(str, cmd))} failed ({p.returncode})")
    return dt, peak, usage.ru_maxrss


def best(cmd: list[str], repeat: int, setup=None) -> float:
    """The fastest of ``repeat`` runs (the least disturbed by other work on the machine)."""
    return best_cpu(cmd, repeat, setup)[0]


def best_cpu(cmd: list[str], repeat: int, setup=None) -> tuple[float, float]:
    """The least wall and the least CPU seconds of ``repeat`` runs (each the least disturbed by other work)."""
    walls, cpus = [], []
    for _ in range(repeat):
        if setup:
            setup()
        wall, cpu, _ = measured(cmd)
        walls.append(wall)
        cpus.append(cpu)
    return min(walls), min(cpus)


def db_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def line(name: str, value: str, target: str, ok: bool | None) -> dict:
    verdict = "n/a" if ok is None else ("PASS" if ok else "FAIL")
    print(f"{name:<58} {value:>16}   target {target:<10} {verdict}", flush=True)
    return {"name": name, "value": value, "target": target, "verdict": verdict}


def clone_runs(db: Path, template: int, copies: int, seed: int = 1, ops: bool = True, first: int = 0) -> None:
    """Fill a warehouse with ``copies`` nightly variants of one run straight in SQL (ingesting hundreds of files
    would only measure ingest again): the run, its sections, its ops (kernel times jittered +-2 %) when ``ops``,
    and its rollups (per-iteration figures jittered the same way) with their history series, which are all that
    history reads. ``first``:
    the night of the first copy (more copies into a warehouse that has some)."""
    import sqlite3

    rng = random.Random(seed)
    con = sqlite3.connect(db)
    cols = [r[1] for r in con.execute("PRAGMA table_info(op)") if r[1] not in ("id", "run_id", "section_id",
                                                                              "kernel_ns")]
    run_cols = [r[1] for r in con.execute("PRAGMA table_info(run)") if r[1] not in ("id", "sha256", "captured_at")]
    roll = [r[1] for r in con.execute("PRAGMA table_info(rollup_row)") if r[1] not in ("run_id", "kernel_ns")]
    base = datetime(2025, 1, 1, 2)
    made: list[int] = []
    with con:
        for i in range(copies):
            cur = con.execute(f"INSERT INTO run (sha256, captured_at, {', '.join(run_cols)}) "
                              f"SELECT ?, ?, {', '.join(run_cols)} FROM run WHERE id = ?",
                              (f"bench-{first + i}", base + timedelta(days=first + i), template))
            new = cur.lastrowid
            assert new is not None
            mapping = {}
            for sid, name, kind, ordinal, start, end in con.execute(
                    "SELECT id, name, kind, ordinal, start_row, end_row FROM section WHERE run_id = ?", (template,)):
                mapping[sid] = con.execute("INSERT INTO section (run_id, name, kind, ordinal, start_row, end_row) "
                                           "VALUES (?, ?, ?, ?, ?, ?)",
                                           (new, name, kind, ordinal, start, end)).lastrowid
            case = " ".join(f"WHEN {a} THEN {b}" for a, b in mapping.items())
            sect = f"CASE section_id {case} END" if mapping else "NULL"
            slow = 1.0 + 0.02 * rng.uniform(-1, 1)
            if ops:
                con.execute(f"INSERT INTO op (run_id, section_id, kernel_ns, {', '.join(cols)}) "
                            f"SELECT ?, {sect}, kernel_ns * (0.98 + (ABS(RANDOM()) % 4000) / 100000.0) * ?, "
                            f"{', '.join(cols)} FROM op WHERE run_id = ?", (new, slow, template))
            con.execute(f"INSERT INTO rollup_row (run_id, kernel_ns, {', '.join(roll)}) "
                        f"SELECT ?, ROUND(kernel_ns * (0.99 + (ABS(RANDOM()) % 2000) / 100000.0) * ?), "
                        f"{', '.join(roll)} FROM rollup_row WHERE run_id = ?", (new, slow, template))
            made.append(new)
    con.close()
    # each night's history series, as ingest writes them beside its rollups
    from warehouse.store import runseries
    from warehouse.store.db import open_db
    engine = open_db(str(db), create=False)
    try:
        with engine.begin() as conn:
            for run_id in made:
                runseries.build(conn, run_id)
    finally:
        engine.dispose()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oracle", default=str(ROOT.parent / "shared" / "oracle" / "profile_summary.py"))
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--tt-perf-report", default="/tmp/ttpr/bin/tt-perf-report",
                    help="tt-perf-report 1.4.1's executable, in a venv of its own (figure 7)")
    ap.add_argument("--only", choices=sorted(BENCH_SOURCES), help="only this bench CSV for figures 1, 2, 4, 7")
    ap.add_argument("--memory-ops", type=lambda v: [int(x) for x in v.split(",")],
                    default=[10_000, 100_000, 300_000, 1_000_000],
                    help="the sizes of the memory figure (3), comma-separated op counts")
    ap.add_argument("--repeat", type=int, default=3, help="timings keep the best of N runs")
    ap.add_argument("--skip-big", action="store_true", help="skip the memory figure (3)")
    ap.add_argument("--only-history", action="store_true", help="only the history and dashboard figures (5, 6)")
    ap.add_argument("--skip-history", action="store_true", help="skip the history and dashboard figures (5, 6)")
    ap.add_argument("--folder-files", type=int, default=6, help="files of the folder figure (8); 0 skips it")
    ap.add_argument("--folder-ops", type=int, default=25_000, help="ops per file of the folder figure (8)")
    ap.add_argument("--skip-lake", action="store_true", help="skip the Parquet lake figures (12)")
    ap.add_argument("--only-lake", action="store_true", help="only the Parquet lake figures (12)")
    ap.add_argument("--out", default=str(ROOT / "bench-out"))
    ap.add_argument("--only-memory", action="store_true", help="only the memory figure (3)")
    a = ap.parse_args()
    if a.only_lake:
        a.skip_history = a.skip_big = True
        a.folder_files = 0
    if a.only_memory:  # (figure 3 alone: the ingest figures' sources are not read)
        a.skip_history = a.skip_lake = True
        a.folder_files, a.only = 0, "none"
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cores"
    print(f"warehouse benchmarks ({env_note}); files in {out}\n", flush=True)

    if not a.only_history and not a.only_lake:
        for name, src in BENCH_SOURCES.items():
            if a.only in (None, name):
                results += ingest_and_report(a, out, name, src)
    if not a.skip_history:
        results += history_and_dashboard(a, out)
    if a.folder_files and not a.only_history:
        results += folder_ingest(a, out)
    if not a.skip_big and not a.only_history:
        results += big_memory(a, out)
    if not a.skip_lake and not a.only_history:
        results += lake_figures(out)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    failed = [r for r in results if r["verdict"] == "FAIL"]
    print(f"\n{len(results) - len(failed)} of {len(results)} figures meet their targets")
    return 1 if failed else 0


def ingest_and_report(a, out: Path, name: str, src: Path) -> list[dict]:
    results = []
    csv_path = realistic_csv(src, out / "realistic", a.ops)
    n_ops = op_rows(csv_path)
    size = csv_path.stat().st_size
    print(f"built {csv_path.name} from {src.name}: {n_ops} ops, every row distinct, {size / 2**20:.1f} MiB\n",
          flush=True)
    tag = f"{name}, {n_ops // 1000}k ops"
    db = out / "warehouse.db"
    pq_ref = parquet_reference(csv_path, out)
    growth, results_1 = ingest_figures(a, out, csv_path, tag, pq_ref)
    results += results_1
    pq_note = f"; Parquet {pq_ref[1] / size:.3f}" if pq_ref else "; Parquet: no pyarrow here"
    results.append(line(f"2. db growth, first run / CSV size ({tag}{pq_note})", f"{growth:.3f}", "<= 0.10",
                        growth <= 0.10))
    # 2b. the same model's next night into that warehouse: what a team pays per night (its cell tuples, places
    # and rollup keys are stored already; its cycles, times and durations are its own)
    night = realistic_csv(src, out / "night2", a.ops, seed=2, layout_seed=1,
                          name="ops_perf_results_2026_01_02_02_00_00.csv")
    before = db_size(db)
    timed(WAREHOUSE + ["--db", str(db), "ingest", str(night)])
    nightly = (db_size(db) - before) / night.stat().st_size
    results.append(line(f"2b. db growth, the next night of the same model / CSV size ({name})", f"{nightly:.3f}",
                        "<= 0.08", nightly <= 0.08))
    # the same two figures on the old input (the sectioned corpus case repeated row for row): a second line
    rep_path = out / "repeated" / "ops_perf_results_2026_01_01_02_00_00.csv"
    rep_path.parent.mkdir(exist_ok=True)
    scale_csv(REPEATED_SOURCES[name], rep_path, a.ops)
    rep_growth, rep_lines = ingest_figures(a, out, rep_path, f"{name}, repeated rows", None, repeat=1, verdict=False)
    results += rep_lines
    results.append(line(f"2'. db growth / CSV size ({name}, repeated rows: flatters)", f"{rep_growth:.3f}", "",
                        None))
    rep_path.unlink()
    # (the warehouse of the realistic file again, for the figures below)
    fresh_warehouse(db)
    timed(WAREHOUSE + ["--db", str(db), "ingest", str(csv_path)])

    results += export_figure(a, out, db, csv_path, tag)

    # 9. the dashboard's export download of that run: the server's peak memory while it streams the CSV;
    # 10. its runs page while a slow /sql runs
    results += dashboard_under_load(db, size, tag)

    # 4. report vs oracle
    if Path(a.oracle).exists():
        t_oracle, c_oracle = best_cpu([sys.executable, a.oracle, str(csv_path), str(out / "oracle.json"), "--md",
                                       str(out / "oracle.md")], a.repeat)
        t_report, c_report = best_cpu(WAREHOUSE + ["--db", str(db), "report", "1", "--json", str(out / "ours.json"),
                                                   "--md", str(out / "ours.md"), "-q"], a.repeat)
        ratio = t_report / t_oracle
        results.append(line(f"4. report / oracle ({tag})", f"{ratio:.3f} ({t_report:.2f}/{t_oracle:.2f}s; "
                            f"CPU {c_report:.2f}/{c_oracle:.2f}s)", "<= 0.15", ratio <= 0.15))
        parity = ROOT / "tests" / "parity.py"
        same = subprocess.run([sys.executable, str(parity), str(out / "oracle.json"), str(out / "ours.json"), "--md",
                               str(out / "oracle.md"), str(out / "ours.md")], capture_output=True, text=True)
        print(f"   (report parity with the oracle on this CSV: {same.stdout.strip().splitlines()[-1]})")
    else:
        results.append(line(f"4. report / oracle: oracle not found at {a.oracle}", "-", "<= 0.15", None))

    # 7. perf vs tt-perf-report (once: tt-perf-report takes half a minute on these files)
    if Path(a.tt_perf_report).exists():
        ref, ours = out / "ttperf_ref.csv", out / "ttperf_ours.csv"
        t_ref, c_ref, _ = measured([a.tt_perf_report, str(csv_path), "--ignore-signposts", "--no-summary",
                                    "--raw-op-codes", "--csv", str(ref)])
        t_ours, c_ours = best_cpu(WAREHOUSE + ["--db", str(db), "perf", "1", "--csv", str(ours)], a.repeat)
        ratio = t_ours / t_ref
        results.append(line(f"7. perf / tt-perf-report ({tag})", f"{ratio:.3f} ({t_ours:.2f}/{t_ref:.2f}s; CPU "
                            f"{c_ours:.2f}/{c_ref:.2f}s)", "< 1", ratio < 1))
        same = subprocess.run([sys.executable, str(ROOT / "tests" / "ttperf_compare.py"), str(ref), str(ours)],
                              capture_output=True, text=True)
        print(f"   (per-op table against tt-perf-report on this CSV: {same.stdout.strip().splitlines()[-1]})")
    else:
        results.append(line(f"7. perf / tt-perf-report: not found at {a.tt_perf_report}", "-", "< 1", None))
    return results


def export_figure(a, out: Path, db: Path, csv_path: Path, tag: str) -> list[dict]:
    """13. `warehouse export` of run 1 (``csv_path`` ingested) / a zstd decompression of the same file compressed
    at level 3, both written to /dev/null, best of ``a.repeat``; the export is checked byte for byte first."""
    zstd = shutil.which("zstd")
    if zstd is None:
        return [line("13. export / zstd -d: no zstd command here", "-", "<= 5", None)]
    back = out / "export.csv"
    measured(WAREHOUSE + ["--db", str(db), "export", "1", "-o", str(back)])
    if back.read_bytes() != csv_path.read_bytes():
        raise SystemExit(f"Error: the export of {csv_path} is not the file byte for byte")
    back.unlink()
    packed = out / "export-reference.csv.zst"
    measured([zstd, "-q", "-f", "-3", str(csv_path), "-o", str(packed)])
    t_export, c_export = best_cpu(WAREHOUSE + ["--db", str(db), "export", "1", "-o", os.devnull], a.repeat)
    t_zstd, c_zstd = best_cpu([zstd, "-q", "-d", "-f", "-c", str(packed)], a.repeat)
    packed.unlink()
    ratio = t_export / t_zstd
    return [line(f"13. export, byte-identical / zstd -d of the file ({tag})",
                 f"{ratio:.1f} ({t_export:.2f}/{t_zstd:.2f}s; CPU {c_export:.2f}/{c_zstd:.2f}s)", "<= 5",
                 ratio <= 5)]


def fresh_warehouse(db: Path) -> None:
    """An empty warehouse at ``db`` (schema created)."""
    for p in db.parent.glob(db.name + "*"):
        p.unlink()
    timed(WAREHOUSE + ["--db", str(db), "db", "upgrade"])


def ingest_figures(a, out: Path, csv_path: Path, tag: str, pq_ref: tuple[float, int] | None, repeat: int = 0,
                   verdict: bool = True) -> tuple[float, list[dict]]:
    """Figure 1 (ingest / sqlite3 .import, the best of ``repeat`` or ``a.repeat`` runs) on ``csv_path``, and the
    warehouse's growth per CSV byte (figure 2's value); without ``verdict`` the line only informs."""
    sqlite3_cli = shutil.which("sqlite3")
    imp_db, db = out / "import.db", out / "warehouse.db"
    size = csv_path.stat().st_size
    n = repeat or a.repeat
    t_ingest, c_ingest = best_cpu(WAREHOUSE + ["--db", str(db), "ingest", str(csv_path)], n,
                                  lambda: fresh_warehouse(db))
    pq = f"; pyarrow CSV->Parquet {pq_ref[0]:.2f}s" if pq_ref else ""
    results = []
    if sqlite3_cli:
        t_import, c_import = best_cpu([sqlite3_cli, str(imp_db), ".mode csv", f".import {csv_path} t"], n,
                                      lambda: imp_db.unlink(missing_ok=True))
        ratio = t_ingest / t_import
        mark = "" if verdict else chr(39)
        results.append(line(f"1{mark}. ingest / sqlite3 .import, wall ({tag}{pq})",
                            f"{ratio:.2f} ({t_ingest:.2f}/{t_import:.2f}s)", "<= 1.0" if verdict else "",
                            ratio <= 1.0 if verdict else None))
        # what a farm that ingests several captures at once pays: the CPU of every process of the ingest
        ratio = c_ingest / c_import
        results.append(line(f"1c{mark}. ingest / sqlite3 .import, CPU of all processes ({tag})",
                            f"{ratio:.2f} ({c_ingest:.2f}/{c_import:.2f}s)", "<= 1.5" if verdict else "",
                            ratio <= 1.5 if verdict else None))
    else:
        results.append(line("1. ingest / sqlite3 .import (no sqlite3 shell here)", f"{t_ingest:.2f}s", "<= 1.5",
                            None))
    # growth per run: a warehouse that holds exactly this run, over an empty schema
    fresh_warehouse(db)
    empty = db_size(db)
    timed(WAREHOUSE + ["--db", str(db), "ingest", str(csv_path)])
    return (db_size(db) - empty) / size, results


def dashboard_under_load(db: Path, size: int, tag: str) -> list[dict]:
    """Serve ``db`` (`warehouse serve`): download run 1's CSV and read the server's peak RSS (VmHWM); then time
    the runs page while a /sql of several seconds runs in another request."""
    import socket
    import threading
    import urllib.parse
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(WAREHOUSE + ["--db", str(db), "serve", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/?format=json", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        got = 0
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/runs/1/export.csv", timeout=600) as r:
            while block := r.read(1 << 20):
                got += len(block)
        status = Path(f"/proc/{server.pid}/status").read_text()
        hwm = int(next(x for x in status.splitlines() if x.startswith("VmHWM")).split()[1]) / 1024
        slow_sql = urllib.parse.quote("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE "
                                      "x < 30000000) SELECT COUNT(*) FROM c")
        ended: dict[str, float] = {}

        def slow() -> None:
            t0 = time.monotonic()
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/sql?q={slow_sql}&format=json", timeout=60).read()
            except OSError:
                pass  # (its 10 s limit)
            ended["slow"] = time.monotonic() - t0
        th = threading.Thread(target=slow)
        th.start()
        time.sleep(1.0)  # the slow query is under way
        t0 = time.monotonic()
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60).read()
        page_ms = 1000 * (time.monotonic() - t0)
        th.join()
    finally:
        server.terminate()
        server.wait(30)
    return [line(f"9. dashboard download of a run's CSV, server peak RSS ({tag}, {got / 2**20:.0f} MiB)",
                 f"{hwm:.0f} MiB", "<= 150 MiB", got == size and hwm <= 150),
            line(f"10. dashboard / while a {ended.get('slow', 0):.1f} s /sql runs", f"{page_ms:.0f} ms", "<= 100 ms",
                 page_ms <= 100 and ended.get("slow", 0) > 2)]


def history_and_dashboard(a, out: Path) -> list[dict]:
    results = []
    # 5. history on warehouses of 8, 40 and 365 runs of 20,000 ops, against one report of such a run
    hist_csv = realistic_csv(BENCH_SOURCES["dlv3"], out / "hist", 20_000,
                             name="ops_perf_results_2026_01_05_02_00_00.csv")
    for runs, with_ops in ((8, True), (40, True), (365, False)):
        hdb = out / f"history{runs}.db"
        for p in out.glob(f"history{runs}.db*"):
            p.unlink()
        timed(WAREHOUSE + ["--db", str(hdb), "ingest", str(hist_csv)])
        t0 = time.perf_counter()
        clone_runs(hdb, 1, runs - 1, ops=with_ops)
        print(f"   (built {runs} runs of 20,000 ops in {time.perf_counter() - t0:.1f} s"
              f"{'' if with_ops else '; the clones carry rollups, not ops, which history never reads'})",
              flush=True)
    t_rep20 = best(WAREHOUSE + ["--db", str(out / "history8.db"), "report", "1", "-q"], a.repeat)
    t_reg8 = best(WAREHOUSE + ["--db", str(out / "history8.db"), "regressions"], a.repeat)
    t_reg40 = best(WAREHOUSE + ["--db", str(out / "history40.db"), "regressions"], a.repeat)
    t_trend40 = best(WAREHOUSE + ["--db", str(out / "history40.db"), "trend", "--last", "0"], a.repeat)
    t_reg365 = best(WAREHOUSE + ["--db", str(out / "history365.db"), "regressions"], a.repeat)
    t_trend365 = best(WAREHOUSE + ["--db", str(out / "history365.db"), "trend", "--last", "0"], a.repeat)
    r = t_reg8 / t_rep20
    results.append(line("5a. regressions, 7-run window / report (20k ops)", f"{r:.2f} ({t_reg8:.2f}/{t_rep20:.2f}s)",
                        "<= 0.5", r <= 0.5))
    r = t_reg40 / t_reg8
    results.append(line("5b. regressions on 40 runs / on 8 runs", f"{r:.2f} ({t_reg40:.2f}/{t_reg8:.2f}s)",
                        "<= 1.5", r <= 1.5))
    r = t_trend40 / t_rep20
    results.append(line("5c. trend over 40 runs / report (20k ops)", f"{r:.2f} ({t_trend40:.2f}/{t_rep20:.2f}s)",
                        "<= 0.5", r <= 0.5))
    results.append(line("5d. regressions, a year (365 runs of 20k ops)", f"{t_reg365:.2f}s", "< 1 s", t_reg365 < 1))
    results.append(line("5e. trend over a year (365 runs)", f"{t_trend365:.2f}s", "< 1 s", t_trend365 < 1))
    # the same ratios without the ~0.35 s that every process pays to start Python and import SQLAlchemy
    inproc = subprocess.run([sys.executable, "-c", INPROCESS, str(out)], capture_output=True, text=True, check=True)
    t = json.loads(inproc.stdout)
    r = t["reg8"] / t["report"]
    results.append(line("5f. in process: regressions (7-run window) / report", f"{r:.2f} ({t['reg8']:.3f}/"
                        f"{t['report']:.3f}s)", "<= 0.5", r <= 0.5))
    r = t["reg40"] / t["reg8"]
    results.append(line("5g. in process: regressions on 40 runs / on 8", f"{r:.2f}", "<= 1.5", r <= 1.5))
    r = t["trend40"] / t["report"]
    results.append(line("5h. in process: trend over 40 runs / report", f"{r:.2f} ({t['trend40']:.3f}s)", "<= 0.5",
                        r <= 0.5))
    # the report reads the parts stored at ingest: against computing them from the run's ops (what a report cost
    # before they were stored, and what history's figures were first held to)
    r = t["reg8"] / t["computed"]
    results.append(line("5i. in process: regressions (7-run window) / a report from ops", f"{r:.2f} ({t['reg8']:.3f}/"
                        f"{t['computed']:.3f}s)", "<= 0.5", r <= 0.5))
    r = t["trend40"] / t["computed"]
    results.append(line("5j. in process: trend over 40 runs / a report from ops", f"{r:.2f}", "<= 0.5", r <= 0.5))
    # 5k-5n. change points over the whole history, and the gate, in process (a year: 365 runs of 20,000 ops)
    results.append(line("5k. in process: changes over a year (365 runs)", f"{t['changes365']:.2f}s", "< 1 s",
                        t["changes365"] < 1))
    results.append(line("5l. in process: the gate on a year (365 runs)", f"{t['gate365']:.2f}s", "<= 0.3 s",
                        t["gate365"] <= 0.3))
    r = t["changes365"] / t["changes40"]
    results.append(line("5m. changes: 365 runs / 40 runs (growth with runs)", f"{r:.1f} ({t['changes40']:.3f}s; "
                        f"8 runs {t['changes8']:.3f}s)", "~ 9 (linear)", None))
    results.append(line("5n. rollup rows (keys x devices x sections) per run", f"{t['keys365']}", "", None))
    # 11. a one-line answer as a whole process: `warehouse runs` on the 40-run warehouse
    t_runs = best(WAREHOUSE + ["--db", str(out / "history40.db"), "runs"], max(a.repeat, 5))
    results.append(line("11. `warehouse runs` on 40 runs, the whole process", f"{t_runs:.2f}s", "<= 0.2 s",
                        t_runs <= 0.2))
    # 6. the dashboard's server time on 40 runs, against one `warehouse report` of such a run (the process)
    for name in ("runs", "run"):
        if t[f"page_{name}"] is None:
            print("   (skipped: the dashboard's server time needs the web extra and httpx2: pip install "
                  "'tt-profile-warehouse[web,test]')")
            continue
        r = t[f"page_{name}"] / t_rep20
        results.append(line(f"6. server time of {'/' if name == 'runs' else '/runs/<id>'} (40 runs) / report",
                            f"{r:.2f} ({t[f'page_{name}']:.3f}/{t_rep20:.2f}s)", "< 1", r < 1))
    return results


INPROCESS = """
import json, sys, time
from pathlib import Path
out = Path(sys.argv[1])
from warehouse.store.db import open_db
from warehouse.history.gate import find_regressions
from warehouse.render.report import text as render_text, to_json as render_json
from warehouse.analysis.report import build_report, compute_parts
from warehouse.history.trend import trend

def best(fn, n=3):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
    return min(ts)
e8, e40 = open_db(str(out / "history8.db"), create=False), open_db(str(out / "history40.db"), create=False)
res = {"report": best(lambda: render_text(build_report(e8, 1)) + render_json(build_report(e8, 1))),
       "reg8": best(lambda: find_regressions(e8)), "reg40": best(lambda: find_regressions(e40)),
       "trend40": best(lambda: trend(e40, last=None))}

def computed():
    with e8.connect() as c:
        compute_parts(c, 1, 1000.0)
res["computed"] = best(computed)
from warehouse.history.changes import find_changes
e365 = open_db(str(out / "history365.db"), create=False)
res["changes8"] = best(lambda: find_changes(e8))
res["changes40"] = best(lambda: find_changes(e40))
res["changes365"] = best(lambda: find_changes(e365))
res["gate365"] = best(lambda: find_regressions(e365))
with e365.connect() as c_:
    res["keys365"] = c_.exec_driver_sql("SELECT COUNT(*) FROM rollup WHERE run_id = 1").scalar()
try:
    from starlette.testclient import TestClient
    from warehouse.web.app import create_app
    c = TestClient(create_app(str(out / "history40.db")), base_url="http://127.0.0.1")
    c.get("/"); c.get("/runs/1")
    res["page_runs"] = best(lambda: c.get("/"))
    res["page_run"] = best(lambda: c.get("/runs/1"))
except (ImportError, RuntimeError):  # (no web extra, or Starlette's test client without its HTTP client)
    res["page_runs"] = res["page_run"] = None
print(json.dumps(res))
"""


def lake_figures(out: Path) -> list[dict]:
    """12. The Parquet lake: the whole corpus (size per CSV byte, time per run), and a year of nightlies exported
    incrementally."""
    sys.path.insert(0, str(ROOT / "tests"))
    from corpus import cases
    results = []
    db, lake = out / "lake-corpus.db", out / "lake-corpus"
    fresh_warehouse(db)
    shutil.rmtree(lake, ignore_errors=True)
    files = sorted(set(cases().values()))
    csv_bytes = sum(f.stat().st_size for f in files)
    empty = db_size(db)
    timed(WAREHOUSE + ["--db", str(db), "ingest", *map(str, files)])
    runs = len(files)
    secs, _ = timed(WAREHOUSE + ["--db", str(db), "export", "--format", "parquet", str(lake)])
    lake_bytes = sum(p.stat().st_size for p in lake.rglob("*.parquet"))
    results.append(line(f"12a. Parquet lake of the corpus ({runs} runs, {csv_bytes / 1e6:.1f} MB of CSV) / CSV size "
                        f"(warehouse: {(db_size(db) - empty) / csv_bytes:.3f})", f"{lake_bytes / csv_bytes:.3f}",
                        "", None))
    results.append(line("12b. Parquet lake export, time per run (corpus, whole process)",
                        f"{secs / runs * 1000:.0f} ms ({secs:.1f} s)", "", None))
    # a year: 365 nightlies of a 1,000-op capture (ops, sections and rollups cloned in SQL), then one more night
    ydb, ylake = out / "lake-year.db", out / "lake-year"
    fresh_warehouse(ydb)
    shutil.rmtree(ylake, ignore_errors=True)
    timed(WAREHOUSE + ["--db", str(ydb), "ingest", str(THOUSAND)])
    clone_runs(ydb, 1, 364, ops=True)
    t_full, _ = timed(WAREHOUSE + ["--db", str(ydb), "export", "--format", "parquet", str(ylake)])
    before = {p: p.stat().st_mtime_ns for p in ylake.rglob("*.parquet")}
    clone_runs(ydb, 1, 1, seed=2, ops=True, first=364)
    t_next, _ = timed(WAREHOUSE + ["--db", str(ydb), "export", "--format", "parquet", str(ylake)])
    after = {p: p.stat().st_mtime_ns for p in ylake.rglob("*.parquet")}
    written = [p for p in after if before.get(p) != after[p]]
    t_none, _ = timed(WAREHOUSE + ["--db", str(ydb), "export", "--format", "parquet", str(ylake)])
    results.append(line("12c. lake: a year (365 runs of 1k ops), first export", f"{t_full:.1f} s", "", None))
    ok = len(written) == 6 and all(p not in before for p in written)
    results.append(line("12d. lake: the next night, incremental (files written; seconds)",
                        f"{len(written)} files ({t_next:.2f} s)", "6 (its own)", ok))
    results.append(line("12e. lake: an export with nothing new", f"{t_none:.2f} s", "", None))
    return results


def folder_ingest(a, out: Path) -> list[dict]:
    """8. A folder of nightly files (realistic captures built from dlv3, each its own seed), ingested with one
    worker and with two: files per minute."""
    folder = out / "folder"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for i in range(a.folder_files):
        realistic_csv(BENCH_SOURCES["dlv3"], folder, a.folder_ops + 2000 * i, seed=i + 1,
                      name=f"ops_perf_results_2026_02_{i + 1:02d}_02_00_00.csv")
    db = out / "folder.db"

    def fresh() -> None:
        for p in out.glob("folder.db*"):
            p.unlink()
        timed(WAREHOUSE + ["--db", str(db), "db", "upgrade"])

    rate = {}
    for jobs in (1, 2):
        secs = best(WAREHOUSE + ["--db", str(db), "ingest", str(folder), "--jobs", str(jobs)], a.repeat, fresh)
        rate[jobs] = a.folder_files * 60 / secs
    shutil.rmtree(folder, ignore_errors=True)
    ratio = rate[2] / rate[1]
    return [line(f"8. folder of {a.folder_files} x {a.folder_ops // 1000}k ops: files/min, 2 jobs / 1",
                 f"{ratio:.2f} ({rate[2]:.0f}/{rate[1]:.0f})", "> 1", ratio > 1)]


def big_memory(a, out: Path) -> list[dict]:
    """3. Peak memory of an ingest at each size of ``--memory-ops`` (every process's PSS summed): flat from 10k to
    1M ops."""
    results = []
    for ops in a.memory_ops:
        big = realistic_csv(BENCH_SOURCES["dlv3"], out / "big", ops, name="ops_perf_results_2026_01_02_02_00_00.csv")
        n_big = op_rows(big)
        big_db = out / "big.db"
        for p in out.glob("big.db*"):
            p.unlink()
        # the ingest is two processes (warehouse/capture/rowprep.py): their summed memory is the figure
        secs, pss_kib, rss_kib = timed_tree(WAREHOUSE + ["--db", str(big_db), "ingest", str(big)])
        mib = pss_kib / 1024
        size = big.stat().st_size
        shown = f"{size / 2**30:.2f} GiB" if size >= 2**30 else f"{size / 2**20:.0f} MiB"
        results.append(line(f"3. peak memory, ingest of {n_big} ops ({shown}, {secs:.1f}s; every process's PSS "
                            f"summed, largest single RSS {rss_kib / 1024:.0f} MiB)", f"{mib:.0f} MiB", "<= 150 MiB",
                            mib <= 150))
        big.unlink()
    return results


if __name__ == "__main__":
    sys.exit(main())
