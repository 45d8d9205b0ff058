"""The newest runs against the history of matching runs: what got slower (or faster), beyond the noise.

For each series (a key of a dimension in a section), the newest value is compared with the median of the window
of earlier runs. A change counts when it exceeds all of: ``threshold`` x median, ``min_us``, ``k`` robust sigmas
of the window (1.4826 x MAD), and the spread between the replay sessions of the run when it has several (the
in-run noise of identical replays, scaled to the total).
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Engine

from warehouse.series import check_section, default_section, fetch, fetch_replays, select_runs
from warehouse.errors import NotFound

SIGMAS = 3.0


@dataclass
class Finding:
    """One series that moved: ``kind`` is regression or improvement."""

    kind: str
    run_id: int
    section: str
    by: str
    key: str
    value_us: float
    baseline_us: float
    delta_us: float
    delta_pct: float | None
    noise_us: float
    window: int


def _noise(window: list[float], replays: list[float] | None) -> float:
    mid = statistics.median(window)
    mad = statistics.median([abs(v - mid) for v in window]) if len(window) > 1 else 0.0
    noise = SIGMAS * 1.4826 * mad
    if replays:
        # identical replays differ by this much; the total sums len(replays) of them
        noise = max(noise, (max(replays) - min(replays)) * len(replays) / 2)
    return noise


def find_regressions(engine: Engine, *, label: str | None = None, tags: dict[str, str] | None = None,
                     last: int = 1, window: int = 7, threshold: float = 0.05, min_us: float = 1.0,
                     by: list[str] | None = None, section: str | None = None) -> dict[str, Any]:
    """Compare each of the ``last`` newest matching runs with the ``window`` matching runs before it."""
    by = by or ["section", "block", "layer", "op-code"]
    findings: list[Finding] = []
    with engine.connect() as conn:
        runs = select_runs(conn, label, tags)
        if not runs:
            raise NotFound("no runs match" + (f" label {label!r}" if label else "") + (f" tags {tags}" if tags else ""))
        check_section(conn, section, runs[-(last + window):])
        checked = []
        for i in range(max(0, len(runs) - last), len(runs)):
            cand, hist = runs[i], runs[max(0, i - window):i]
            if not hist:
                continue
            sec = section if section is not None else default_section(conn, [cand, *hist])
            sec = "" if sec == "all" else sec
            checked.append({"run_id": cand, "window": hist, "section": sec or "(no section)"})
            for dim in by:
                values = fetch(conn, dim, [cand, *hist], sec)
                now = values.get(cand, {})
                replays = fetch_replays(conn, dim, cand, sec)
                for key, v in now.items():
                    past = [values[h][key].kernel_us for h in hist if key in values.get(h, {})]
                    if len(past) < max(1, (len(hist) + 1) // 2):  # too new a key to judge
                        continue
                    base = statistics.median(past)
                    delta = v.kernel_us - base
                    noise = _noise(past, replays.get(key))
                    if abs(delta) > max(threshold * abs(base), min_us, noise):
                        findings.append(Finding("regression" if delta > 0 else "improvement", cand,
                                                sec or "(no section)", dim, key, round(v.kernel_us, 3),
                                                round(base, 3), round(delta, 3),
                                                round(100 * delta / base, 2) if base else None, round(noise, 3),
                                                len(past)))
    findings.sort(key=lambda f: (f.kind != "regression", -abs(f.delta_us)))
    return {"checked": checked, "threshold": threshold, "min_us": min_us, "window": window,
            "regressions": [asdict(f) for f in findings if f.kind == "regression"],
            "improvements": [asdict(f) for f in findings if f.kind == "improvement"]}


COLUMNS = ["kind", "run_id", "section", "by", "key", "value_us", "baseline_us", "delta_us", "delta_pct", "noise_us"]


def as_rows(res: dict[str, Any]) -> list[list[Any]]:
    return [[f[c] for c in COLUMNS] for f in res["regressions"] + res["improvements"]]


def markdown(res: dict[str, Any]) -> str:
    """A CI summary: a verdict line and one table."""
    n, m = len(res["regressions"]), len(res["improvements"])
    runs = ", ".join(f"run {c['run_id']} ({c['section']}, vs {len(c['window'])} runs)" for c in res["checked"])
    head = f"**{n} regression(s), {m} improvement(s)** in {runs or 'no run with history'} " \
           f"(threshold {100 * res['threshold']:g} %, min {res['min_us']:g} us)"
    if not n and not m:
        return head
    lines = [head, "", "| | run | by | key | us | baseline us | Δ us | Δ % |", "|---|---:|---|---|---:|---:|---:|---:|"]
    for f in res["regressions"] + res["improvements"]:
        mark = "🔺" if f["kind"] == "regression" else "🟢"
        pct = f"{f['delta_pct']:+.1f}" if f["delta_pct"] is not None else ""
        lines.append(f"| {mark} | {f['run_id']} | {f['by']} | {f['key'].replace('|', chr(92) + '|')} | "
                     f"{f['value_us']:.1f} | {f['baseline_us']:.1f} | {f['delta_us']:+.1f} | {pct} |")
    return "\n".join(lines)
