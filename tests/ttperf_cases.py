"""Captures for the per-op analysis that are not in the public corpus, built deterministically from it (so the
tests need no large files): shapes real captures take in the wild. ``scripts/regen_ttperf.py`` runs
tt-perf-report 1.4.1 on each to make its golden CSV in ``tests/golden/ttperf/``.

- ``oft2025_8dev``: 8 devices interleaved (DEVICE ID 0..7, GLOBAL CALL COUNT = op x 1024 + device), each device's
  durations jittered (the merge keeps the slowest), every 7th op a collective (AllGather: the mean), device 7
  missing one op; signposts once.
- ``dlv3_resaved``: re-saved through pandas: LF line ends, integers as ``175104.0``, some negative op-to-op
  latencies (two beyond -1 ms: implausible durations), one empty kernel duration.
- ``segenc_2dev``: the oldest era (plain ``INPUT_0_W`` shapes, no DEVICE ARCH) on 2 devices, with its host
  fallback ops (no device: never merged) between them.
- ``dlv3_subdevices``: a partitioned grid: ops alternating between two sub-devices with their own worker core
  budgets, each second op running beside the one before it.
- ``deepseek_2ranks`` (:data:`RANKED`): a multi-host capture as ``tt-run --tracy`` lays it out, one file per rank
  under ``generated/profiler/ttrun/rank<N>/<report dir>/``: the real 8-device Blackhole capture split into two
  ranks of four devices, each rank's devices numbered from 0 (tt-perf-report reads the files together); and
  ``oft2025_2ranks``, ``oft2025_8dev`` split the same way (sections: the report of each rank's file).
- ``clip_wormhole``: a Wormhole capture (``DEVICE ARCH`` wormhole_b0: other peaks and DRAM bandwidth), some
  matmuls DRAM-sharded, math fidelities varied.
"""
from __future__ import annotations

import csv
import random
from pathlib import Path

DATA = Path(__file__).parent / "data" / "real"


def _read(name: str) -> tuple[list[str], list[dict[str, str]]]:
    return _read_path(DATA / f"{name}.csv")


