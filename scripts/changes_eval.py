#!/usr/bin/env python3
"""Score `warehouse changes` on built 30-night histories (tests/mkhistory.py) against their truth, with Apache Otava
on the same stored series beside it when a python with apache-otava is given.

    python scripts/changes_eval.py [--out DIR] [--otava PYTHON] [--only NAME ...] [--json]

Each history is ingested into one SQLite warehouse under its own label; `changes --format json` of that label is
scored by tests/score_changes.py (exact first night of every step, creeps caught, false / redundant / outlier
findings). Fixed seeds: the same numbers every run.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
sys.path.insert(0, str(TESTS))

DLV3 = "seedfmt/dlv3_same/ops_perf_results_2026_11_01_02_00_00.csv"
CLIP = "seedfmt/clip_replays3/reports/ops_perf_results_2026_11_04_02_00_00.csv"
DEEPSEEK = "ttperf_extra/bh_8xp150_deepseek_v3_d_p.csv"
OFT = "seedfmt/oft_mismatch/ops_perf_results_2026_11_02_02_00_00.csv"

# name: (source under tests/data, mkhistory arguments)
HISTORIES: dict[str, tuple[str, list[str]]] = {
    "block_step": (DLV3, ["--step", "block:stage2.block0:12:1.05", "--blip", "op:Matmul:8:1.3"]),
    "block_improvement": (DLV3, ["--step", "block:stage4.block0:17:0.95"]),
    "op_step": (DLV3, ["--step", "op:Conv2dDeviceOperation:15:1.04"]),
    "small_block_step": (CLIP, ["--step", "block:stage2.block3:10:1.03", "--replays", "20:2"]),
    "op2op_step": (DLV3, ["--step", "block:stage2.block0:16:1.3:op2op"]),
    "creep": (DLV3, ["--creep", "block:stage1.block0:10:0.004"]),
    "device_step": (DEEPSEEK, ["--step", "device:5:14:1.05"]),
    "two_steps": (CLIP, ["--step", "block:stage6.block1:9:1.04", "--step", "op:LayerNormDeviceOperation:21:1.06",
                         "--blip", "all:all:15:1.2"]),
    "op_improvement": (OFT, ["--step", "op:GridSampleOperation:19:0.93"]),
    "op_creep": (CLIP, ["--creep", "op:MinimalMatmulOp:14:0.004"]),
    "big_step_late": (DLV3, ["--step", "block:stage3.block3:25:1.10", "--blip", "block:stage1.block0:11:1.5"]),
    "noise_oft": (OFT, []),
    "noise_dlv3": (DLV3, []),
    "noise_clip": (CLIP, ["--replays", "12:2"]),
    "noise_deepseek": (DEEPSEEK, []),
}


def build(out: Path, names: list[str], seed_base: int = 101) -> Path:
    """Make the histories and one warehouse holding them all (reused when present)."""
    from click.testing import CliRunner

    from warehouse.cli import cli

    db = out / "warehouse.db"
    for seed, name in enumerate(names, seed_base):
        src, args = HISTORIES[name]
        folder = out / name
        if not (folder / "truth.json").exists():
            subprocess.run([sys.executable, str(TESTS / "mkhistory.py"), str(TESTS / "data" / src), str(folder),
                            "--nights", "30", "--seed", str(seed), *args], check=True, capture_output=True)
        r = CliRunner().invoke(cli, ["--db", str(db), "ingest", str(folder), "--label", name])
        assert r.exit_code == 0, r.output
    return db


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/warehouse-changes-eval")
    ap.add_argument("--otava", help="a python that has apache-otava (the reference)")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seed", type=int, default=101, help="the first history's seed (the others count on)")
    a = ap.parse_args()
    from score_changes import score

    from warehouse.history.changes import find_changes
    from warehouse.store.db import open_db

    names = a.only or list(HISTORIES)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    db = build(out, names, a.seed)
    engine = open_db(str(db), create=False)
    rows = []
    for name in names:
        truth = json.loads((out / name / "truth.json").read_text())
        t0 = time.perf_counter()
        res = find_changes(engine, label=name).to_json()
        took = time.perf_counter() - t0
        (out / name / "changes.json").write_text(json.dumps(res, indent=1))
        s = score(truth, res["changes"])
        row = {"history": name, **s, "seconds": round(took, 3)}
        if a.otava:
            o = subprocess.run([a.otava, str(TESTS / "score_changes.py"), str(out / name / "truth.json"), "--otava",
                                str(db), "--label", name], capture_output=True, text=True)
            row["otava"] = json.loads(o.stdout) if o.returncode == 0 else o.stderr[-300:]
        rows.append(row)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    cols = ["events", "exact", "creeps", "creeps_caught", "false", "redundant", "blips", "findings"]
    print(f"{'history':20} " + " ".join(f"{c[:8]:>8}" for c in cols) + "  seconds" + ("  | otava exact/false/red"
                                                                                        if a.otava else ""))
    tot = {c: 0 for c in cols}
    otot = {"exact": 0, "false": 0, "redundant": 0, "creeps_caught": 0}
    for r in rows:
        line = f"{r['history']:20} " + " ".join(f"{r[c]:>8}" for c in cols) + f"  {r['seconds']:7.3f}"
        for c in cols:
            tot[c] += r[c]
        if a.otava and isinstance(r.get("otava"), dict):
            o = r["otava"]
            line += f"  | {o['exact']}/{o['false']}/{o['redundant']} creep {o['creeps_caught']}"
            for c in otot:
                otot[c] += o[c]
        print(line)
    print(f"{'total':20} " + " ".join(f"{tot[c]:>8}" for c in cols)
          + (f"            | {otot['exact']}/{otot['false']}/{otot['redundant']} creep {otot['creeps_caught']}"
             if a.otava else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
