"""The newest runs against the history of matching runs: what got slower (or faster), beyond the noise.

Every series is checked: each section the runs have (eager, trace, custom pairs; the whole run when a capture
has no sections), each grouping of ``by`` (section totals, block, layer, op code by default), each metric
(kernel, op-to-op, FW time, span by default), all devices together and, for multi-device runs, each device.
Figures are per iteration (the mean over a trace's replays), so the same work replayed more or fewer times is
no change.

A change counts when it exceeds all of: ``threshold`` x the window's median, ``min_us``, ``SIGMAS`` robust sigmas
of the window (1.4826 x MAD), and half the spread between the candidate's own replays. A regressed block or
layer lists the op codes inside it that moved most (the drill-down rollups).
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine

from warehouse.errors import NotFound
from warehouse.measures import DRILL_DOWN, METRIC, METRICS
from warehouse.quality import judge
from warehouse.series import (ALL_DEVICES, attribution_gaps, by_run, fetch, resolve_sections, run_meta,
                              section_label, select_runs)

SIGMAS = 3.0
QUALITY_WINDOW = 7
DEFAULT_BY = ["section", "block", "layer", "op-code"]
TOP_CONTRIBUTORS = 3


@dataclass
class Finding:
    """One series that moved: ``kind`` is regression or improvement."""

    kind: str
    run_id: int
    time: str | None
    section: str
    by: str
    key: str
    device: str  # "all" or the device id
    metric: str
    value_us: float
    baseline_us: float
    delta_us: float
    delta_pct: float | None
    noise_us: float
    window: int
    contributors: list[dict[str, Any]] = field(default_factory=list)


def _noise(window: list[float], spreads: list[float | None]) -> float:
    """What the series moves by without a change: robust sigmas of the window, and half the spread between
    replays (of the candidate, or typical of the window): a mean over other replays moves that much."""
    mid = statistics.median(window)
    mad = statistics.median([abs(v - mid) for v in window]) if len(window) > 1 else 0.0
    known = [s for s in spreads if s is not None]
    return max(SIGMAS * 1.4826 * mad, max(known, default=0.0) / 2)


def _check(conn: Connection, cand: int, hist: list[int], section: str, dim: str, metrics: list[str],
           keys: set[str] | None, threshold: float, min_us: float, time: str | None) -> list[Finding]:
    # each device apart for the section totals (a slower device is named), all devices together for the rest
    points = by_run(fetch(conn, [cand, *hist], section, dim, devices=dim == "section",
                          keys=sorted(keys) if keys is not None else None))
    now = points.get(cand, {})
    out = []
    for (key, dev), p in now.items():
        for mk in metrics:
            v = p.values.get(mk)
            if v is None:
                continue
            hp = [points[h][(key, dev)] for h in hist if (key, dev) in points.get(h, {})]
            past = [x for x in (q.values.get(mk) for q in hp) if x is not None]
            if len(past) < max(1, (len(hist) + 1) // 2):  # too new a key to judge
                continue
            base = statistics.median(past)
            delta = v - base
            window_spread = [s for s in (q.spreads.get(mk) for q in hp) if s is not None]
            noise = _noise(past, [p.spreads.get(mk), statistics.median(window_spread) if window_spread else None])
            if abs(delta) > max(threshold * abs(base), min_us, noise):
                out.append(Finding("regression" if delta > 0 else "improvement", cand, time,
                                   section_label(section), dim, key, "all" if dev == ALL_DEVICES else str(dev), mk,
                                   round(v, 3), round(base, 3), round(delta, 3),
                                   round(100 * delta / base, 2) if base else None, round(noise, 3), len(past)))
    return out


def _contributors(conn: Connection, f: Finding, cand: int, hist: list[int], section: str) -> list[dict[str, Any]]:
    """The op codes inside a regressed block or layer that moved most, on the same metric and device."""
    sub = DRILL_DOWN.get(f.by)
    if sub is None:
        return []
    dev = ALL_DEVICES if f.device == "all" else int(f.device)
    prefix = f.key + " / "
    points = by_run(fetch(conn, [cand, *hist], section, sub, devices=dev != ALL_DEVICES))
    moved: list[dict[str, Any]] = []
    for (key, d), p in points.get(cand, {}).items():
        if d != dev or not key.startswith(prefix):
            continue
        past = [points[h][(key, d)].values.get(f.metric) or 0.0 for h in hist if (key, d) in points.get(h, {})]
        base = statistics.median(past) if past else 0.0
        moved.append({"op_code": key[len(prefix):], "value_us": round(p.values.get(f.metric) or 0.0, 3),
                      "delta_us": round((p.values.get(f.metric) or 0.0) - base, 3)})
    moved.sort(key=lambda m: -abs(m["delta_us"]))
    return moved[:TOP_CONTRIBUTORS]


def find_regressions(engine: Engine, *, label: str | None = None, tags: dict[str, str] | None = None,
                     last: int = 1, window: int = 7, threshold: float = 0.05, min_us: float = 1.0,
                     by: list[str] | None = None, section: str | None = None, metrics: list[str] | None = None,
                     keys: list[str] | None = None) -> dict[str, Any]:
    """Compare each of the ``last`` newest matching runs with the ``window`` matching runs before it."""
    by = by or DEFAULT_BY
    metrics = metrics or [m.key for m in METRICS]
    findings: list[Finding] = []
    warnings: list[str] = []
    with engine.connect() as conn:
        runs = select_runs(conn, label, tags)
        if not runs:
            raise NotFound("no runs in the warehouse; ingest a CSV first")
        scope = runs[-(last + window):]
        sections = resolve_sections(conn, section, scope)
        # capture quality of the checked runs and of every run that could be in their windows
        quality = judge(conn, runs[-(last + 2 * window + QUALITY_WINDOW):], QUALITY_WINDOW)
        valid = [r for r in runs if not quality.get(r)]
        pos = {r: k for k, r in enumerate(runs)}
        meta = run_meta(conn, runs[-(last + 2 * window):])
        if keys is not None:
            _check_keys(conn, scope, sections, by, keys)
        checked, invalid = [], []
        for i in range(max(0, len(runs) - last), len(runs)):
            cand = runs[i]
            if quality.get(cand):
                invalid.append({**meta[cand].as_dict(), "problems": quality[cand]})
                continue
            # the window: the newest valid runs before it (an invalid night is in no baseline)
            before = [r for r in valid if pos[r] < i]
            hist = before[-window:]
            if not hist:
                warnings.append(f"{meta[cand].short()} has no earlier valid run to compare with" if i else
                                f"{meta[cand].short()} has no earlier run to compare with")
                continue
            if label is None and len({meta[r].label for r in [cand, *hist]}) > 1:
                warnings.append(f"the window of run {cand} mixes labels "
                                f"{sorted({str(meta[r].label) for r in [cand, *hist]})}; pass --label")
            checked.append({**meta[cand].as_dict(), "window": hist,
                            "sections": [section_label(s) for s in sections]})
            for sec in sections:
                gap = attribution_gaps(conn, cand, sec)
                if gap > 0.5 and any(d in ("block", "layer") for d in by):
                    warnings.append(f"section {section_label(sec)} of run {cand}: {100 * gap:.0f} % of its ops have "
                                    "no block (no m: signposts, and no eager section to align with); its block "
                                    "and layer series say little, op codes and totals are still checked")
                for dim in by:
                    found = _check(conn, cand, hist, sec, dim, metrics, set(keys) if keys else None, threshold,
                                   min_us, meta[cand].time)
                    for f in found:
                        if f.kind == "regression":
                            f.contributors = _contributors(conn, f, cand, hist, sec)
                    findings += found
    findings.sort(key=lambda f: (f.kind != "regression", -abs(f.delta_pct or 0), -abs(f.delta_us)))
    return {"checked": checked, "invalid": invalid, "threshold": threshold, "min_us": min_us, "window": window,
            "metrics": metrics, "by": by, "warnings": warnings, "runs": {r: m.as_dict() for r, m in meta.items()},
            "regressions": [asdict(f) for f in findings if f.kind == "regression"],
            "improvements": [asdict(f) for f in findings if f.kind == "improvement"]}


def _check_keys(conn: Connection, runs: list[int], sections: list[str], by: list[str], keys: list[str]) -> None:
    """An unknown ``--key`` is an error, not an empty answer."""
    have: set[str] = set()
    for sec in sections:
        for dim in by:
            have |= {k for (_, k, _) in fetch(conn, runs[-1:], sec, dim, keys=keys)}
    missing = [k for k in keys if k not in have]
    if missing:
        raise NotFound(f"--key {missing[0]!r}: no such key for --by {', '.join(by)} in "
                       f"{', '.join(section_label(s) for s in sections)} of run {runs[-1]}")


COLUMNS = ["kind", "run_id", "time", "section", "by", "key", "device", "metric", "value_us", "baseline_us",
           "delta_us", "delta_pct", "noise_us", "top_op_codes"]


def _top(f: dict[str, Any]) -> str:
    return ", ".join(f"{c['op_code']} {c['delta_us']:+.1f}" for c in f["contributors"])


def as_rows(res: dict[str, Any]) -> list[list[Any]]:
    return [[f[c] if c != "top_op_codes" else _top(f) for c in COLUMNS]
            for f in res["regressions"] + res["improvements"]]


def verdict(res: dict[str, Any]) -> str:
    """The first line: counts, and which runs were checked against how many."""
    n, m = len(res["regressions"]), len(res["improvements"])
    runs = ", ".join(f"{c['short'][:-1] if c['short'].endswith(')') else c['short'] + ' ('}; vs {len(c['window'])} "
                     "runs)" for c in res["checked"])
    head = f"{n} regression(s), {m} improvement(s) in {runs or 'no run with history'}"
    for bad in res.get("invalid", []):
        head = (f"INVALID CAPTURE: {bad['short']}: {'; '.join(bad['problems'])} (not compared; left out of every "
                "baseline)\n") + head
    return head


def markdown(res: dict[str, Any]) -> str:
    """A CI summary: a verdict line and one table."""
    bad = "".join(f"**INVALID CAPTURE: {b['short']}**: {'; '.join(b['problems'])} (not compared; left out of every "
                  "baseline)\n\n" for b in res.get("invalid", []))
    head = bad + f"**{verdict({**res, 'invalid': []})}** " \
        f"(threshold {100 * res['threshold']:g} %, min {res['min_us']:g} us; metrics " \
           f"{', '.join(res['metrics'])})"
    if not res["regressions"] and not res["improvements"]:
        return head
    lines = [head, "",
             "| | run | section | by | key | device | metric | us | baseline us | Δ us | Δ % | top op codes |",
             "|---|---:|---|---|---|---|---|---:|---:|---:|---:|---|"]
    for f in res["regressions"] + res["improvements"]:
        mark = "🔺" if f["kind"] == "regression" else "🟢"
        pct = f"{f['delta_pct']:+.1f}" if f["delta_pct"] is not None else ""
        lines.append(f"| {mark} | {f['run_id']} | {f['section']} | {f['by']} | {f['key'].replace('|', chr(92) + '|')} "
                     f"| {f['device']} | {METRIC[f['metric']].label} | {f['value_us']:.1f} | {f['baseline_us']:.1f} | "
                     f"{f['delta_us']:+.1f} | {pct} | {_top(f).replace('|', chr(92) + '|')} |")
    return "\n".join(lines)
