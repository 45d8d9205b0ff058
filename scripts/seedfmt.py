#!/usr/bin/env python3
"""(Copied from ../shared/tools/seedfmt.py, unchanged but for this note: scripts/mkbig.py calls it.)

Build seed-format Tracy ops CSVs (eager .. eager_end, trace .. trace_end, m:/c: signposts) from a real
ops_perf_results CSV: the eager section is the real op rows unchanged, the trace section replays the same op
sequence with METAL TRACE ID set and synthetic (but self-consistent) cycles. Writes the CSV with the
excel dialect (CRLF) like tt-metal's writer, and optionally a profile_log_device.csv beside it.

    seedfmt.py REAL.csv OUTDIR [--variant same|mismatch|replays3|notrace|plain|noise] [--freq 1000]
                                [--devlog here|parent|logs|none] [--seed 1] [--name NAME]
"""
import argparse, csv, random, re
from pathlib import Path

COMPUTE = re.compile(r"Conv2d|Matmul|ConvTranspose|OptimizedConv")
GLUE = re.compile(r"BinaryNg|Binary|Typecast|Unary")


def sign(cols, name, ts):
    r = {c: "" for c in cols}
    r[key(cols)] = name
    r["OP TYPE"] = "signpost"
    r["HOST START TS"] = str(ts)
    return r


def key(cols):
    return "OP CODE" if "OP CODE" in cols else "OP NAME"


def eager_rows(cols, ops, rng):
    """ops with m:/c: signposts woven in (block / layer attribution in the profile_ops.py style)."""
    k = key(cols)
    out, block_no, layer_no, in_layer, last_comp = [], -1, 0, False, -10
    ts = lambda r: int(float(r.get("HOST START TS") or 0) or 0) - 1
    lead = rng.randint(1, 3)                      # a few ops before the first block: block '' -> '?'
    for i, r in enumerate(ops):
        code = r.get(k, "")
        if i == lead or (i > lead and rng.random() < 0.04):
            block_no += 1
            layer_no, in_layer = 0, False
            out.append(sign(cols, f"m:stage{block_no // 4}.block{block_no % 4}", ts(r)))
        if block_no >= 0 and COMPUTE.search(code) and i - last_comp > 2:
            layer_no += 1
            kind = rng.choice(["conv1", "conv2", "conv3", "proj", "down"])
            lk = f"stage{block_no // 4}.block{block_no % 4}.{kind}{layer_no}"
            # start the layer a glue op or two earlier when the op before is elementwise (the split terms)
            back = 0
            while back < 2 and len(out) > 0 and out[-1].get("OP TYPE") != "signpost" and GLUE.search(out[-1].get(k, "")):
                back += 1
                if len(out) <= back or out[-1 - back].get("OP TYPE") == "signpost":
                    break
            out.insert(len(out) - back, sign(cols, f"c:{lk}", ts(r)))
            in_layer, cur = True, lk
        if COMPUTE.search(code):
            last_comp = i
        elif in_layer and GLUE.search(code) and i - last_comp > 1 and rng.random() < 0.3:
            out.append(sign(cols, f"c:{cur}|post", ts(r)))
            in_layer = False
        elif in_layer and "Reduce" in code and rng.random() < 0.5:
            out.append(sign(cols, f"c:{cur}.se_sum", ts(r)))
        out.append(dict(r))
    return out


def trace_rows(cols, ops, rng, freq, session, noise):
    """The same op sequence as replayed under a metal trace: trace ids set, cycles laid out anew per device."""
    k = key(cols)
    t = {}                                        # device -> next start cycle
    out = []
    for r in ops:
        x = dict(r)
        if x.get("OP TYPE") == "python_fallback" or not (x.get("DEVICE FW DURATION [ns]") or "").strip():
            out.append(x)
            continue
        dev = x.get("DEVICE ID", "0")
        scale = 1.0 - rng.random() * noise
        fw = float(x["DEVICE FW DURATION [ns]"] or 0) * scale
        kern = float(x.get("DEVICE KERNEL DURATION [ns]") or 0) * scale
        gap = rng.randint(300, 2500) if dev in t else 0
        start = t.get(dev, 2_000_000_000) + int(gap * freq / 1000)
        end = start + int(fw * freq / 1000)
        t[dev] = end
        x["DEVICE FW START CYCLE"], x["DEVICE FW END CYCLE"] = str(start), str(end)
        x["DEVICE FW DURATION [ns]"], x["DEVICE KERNEL DURATION [ns]"] = f"{fw:.0f}", f"{kern:.0f}"
        if "OP TO OP LATENCY [ns]" in x:
            x["OP TO OP LATENCY [ns]"] = str(gap)
        if "METAL TRACE ID" in cols:
            x["METAL TRACE ID"] = "1"
        if "METAL TRACE REPLAY SESSION ID" in cols:
            x["METAL TRACE REPLAY SESSION ID"] = str(session)
        out.append(x)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("real")
    ap.add_argument("outdir")
    ap.add_argument("--variant", default="same")
    ap.add_argument("--freq", type=float, default=1000.0)
    ap.add_argument("--devlog", default="here")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--name", default="ops_perf_results_2026_11_30_01_02_03.csv")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    with open(a.real, newline="") as f:
        rd = csv.DictReader(f)
        cols = list(rd.fieldnames)
        rows = list(rd)
    for c in ("METAL TRACE ID", "METAL TRACE REPLAY SESSION ID"):
        if c not in cols:
            cols.append(c)
    for r in rows:
        for c in cols:
            r.setdefault(c, "")
    ops = [r for r in rows if r.get("OP TYPE") != "signpost"]
    last_ts = max((int(float(r.get("HOST END TS") or r.get("HOST START TS") or 0)) for r in ops), default=0)
    out = []
    if a.variant == "plain":
        out = rows
    else:
        out.append(sign(cols, "eager", int(float(ops[0].get("HOST START TS") or 1)) - 10))
        out += eager_rows(cols, ops, rng)
        out.append(sign(cols, "eager_end", last_ts + 1))
        if a.variant != "notrace":
            out.append(sign(cols, "trace", last_ts + 2))
            reps = int(a.variant[7:]) if a.variant.startswith("replays") else 1
            for s in range(1, reps + 1):
                tr = trace_rows(cols, ops, rng, a.freq, s, 0.3 if a.variant == "noise" else 0.1)
                if a.variant == "mismatch":
                    del tr[len(tr) // 2]
                out += tr
            out.append(sign(cols, "trace_end", last_ts + 3))
    od = Path(a.outdir)
    od.mkdir(parents=True, exist_ok=True)
    with open(od / a.name, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(out)
    where = {"here": od, "parent": od.parent, "logs": od / ".logs"}.get(a.devlog)
    if where is not None:
        where.mkdir(parents=True, exist_ok=True)
        (where / "profile_log_device.csv").write_text(
            f"ARCH: blackhole, CHIP_FREQ[MHz]: {a.freq:g}, Max Compute Cores: 140\n"
            "PCIe slot, core_x, core_y, RISC processor type, timer_id, time[cycles since reset], data, run host ID, "
            "trace id, trace id counter, zone name, type, source line, source file, meta data\n"
            "0,1,1,BRISC,22845,2170879416545,0,1024,,,BRISC-FW,ZONE_START,396,brisc.cc,\n")
    print(od / a.name, len(out), "rows")


if __name__ == "__main__":
    main()
