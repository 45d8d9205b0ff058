#!/usr/bin/env python3
"""A large sectioned CSV: the op rows of a real corpus file repeated to about N ops, then sectioned by seedfmt.py.

    mkbig.py REAL.csv OUTDIR --ops 100000 [--unique] [--seed 1] [--layout-seed N]
             [--name ops_perf_results_2026_11_30_02_00_00.csv]

--unique makes every repeated row what a real long capture has: its own GLOBAL CALL COUNT, FW start/end cycles
and host timestamps moving forward, kernel / FW durations and op-to-op latency jittered (+-2 %, seeded); the static
cells (attributes, shapes, memory) repeat as the real program's do. Without it the repeated rows are identical
copies, which flatters interning and compression.

Copied from ../shared/tools/mkbig.py (the bench must not need ../shared); this copy adds --name, and
--layout-seed (default: --seed), the seed of seedfmt.py's blocks and layers: the same layout with another --seed
is the same model on another night (its own jitter).
"""
import argparse, csv, subprocess, sys
from pathlib import Path

ap = argparse.ArgumentParser(); ap.add_argument("real"); ap.add_argument("out"); ap.add_argument("--ops", type=int, default=100000)
ap.add_argument("--unique", action="store_true"); ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--name", default="ops_perf_results_2026_11_30_02_00_00.csv")
ap.add_argument("--layout-seed", type=int, default=None)
a = ap.parse_args()
import random
rng = random.Random(a.seed)


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def unique(r, i, span_cycles, span_ns):
    """Row r of repetition i: new ids, times moved on by i spans, durations jittered."""
    x = dict(r); rep = i // len(base)
    g = num(x.get("GLOBAL CALL COUNT"))
    if g is not None: x["GLOBAL CALL COUNT"] = str(int(g) + rep * 1024 * len(base))
    for c in ("DEVICE FW START CYCLE", "DEVICE FW END CYCLE"):
        v = num(x.get(c))
        if v is not None: x[c] = str(int(v + rep * span_cycles))
    for c in ("HOST START TS", "HOST END TS"):
        v = num(x.get(c))
        if v is not None: x[c] = str(int(v + rep * span_ns))
    for c in ("DEVICE KERNEL DURATION [ns]", "DEVICE FW DURATION [ns]", "OP TO OP LATENCY [ns]"):
        v = num(x.get(c))
        if v: x[c] = str(int(v * rng.uniform(0.98, 1.02)))
    return x
rd = csv.DictReader(open(a.real, newline="")); cols = rd.fieldnames
base = [r for r in rd if r["OP TYPE"] != "signpost"]
Path(a.out).mkdir(parents=True, exist_ok=True)
src = Path(a.out) / "src.csv"
with open(src, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols); w.writeheader()
    cyc = [num(r.get("DEVICE FW END CYCLE")) for r in base]; hts = [num(r.get("HOST END TS")) for r in base]
    span_cycles = (max([c for c in cyc if c] or [0]) - min([c for c in cyc if c] or [0])) + 1000
    span_ns = (max([h for h in hts if h] or [0]) - min([h for h in hts if h] or [0])) + 1000
    for i in range(a.ops // 2):                    # eager + trace doubles it
        r = base[i % len(base)]
        w.writerow(unique(r, i, span_cycles, span_ns) if a.unique else r)
subprocess.run([sys.executable, str(Path(__file__).with_name("seedfmt.py")), str(src), a.out, "--freq", "1350",
                "--name", a.name, "--seed", str(a.seed if a.layout_seed is None else a.layout_seed)], check=True, stdout=subprocess.DEVNULL)
src.unlink()
print(Path(a.out) / a.name)
