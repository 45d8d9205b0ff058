#!/usr/bin/env python3
"""Score the history engine: `changes` and the gate on built nightly histories with the noise a farm has, and the
detector on outside series with known change points; the field's detectors beside it on the same data.

    python scripts/changes_eval.py [--out DIR] [--otava PYTHON] [--only NAME ...] [--json]
    python scripts/changes_eval.py --series [--json]

Histories (tests/mkhistory.py, fixed seeds): the shapes of the shared generator (steps, creeps, one-night outliers,
replay changes) and those of a farm (a pool of cards of different speeds, nights without a capture, a random number
of trace replays, collectives much noisier than compute, five times the one-op hiccups, a regression fixed eight
nights later, a smooth drift). Each is ingested under its own label in one SQLite warehouse, then:

- `changes --format json` is scored by tests/score_changes.py (the first night of every step named exactly, creeps
  caught, false / redundant / outlier findings);
- the gate over every night but the first seven (`regressions --last N`): red nights (a regression cause, exit 3)
  that no event explains (a step or creep explains its night and the six after it, until its level fills the
  window; a one-night slowdown its night), and the false-alarm rate: red nights over series-nights judged;
- beside them, on the same stored series: Apache Otava (--otava, a python that has apache-otava), ruptures' binary
  segmentation and PELT, asv's step detection (each when installed: `pip install 'tt-profile-warehouse[eval]'`).

Series (--series): built series of known steps, fixed-again episodes, drifts, outliers and seasonal swings, scored as
TCPDBench scores detectors (van den Burg & Williams, arXiv 2003.06222): F1 with a margin of 5 points (the start counts
as a change point for every annotator) and covering; "report nothing" and default binary segmentation beside.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
sys.path.insert(0, str(TESTS))

DLV3 = "seedfmt/dlv3_same/ops_perf_results_2026_11_01_02_00_00.csv"
CLIP = "seedfmt/clip_replays3/reports/ops_perf_results_2026_11_04_02_00_00.csv"
DEEPSEEK = "ttperf_extra/bh_8xp150_deepseek_v3_d_p.csv"
OFT = "seedfmt/oft_mismatch/ops_perf_results_2026_11_02_02_00_00.csv"

# A farm's noise: cards of different speeds, nights without a capture, random replays, noisy collectives, hiccups
FARM = ["--cards", "1,1.012,0.991,1.006", "--missing", "0.1", "--outliers", "0.01",
        "--noisy", "AllGather|ReduceScatter|AllReduce|Ccl|Collective:0.10"]
FARM_REPLAYS = [*FARM, "--replays-random", "1:3"]

# name: (source under tests/data, mkhistory arguments)
HISTORIES: dict[str, tuple[str, list[str]]] = {
    # the shared generator's shapes
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
    # a farm's shapes
    "fixed_again": (DLV3, ["--episode", "block:stage2.block0:11:1.05:8"]),
    "farm_block_step": (CLIP, [*FARM_REPLAYS, "--step", "block:stage3.block1:14:1.05"]),
    "farm_op_step": (DLV3, [*FARM, "--step", "op:Conv2dDeviceOperation:17:1.05"]),
    "farm_fixed_again": (CLIP, [*FARM_REPLAYS, "--episode", "block:stage4.block2:12:1.06:8"]),
    "farm_device_step": (DEEPSEEK, [*FARM, "--step", "device:3:15:1.05"]),
    "drift": (DLV3, ["--drift", "all:all:6:0.05"]),
    "noise_farm_dlv3": (DLV3, FARM),
    "noise_farm_clip": (CLIP, FARM_REPLAYS),
    "noise_farm_oft": (OFT, FARM),
    "noise_farm_deepseek": (DEEPSEEK, FARM),
}
NIGHTS = 30
GATED = 23  # the gate over every night but the first seven (a window's worth)


def build(out: Path, names: list[str], seed_base: int = 101) -> Path:
    """Make the histories and one warehouse holding them all (reused when present)."""
    from click.testing import CliRunner

    from warehouse.cli import cli

    db = out / "warehouse.db"
    for seed, name in enumerate(HISTORIES, seed_base):
        if name not in names:
            continue
        src, args = HISTORIES[name]
        folder = out / name
        if not (folder / "truth.json").exists():
            subprocess.run([sys.executable, str(TESTS / "mkhistory.py"), str(TESTS / "data" / src), str(folder),
                            "--nights", str(NIGHTS), "--seed", str(seed), *args], check=True, capture_output=True)
            r = CliRunner().invoke(cli, ["--db", str(db), "ingest", str(folder), "--label", name])
            assert r.exit_code == 0, r.output
    return db


def gate_nights(engine, name: str, truth: dict) -> dict:
    """The gate over the history's nights: red nights (a regression cause), those no event explains, suspicious
    nights, and how many series-nights were judged."""
    from warehouse.history.gate import find_regressions

    g = find_regressions(engine, label=name, last=GATED).to_json()
    # a regression stays red until it is acknowledged or its new level fills the 7-night window; a one-night
    # slowdown (a blip) is red on its night: tonight was slower
    dates = truth["dates"]
    lasting = [e for e in truth["events"] if e["kind"] in ("step", "creep", "episode") and e.get("date") in dates]
    event_days = {dates[i] for e in lasting
                  for i in range(dates.index(e["date"]), min(len(dates), dates.index(e["date"]) + 7))}
    event_days |= {e["date"] for e in truth["events"] if e["kind"] == "blip" and e.get("date")}
    creep_from = min([e["date"] for e in truth["events"] if e["kind"] == "creep"] or ["9999"])
    red = sorted({(c["time"] or "")[:10] for c in g["findings"] if c["kind"] == "regression"})
    suspicious = sorted({(c["time"] or "")[:10] for c in g["findings"] if c["kind"] == "suspicious"})
    false_red = [d for d in red if d not in event_days and d < creep_from]
    judged = sum(int(c.get("series_judged") or 0) for c in g["checked"])
    return {"red": red, "false_red": false_red, "suspicious": suspicious, "judged": judged}


def series_of(db: Path, label: str) -> dict[tuple[str, str, str], list[tuple[str, float]]]:
    """The stored series of a label as the field's detectors are given them (one per grouping, key and section)."""
    import sqlite3
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("select grouping, section, key, device, substr(run_time,1,10), kernel_us from series "
                       "where label = ? and grouping in ('block','op-code','section') order by run_time",
                       (label,)).fetchall()
    out: dict[tuple[str, str, str], list[tuple[str, float]]] = {}
    for g, s, k, dev, t, v in rows:
        if g == "section" and dev == -1:
            continue
        key = (g if g != "section" else "device", s, k if g != "section" else str(dev))
        out.setdefault(key, []).append((t, v or 0.0))
    return out


