"""A :class:`warehouse.history.gate.Gate` as text lines, a pull-request comment within GitHub's limit, or rows of
every series that moved."""
from __future__ import annotations

from typing import Any

from warehouse.history.causes import Cause
from warehouse.history.gate import Gate
from warehouse.render import causes as cz
from warehouse.render import rows as rowfmt

COLUMNS = ["kind", "run_id", "time", "section", "by", "key", "device", "metric", "value_us", "baseline_us",
           "delta_us", "delta_pct", "noise_us", "z", "evidence", "top_op_codes"]
MD_BUDGET = 60_000  # GitHub refuses a comment over 65,536 characters


def _top(f: dict[str, Any]) -> str:
    return ", ".join(f"{c['op_code']} {c['delta_us']:+.1f}" for c in f["contributors"])


def as_rows(res: Gate) -> list[list[Any]]:
    """Every series that moved, a row each (:data:`COLUMNS`)."""
    return [[_top(f) if c == "top_op_codes" else "; ".join(f[c]) if c == "evidence" else f[c] for c in COLUMNS]
            for f in res.regressions + res.improvements + res.suspicious]


def _causes_of(res: Gate, kind: str) -> list[Cause]:
    return [c for c in res.findings if c.kind == kind]


def coverage(res: Gate) -> str:
    """What the gate judged: series judged, too new to judge, keys that appeared or went (never an improvement)."""
    n = {k: sum(int(c.get(k) or 0) for c in res.checked)
         for k in ("series_judged", "too_little_history", "new_keys", "gone_keys")}
    verdict = " (insufficient data)" if not n["series_judged"] and res.checked else ""
    return (f"coverage: {n['series_judged']:,} series judged{verdict}, {n['too_little_history']:,} with too little "
            f"history, {n['new_keys']:,} key(s) new and {n['gone_keys']:,} gone against the baseline")


def verdict(res: Gate, invalid: bool = True) -> str:
    """The first line: causes (and the series behind them), and which runs were checked against how many (after
    a line per invalid capture, unless not ``invalid``)."""
    regs, imps, sus = (_causes_of(res, k) for k in ("regression", "improvement", "suspicious"))
    runs = ", ".join(f"{c['short'][:-1] if c['short'].endswith(')') else c['short'] + ' ('}; vs {len(c['window'])} "
                     "runs)" for c in res.checked)
    head = (f"{len(regs)} regression(s), {len(imps)} improvement(s), {len(sus)} suspicious move(s) "
            f"({len(res.regressions)}, {len(res.improvements)} and {len(res.suspicious)} series) in "
            f"{runs or 'no run with history'}")
    for bad in res.invalid if invalid else []:
        head = (f"INVALID CAPTURE: {bad['short']}: {'; '.join(bad['problems'])} (not compared; left out of every "
                "baseline)\n") + head
    return head


def text_lines(res: Gate, contributors: int = 5) -> list[str]:
    """One line per cause, by impact, with its contributors indented under it."""
    return cz.text_lines(res.findings, contributors)


def judged(res: Gate) -> list[str]:
    """Which runs were judged, and why those (their place in the history by capture time)."""
    return [f"judged {c['short']}: {c['why']}" for c in res.checked if c.get("why")]


def text(res: Gate) -> str:
    """The verdict, the coverage, which runs were judged, then one line per cause with its contributors."""
    return "\n".join([verdict(res), coverage(res), *judged(res), *text_lines(res)])


def markdown(res: Gate, budget: int = MD_BUDGET) -> str:
    """A CI summary: a verdict line, the coverage and one row per cause (contributors in the row); never over
    ``budget`` characters ("N more" says what was left out)."""
    bad = "".join(f"**INVALID CAPTURE: {b['short']}**: {'; '.join(b['problems'])} (not compared; left out of every "
                  "baseline)\n\n" for b in res.invalid)
    head = bad + f"**{verdict(res, invalid=False)}** " \
        f"(threshold {100 * res.threshold:g} %, min {res.min_us:g} us; metrics {', '.join(res.metrics)})\n\n" \
        + coverage(res)
    if not res.findings:
        return head
    lines = [head, "", *cz.MD_HEAD]
    rows = [cz.md_row(c) for c in res.findings]
    return "\n".join(rowfmt.within_budget(lines, rows, budget, "`warehouse regressions --format json`", reserve=120))