def _write(path: Path, cols: list[str], rows: list[dict[str, str]], newline: str = "\r\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator=newline)
        w.writeheader()
        w.writerows(rows)
    return path


def _on_device(row: dict[str, str], dev: int, op: int, rng: random.Random, lo: float, hi: float
               ) -> dict[str, str]:
    """The row as device ``dev`` ran it (GLOBAL CALL COUNT = op x 1024 + device), its kernel time jittered."""
    x = dict(row)
    x["DEVICE ID"] = str(dev)
    x["GLOBAL CALL COUNT"] = str(op * 1024 + dev)
    k = x["DEVICE KERNEL DURATION [ns]"]
    if k:
        x["DEVICE KERNEL DURATION [ns]"] = str(int(float(k) * rng.uniform(lo, hi)))
    return x


def oft2025_8dev(dst: Path) -> Path:
    cols, rows = _read("ttperfreport__ops_perf_results_2025_09_18_11_39_20")
    rng = random.Random(8)
    out = []
    ops = 0
    for r in rows[:240]:
        if r["OP TYPE"] == "signpost":
            out.append(r)
            continue
        ops += 1
        collective = ops % 7 == 0
        for dev in range(8):
            if dev == 7 and ops == 40:
                continue  # device 7 lost this op
            x = _on_device(r, dev, ops, rng, 0.8, 1.25)
            if collective:
                x["OP CODE"] = "AllGatherDeviceOperation"
            out.append(x)
    return _write(dst / "ops_perf_results_2025_11_02_01_00_00.csv", cols, out)


def segenc_2dev(dst: Path) -> Path:
    cols, rows = _read("ttnnvis__ops_perf_results_SEG_ENCODER_2024_10_04_01_36_08")
    rng = random.Random(2)
    out = []
    for i, r in enumerate(rows[:400]):
        if r["OP TYPE"] != "tt_dnn_device":
            out.append(r)
            continue
        for dev in range(2):
            out.append(_on_device(r, dev, i, rng, 0.9, 1.1))
    return _write(dst / "ops_perf_results_2024_11_05_01_00_00.csv", cols, out)


def dlv3_resaved(dst: Path) -> Path:
    cols, rows = _read("ttperfreport__bh_p100_dlv3")
    for i, r in enumerate(rows):
        for c in ("CORE COUNT", "GLOBAL CALL COUNT", "DEVICE KERNEL DURATION [ns]"):
            if r[c] and i % 3 == 0:
                r[c] = f"{float(r[c])!r}"
        if i % 11 == 5 and r["OP TO OP LATENCY [ns]"]:
            r["OP TO OP LATENCY [ns]"] = str(-int(float(r["OP TO OP LATENCY [ns]"])))
        if i in (40, 90):
            r["OP TO OP LATENCY [ns]"] = "-5000000"
        if i == 120:
            r["DEVICE KERNEL DURATION [ns]"] = ""
    return _write(dst / "ops_perf_results_2025_11_03_01_00_00.csv", cols, rows, newline="\n")


def clip_wormhole(dst: Path) -> Path:
    cols, rows = _read("ttperfreport__bh_64_clip_encoder_1")
    fids = ["HiFi4", "HiFi2", "LoFi", "HiFi3"]
    n = 0
    for r in rows:
        r["DEVICE ARCH"] = "wormhole_b0"
        if "Matmul" in r["OP CODE"]:
            n += 1
            r["MATH FIDELITY"] = fids[n % 4]
            if n % 3 == 0:
                r["ATTRIBUTES"] += " MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig"
    return _write(dst / "ops_perf_results_2025_11_04_01_00_00.csv", cols, rows)


def dlv3_replayed(dst: Path) -> Path:
    """A trace replayed: every op 3 times with the capture's HOST START TS (as tt-metal writes replays), each
    replay's durations jittered. Hundreds of equal timestamps: their order is numpy's quicksort's, which depends on
    numpy's version and the CPU, so this case is compared live with tt-perf-report on the machine at hand
    (test_perf.py, when $WAREHOUSE_TTPERF names it), not through a golden file."""
    cols, rows = _read("ttperfreport__bh_p100_dlv3")
    rng = random.Random(3)
    out = []
    for session in (1, 2, 3):
        for r in rows:
            x = dict(r)
            x["METAL TRACE ID"], x["METAL TRACE REPLAY SESSION ID"] = "1", str(session)
            k = x["DEVICE KERNEL DURATION [ns]"]
            if k:
                x["DEVICE KERNEL DURATION [ns]"] = str(int(float(k) * rng.uniform(0.9, 1.1)))
            out.append(x)
    return _write(dst / "ops_perf_results_2025_11_06_01_00_00.csv", cols, out)


def dlv3_subdevices(dst: Path) -> Path:
    """A partitioned grid: the ops alternate between sub-device 0 (80 worker cores) and sub-device 1 (30), and each
    sub-device 1 op runs beside the sub-device 0 op before it (its FW cycles start where that op's started), as two
    ops on disjoint core ranges do."""
    cols, rows = _read("ttperfreport__bh_p100_dlv3")
    cols = cols + ["SUB DEVICE ID"]
    n = 0
    before: dict[str, str] | None = None
    for r in rows:
        r["SUB DEVICE ID"] = ""
        if not r["DEVICE FW START CYCLE"]:
            continue
        sub = n % 2
        n += 1
        r["SUB DEVICE ID"], r["AVAILABLE WORKER CORE COUNT"] = str(sub), ("80", "30")[sub]
        if sub == 1 and before is not None:
            length = int(r["DEVICE FW END CYCLE"]) - int(r["DEVICE FW START CYCLE"])
            r["DEVICE FW START CYCLE"] = before["DEVICE FW START CYCLE"]
            r["DEVICE FW END CYCLE"] = str(int(before["DEVICE FW START CYCLE"]) + length)
        before = r
    return _write(dst / "ops_perf_results_2025_11_07_01_00_00.csv", cols, rows)


# Built and compared live only (equal timestamps: see dlv3_replayed)
def tt_run_ranks(src: Path, dst: Path, ranks: int, drop_device: int | None = None) -> list[Path]:
    """``src`` split by device into ``ranks`` files laid out as ``tt-run --tracy`` writes them (rank r holds devices
    r x n .. r x n + n - 1, numbered from 0; rows without a device go to every rank); ``drop_device``: that device's
    rows left out (a rank with fewer devices). Returns the files in rank order."""
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    cols = list(rows[0])
    per = (max(int(r["DEVICE ID"]) for r in rows if r["DEVICE ID"]) + 1) // ranks
    out = []
    for rank in range(ranks):
        mine = []
        for r in rows:
            if not r["DEVICE ID"]:
                mine.append(r)
            elif int(r["DEVICE ID"]) // per == rank and int(r["DEVICE ID"]) != drop_device:
                mine.append({**r, "DEVICE ID": str(int(r["DEVICE ID"]) % per)})
        folder = dst / "generated" / "profiler" / "ttrun" / f"rank{rank}" / "2026_11_30_02_00_00"
        out.append(_write(folder / "ops_perf_results_2026_11_30_02_00_00.csv", cols, mine))
    return out


def deepseek_2ranks(dst: Path, drop_device: int | None = None) -> list[Path]:
    return tt_run_ranks(Path(__file__).parent / "data" / "ttperf_extra" / "bh_8xp150_deepseek_v3_d_p.csv", dst, 2,
                        drop_device)


def oft2025_2ranks(dst: Path, drop_device: int | None = None) -> list[Path]:
    """``oft2025_8dev`` (eager and trace signposts, a collective, a device missing an op) on two hosts."""
    return tt_run_ranks(oft2025_8dev(dst / "one"), dst / "ranks", 2, drop_device)


def multi_host_nights(dst: Path, nights: int, step_night: int, step: float, seed: int = 4) -> Path:
    """``nights`` nightly captures of the 8-device capture on two hosts, in the tt-run layout (one folder per
    night): every op's kernel and FW durations with 1 % noise, and from night ``step_night`` on rank 1's four
    devices ``step`` times slower (a +4 % step: 1.04)."""
    src = Path(__file__).parent / "data" / "ttperf_extra" / "bh_8xp150_deepseek_v3_d_p.csv"
    cols, rows = _read_path(src)
    rng = random.Random(seed)
    for n in range(nights):
        out = []
        for r in rows:
            x = dict(r)
            slower = step if n >= step_night and int(r["DEVICE ID"]) >= 4 else 1.0
            for c in ("DEVICE KERNEL DURATION [ns]", "DEVICE FW DURATION [ns]"):
                if x[c]:
                    x[c] = str(round(float(x[c]) * slower * rng.lognormvariate(0, 0.01)))
            out.append(x)
        stamp = f"2026_10_{n + 1:02d}_02_00_00"
        one = _write(dst / f"one{n}" / f"ops_perf_results_{stamp}.csv", cols, out)
        tt_run_ranks(one, dst / f"night{n:02d}", 2)
        for f in (dst / f"night{n:02d}").rglob("*.csv"):  # (each night's capture time in its files' names)
            f.rename(f.with_name(f"ops_perf_results_{stamp}.csv"))
        one.unlink()
    return dst


def _read_path(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return list(rows[0]), rows


LIVE_ONLY = {"dlv3_replayed": dlv3_replayed}
# multi-host captures: their rank files, read together (goldens in tests/golden/ttperf/ranks/, and the oracle's
# report of each rank's file in tests/golden/ranks/)
RANKED = {"deepseek_2ranks": deepseek_2ranks, "oft2025_2ranks": oft2025_2ranks}

BUILDERS = {"oft2025_8dev": oft2025_8dev, "dlv3_resaved": dlv3_resaved, "clip_wormhole": clip_wormhole,
            "segenc_2dev": segenc_2dev, "dlv3_subdevices": dlv3_subdevices}