def other_findings(db: Path, label: str, detect: Callable[[list[float]], list[int]]) -> list[dict]:
    """Findings of an outside detector run on every stored series (as score_changes.otava_findings does)."""
    out, seen = [], set()
    for (g, _s, k), pts in series_of(db, label).items():
        vals = [v for _, v in pts]
        if len(vals) < 8:
            continue
        for i in detect(vals):
            if not 0 < i < len(vals):
                continue
            before = vals[max(0, i - 7):i]
            after = vals[i:i + 7]
            b, a = sum(before) / len(before), sum(after) / len(after)
            key = (g, k, pts[i][0])
            if key in seen:
                continue
            seen.add(key)
            out.append({"by": g, "key": k, "time": pts[i][0], "change_pct": 100 * (a - b) / b if b else 0})
    return out


def _sigma(vals: list[float]) -> float:
    d = sorted(abs(b - a) for a, b in zip(vals, vals[1:]))
    return max(1.4826 * d[len(d) // 2] / math.sqrt(2), 1e-12) if d else 1.0


def detectors() -> dict[str, Callable[[list[float]], list[int]]]:
    """The field's detectors that are installed, by name: each maps a series to the indices of its changes."""
    out: dict[str, Callable[[list[float]], list[int]]] = {}
    try:
        import numpy as np
        import ruptures as rpt

        def binseg(vals: list[float]) -> list[int]:
            x = np.asarray(vals, dtype=float)
            return rpt.Binseg(model="l2").fit(x).predict(pen=2 * math.log(len(x)) * _sigma(vals) ** 2)[:-1]

        def pelt(vals: list[float]) -> list[int]:
            x = np.asarray(vals, dtype=float)
            return rpt.Pelt(model="l2").fit(x).predict(pen=2 * math.log(len(x)) * _sigma(vals) ** 2)[:-1]
        out["ruptures binseg"] = binseg
        out["ruptures pelt"] = pelt
    except ImportError:
        pass
    try:
        from asv import step_detect

        def asv(vals: list[float]) -> list[int]:
            # (its segments: left, right, value, min, error; each segment but the first starts a change)
            return [seg[0] for seg in step_detect.detect_steps(vals)[1:]]
        out["asv"] = asv
    except ImportError:
        pass
    return out


def histories_main(a: argparse.Namespace) -> int:
    from score_changes import score

    from warehouse.history.changes import find_changes
    from warehouse.store.db import open_db

    names = a.only or list(HISTORIES)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    db = build(out, names, a.seed)
    engine = open_db(str(db), create=False)
    others = detectors()
    rows = []
    for name in names:
        truth = json.loads((out / name / "truth.json").read_text())
        t0 = time.perf_counter()
        res = find_changes(engine, label=name).to_json()
        took = time.perf_counter() - t0
        (out / name / "changes.json").write_text(json.dumps(res, indent=1))
        row = {"history": name, **score(truth, res["changes"]), "seconds": round(took, 3),
               "gate": gate_nights(engine, name, truth)}
        for what, fn in others.items():
            row[what] = score(truth, other_findings(db, name, fn))
        if a.otava:
            proc = subprocess.run([a.otava, str(TESTS / "score_changes.py"), str(out / name / "truth.json"), "--otava",
                                str(db), "--label", name], capture_output=True, text=True)
            row["otava"] = json.loads(proc.stdout) if proc.returncode == 0 else proc.stderr[-300:]
        rows.append(row)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    cols = ["events", "exact", "creeps", "creeps_caught", "false", "redundant", "blips", "findings"]
    besides = [*others, *(["otava"] if a.otava else [])]
    print(f"{'history':20} " + " ".join(f"{c[:8]:>8}" for c in cols) + "  red(false)  susp"
          + "".join(f" | {b[:14]:>14}" for b in besides))
    tot = {c: 0 for c in cols}
    red_false = judged = noise_nights = 0
    otot = {b: {"exact": 0, "false": 0, "redundant": 0} for b in besides}
    for r in rows:
        g = r["gate"]
        line = f"{r['history']:20} " + " ".join(f"{r[c]:>8}" for c in cols)
        line += f"  {len(g['red']):>3}({len(g['false_red'])})   {len(g['suspicious']):>4}"
        for b in besides:
            o = r.get(b)
            if isinstance(o, dict):
                line += f" | {o['exact']:>2}/{o['false']:>3}/{o['redundant']:>3} ex/fa/re"[:17]
                for c in otot[b]:
                    otot[b][c] += o[c]
        for c in cols:
            tot[c] += r[c]
        red_false += len(g["false_red"])
        judged += g["judged"]
        if r["history"].startswith("noise"):
            noise_nights += GATED
        print(line)
    print(f"{'total':20} " + " ".join(f"{tot[c]:>8}" for c in cols)
          + "".join(f" | {otot[b]['exact']}/{otot[b]['false']}/{otot[b]['redundant']}" for b in besides))
    print(f"\ngate: {red_false} red night(s) no event explains, over {len(rows) * GATED} nights judged "
          f"({judged:,} series-nights): false-alarm rate {red_false / max(judged, 1):.2e} per series-night")
    return 0


# ------------------------------------------------------------------------------------------------ outside series
def _series_cases(seed: int = 7) -> list[tuple[str, list[float], list[int]]]:
    """Built series of known change points: (name, values, change indices)."""
    rng = random.Random(seed)
    out = []

    def noise(n: int, sd: float, tail: float = 0.0) -> list[float]:
        return [rng.gauss(0, sd) * (3 if tail and rng.random() < tail else 1) for _ in range(n)]
    for k in range(6):  # steps
        n = rng.choice([120, 200, 300])
        cps = sorted(rng.sample(range(15, n - 15), rng.randint(1, 3)))
        level, lv, x = 10.0, [], noise(n, 0.5, 0.05)
        for i in range(n):
            if i in cps:
                level += rng.choice([-1, 1]) * rng.uniform(1.5, 4)
            lv.append(level)
        out.append((f"steps{k}", [a + b for a, b in zip(lv, x)], cps))
    for k in range(4):  # an episode: a regression fixed again
        n = 150
        s = rng.randint(30, 90)
        m = rng.randint(6, 20)
        x = noise(n, 0.5)
        out.append((f"episode{k}", [10 + (3 if s <= i < s + m else 0) + x[i] for i in range(n)], [s, s + m]))
    for k in range(4):  # smooth drifts: no change point
        n = 200
        shape = [lambda u: 5 * u, lambda u: 8 * u * u, lambda u: 6 / (1 + math.exp(-10 * (u - 0.5))),
                 lambda u: 3 * math.exp(2 * u)][k]
        x = noise(n, 0.05)
        out.append((f"drift{k}", [10 + shape(i / n) + x[i] for i in range(n)], []))
    for k in range(3):  # outliers and one step
        n = 160
        s = rng.randint(40, 120)
        x = noise(n, 0.4)
        vals = [10 + (2.5 if i >= s else 0) + x[i] for i in range(n)]
        for j in rng.sample(range(n), 4):
            vals[j] += rng.choice([-1, 1]) * 6
        out.append((f"outliers{k}", vals, [s]))
    for k in range(2):  # seasonal swings and a step
        n = 240
        s = rng.randint(80, 160)
        x = noise(n, 0.3)
        out.append((f"seasonal{k}", [10 + 2 * math.sin(2 * math.pi * i / 12) + (4 if i >= s else 0) + x[i]
                                     for i in range(n)], [s]))
    return out


def series_main(a: argparse.Namespace) -> int:
    from warehouse.history.changepoints import detect_series
    from warehouse.history.outside import covering, f_measure

    methods: dict[str, Callable[[list[float]], list[int]]] = {
        "warehouse": lambda v: [c.index for c in detect_series(v).changes],
        "report nothing": lambda v: [],
    }
    methods.update(detectors())
    rows: list[dict[str, Any]] = []
    for name, vals, cps in _series_cases():
        row: dict[str, Any] = {"series": name, "n": len(vals), "truth": cps}
        for m, fn in methods.items():
            got = fn(vals)
            row[m] = {"f1": round(f_measure(cps, got), 3), "cover": round(covering(cps, got, len(vals)), 3),
                      "found": len(got)}
        rows.append(row)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'series':12} {'n':>4} {'cps':>3} " + " ".join(f"{m[:16]:>16}" for m in methods))
    for r in rows:
        print(f"{r['series']:12} {r['n']:>4} {len(r['truth']):>3} "
              + " ".join(f"{r[m]['f1']:>6.3f} {r[m]['cover']:>5.2f} {r[m]['found']:>3}" for m in methods))
    print(f"{'mean F1':21} " + " ".join(f"{sum(r[m]['f1'] for r in rows) / len(rows):>16.3f}" for m in methods))
    print(f"{'mean covering':21} " + " ".join(f"{sum(r[m]['cover'] for r in rows) / len(rows):>16.3f}"
                                             for m in methods))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/warehouse-changes-eval")
    ap.add_argument("--otava", help="a python that has apache-otava (the reference)")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--series", action="store_true", help="score the detector on built outside series")
    ap.add_argument("--seed", type=int, default=101, help="the first history's seed (the others count on)")
    a = ap.parse_args()
    return series_main(a) if a.series else histories_main(a)


if __name__ == "__main__":
    raise SystemExit(main())
