"""A :class:`warehouse.history.gate.Gate` as text lines, a pull-request comment within GitHub's limit, or rows of
every series that moved."""
from __future__ import annotations

from typing import Any

from warehouse.history.boundchange import describe
from warehouse.registry.measures import METRIC
from warehouse.history.gate import Gate
from warehouse.render import rows as rowfmt

COLUMNS = ["kind", "run_id", "time", "section", "by", "key", "device", "metric", "value_us", "baseline_us",
           "delta_us", "delta_pct", "noise_us", "top_op_codes"]


def _top(f: dict[str, Any]) -> str:
    return ", ".join(f"{c['op_code']} {c['delta_us']:+.1f}" for c in f["contributors"])


def as_rows(res: Gate) -> list[list[Any]]:
    """Every series that moved, a row each (:data:`COLUMNS`)."""
    return [[f[c] if c != "top_op_codes" else _top(f) for c in COLUMNS]
            for f in res.regressions + res.improvements]


def _causes_of(res: Gate, kind: str) -> list[dict[str, Any]]:
    return [c for c in res.findings if c["kind"] == kind]


def _name(c: dict[str, Any]) -> str:
    return "whole run" if c["key"] == "all" and c["by"] == "section" else f"{c['by']} {c['key']}"


def verdict(res: Gate, invalid: bool = True) -> str:
    """The first line: causes (and the series behind them), and which runs were checked against how many (after
    a line per invalid capture, unless not ``invalid``)."""
    regs, imps = _causes_of(res, "regression"), _causes_of(res, "improvement")
    runs = ", ".join(f"{c['short'][:-1] if c['short'].endswith(')') else c['short'] + ' ('}; vs {len(c['window'])} "
                     "runs)" for c in res.checked)
    head = (f"{len(regs)} regression(s), {len(imps)} improvement(s) ({len(res.regressions)} and "
            f"{len(res.improvements)} series) in {runs or 'no run with history'}")
    for bad in res.invalid if invalid else []:
        head = (f"INVALID CAPTURE: {bad['short']}: {'; '.join(bad['problems'])} (not compared; left out of every "
                "baseline)\n") + head
    return head


def text_lines(res: Gate, contributors: int = 5) -> list[str]:
    """One line per cause, by impact, with its contributors indented under it."""
    out = []
    for c in res.findings:
        pct = f"{c['change_pct']:+.1f} %" if c["change_pct"] is not None else ""
        u = c.get("unit", "us")  # (a computed metric's own unit: %, ops)
        out.append(f"{'🔺' if c['kind'] == 'regression' else '🟢'} {c['kind']} {_name(c)}: {pct} "
                   f"({c['before']:.1f} -> {c['after']:.1f} {u}, {c['delta_us']:+.1f} {u}) in run {c['run_id']} "
                   f"({(c['time'] or '')[:16]}); {', '.join(c['sections'])}; {'+'.join(c['metrics'])}"
                   + (f"; device {','.join(d for d in c['devices'] if d != 'all')}"
                      if any(d != "all" for d in c["devices"]) else ""))
        for k in c["contributors"][:contributors]:
            kp = f" ({k['change_pct']:+.1f} %)" if k["change_pct"] is not None else ""
            out.append(f"    {_name(k)}: {k['delta_us']:+.1f} {k.get('unit', 'us')}{kp}; {', '.join(k['sections'])}"
                       f"{'' if k['metrics'] == c['metrics'] else '; ' + '+'.join(k['metrics'])}")
        if len(c["contributors"]) > contributors:
            out.append(f"    ... {len(c['contributors']) - contributors} more inside it")
        out += [f"    {describe(b)}" for b in c.get("bound_changes", [])]
    return out


MD_BUDGET = 60_000  # GitHub refuses a comment over 65,536 characters


def _md(s: str) -> str:
    return rowfmt.md_text(s)


def text(res: Gate) -> str:
    """The verdict, then one line per cause with its contributors."""
    return "\n".join([verdict(res), *text_lines(res)])


def markdown(res: Gate, budget: int = MD_BUDGET) -> str:
    """A CI summary: a verdict line and one row per cause (contributors in the row); never over ``budget``
    characters ("N more" says what was left out)."""
    bad = "".join(f"**INVALID CAPTURE: {b['short']}**: {'; '.join(b['problems'])} (not compared; left out of every "
                  "baseline)\n\n" for b in res.invalid)
    head = bad + f"**{verdict(res, invalid=False)}** " \
        f"(threshold {100 * res.threshold:g} %, min {res.min_us:g} us; metrics {', '.join(res.metrics)})"
    causes = res.findings
    if not causes:
        return head
    lines = [head, "", "| | cause | Δ % | us | baseline us | Δ us | run | where | inside it |",
             "|---|---|---:|---:|---:|---:|---:|---|---|"]
    rows = []
    for c in causes:
        mark = "🔺" if c["kind"] == "regression" else "🟢"
        pct = f"{c['change_pct']:+.1f}" if c["change_pct"] is not None else ""
        where = f"{', '.join(c['sections'])}; {'+'.join(METRIC[m].label for m in c['metrics'])}"
        devs = [d for d in c["devices"] if d != "all"]
        if devs:
            where += f"; device {','.join(devs)}"
        inside = ", ".join(f"{_md(_name(k))} {k['delta_us']:+.1f}" for k in c["contributors"][:4])
        if len(c["contributors"]) > 4:
            inside += f" (+{len(c['contributors']) - 4})"
        u = "" if c.get("unit", "us") == "us" else f" {c['unit']}"
        rows.append(f"| {mark} | {_md(_name(c))} | {pct} | {c['after']:.1f}{u} | {c['before']:.1f}{u} | "
                    f"{c['delta_us']:+.1f}{u} | {c['run_id']} | {where} | {inside} |".replace("\n", " "))
    return "\n".join(rowfmt.within_budget(lines, rows, budget, "`warehouse regressions --format json`", reserve=120))
