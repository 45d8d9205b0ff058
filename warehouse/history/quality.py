"""Capture quality: is a night's capture a measurement at all, before anyone compares its numbers?

A capture that crashed, was cut, or was written without device timings (0 ops, only signposts, every kernel
duration empty, zero or NaN, a section missing that its history always has, half the ops of each iteration) is an
*invalid capture*. The gate says so (it never passes one as "N improvements"), and such a run is left out of
every baseline so that it widens no noise and moves no median.

The rules are relative to the run's valid history where they can be (a model with 40 ops is not "cut" because
another has 4,000), absolute where nothing can excuse them (no ops, no timings). A change of replay count is not
a problem: history compares per-iteration figures.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import Connection, text

from warehouse.store.rollupsql import rollup_of, section_names, sql_list

# A night with fewer than this share of its history's per-iteration ops has lost part of its capture (a real
# change of model that large is a new history: see compare's warning).
COLLAPSE = 0.5


@dataclass
class RunQuality:
    """What the rules read of one run."""

    run_id: int
    ops: int  # device ops in the file
    kernel_us: float  # the whole run's kernel time (0: no op has a kernel duration)
    sections: dict[str, float] = field(default_factory=dict)  # section -> ops per iteration (all devices)
    invalid: list[str] = field(default_factory=list)  # what ingest saw in the file that makes it no measurement


def measure(conn: Connection, run_ids: list[int]) -> dict[int, RunQuality]:
    """The quality figures of runs: op counts from ``run``, the rest from the section rollups (a few rows a run,
    never its ops: a year of nights is judged in milliseconds)."""
    ids = [int(r) for r in dict.fromkeys(run_ids)]
    out: dict[int, RunQuality] = {}
    secs = sql_list(section_names(conn, ids))
    for k in range(0, len(ids), 500):
        inlist = ", ".join(map(str, ids[k:k + 500]))
        out.update({rid: RunQuality(rid, int(n or 0), 0.0) for rid, n in conn.execute(text(
            f"SELECT id, op_count FROM run WHERE id IN ({inlist})"))})
        for rid, sec, ops, kernel in conn.execute(text(
                f"SELECT run_id, section, ops, kernel_us FROM {rollup_of(['section'])} WHERE grouping = 'section' "
                "AND device = -1 "
                f"AND run_id IN ({inlist}) AND section IN ({secs})")):
            out[rid].sections[sec] = float(ops or 0)
            if sec == "":
                out[rid].kernel_us = float(kernel or 0)
        for rid, message in conn.execute(text(
                f"SELECT run_id, message FROM run_warning WHERE invalid AND run_id IN "
                f"({inlist}) ORDER BY run_id, id")):
            out[rid].invalid.append(message)
    return out


def problems(cand: RunQuality, history: list[RunQuality]) -> list[str]:
    """Why ``cand`` is not a valid capture, given its (valid) history; empty when it is one."""
    if cand.ops == 0:
        return ["no device ops (a header only, or only signposts): the capture recorded nothing"]
    out = list(cand.invalid)
    if cand.kernel_us <= 0:
        out.append(f"none of its {cand.ops} ops has a kernel duration (every one empty, zero or not a number)")
    if not history:
        return out
    names = [s for s in history[0].sections if s != "" and all(s in h.sections for h in history)]
    for sec in names:
        if sec not in cand.sections:
            out.append(f"section {sec} is missing (every run of its history has it): the capture stopped early?")
            continue
        usual = statistics.median(h.sections[sec] for h in history)
        if cand.sections[sec] < COLLAPSE * usual:
            out.append(f"section {sec} has {cand.sections[sec]:g} ops per iteration, against {usual:g} in its "
                       "history: a cut or partial capture")
    if not names:  # no sections to compare: the whole run
        usual = statistics.median(h.ops for h in history)
        if cand.ops < COLLAPSE * usual:
            out.append(f"{cand.ops} ops, against {usual:g} in its history: a cut or partial capture")
    return out


def judge(conn: Connection, runs: list[int], window: int = 7) -> dict[int, list[str]]:
    """Each run's problems (runs oldest first), each judged against up to ``window`` runs before it that have
    ops and timings: the median of several nights, so that one cut night moves nothing, and a model that really
    changed size is the new normal after a few nights. Callers leave runs with problems out of baselines."""
    q = measure(conn, runs)
    usable: list[RunQuality] = []
    out: dict[int, list[str]] = {}
    for rid in runs:
        if rid not in q:
            continue
        out[rid] = problems(q[rid], usable[-window:])
        if q[rid].ops and q[rid].kernel_us > 0:
            usable.append(q[rid])
    return out


# A run that shares less than this share of op codes with its history's usual set is another model.
SAME_MODEL = 0.5


def other_models(conn: Connection, runs: list[int]) -> dict[int, str]:
    """Runs that look like another model than the rest of ``runs`` (several models under one label): their op
    codes (the whole run's rollup keys) share less than ``SAME_MODEL`` with the op codes that most runs have.
    Returns ``{run: why}``; history leaves such runs out of baselines, as ``compare`` warns about them."""
    if len(runs) < 3:
        return {}
    codes: dict[int, set[str]] = {r: set() for r in runs}
    for k in range(0, len(runs), 500):
        inlist = ", ".join(str(int(r)) for r in runs[k:k + 500])
        for rid, key in conn.execute(text(
                f"SELECT run_id, key FROM {rollup_of(['op-code'])} WHERE grouping = 'op-code' AND device = -1 "
                "AND section = '' "
                f"AND run_id IN ({inlist})")):
            codes[rid].add(key)
    counts: dict[str, int] = {}
    for cs in codes.values():
        for c in cs:
            counts[c] = counts.get(c, 0) + 1
    usual = {c for c, n in counts.items() if n * 2 >= len(runs)}
    out = {}
    for rid, cs in codes.items():
        if not cs or not usual:
            continue
        share = len(cs & usual) / len(cs | usual)
        if share < SAME_MODEL:
            out[rid] = (f"shares {len(cs & usual)} of {len(cs | usual)} op codes with the rest of its history: "
                        "another model?")
    return out


def other_model(conn: Connection, cand: int, base: list[int]) -> str | None:
    """Why ``cand`` looks like another model than its baseline (it shares less than half of their op codes)."""
    codes: dict[int, set[str]] = defaultdict(set)
    ids = ", ".join(str(int(r)) for r in [cand, *base])
    for rid, key in conn.execute(text(
            f"SELECT run_id, key FROM {rollup_of(['op-code'])} WHERE grouping = 'op-code' AND device = -1 "
            f"AND section = '' AND run_id IN ({ids})")):
        codes[rid].add(key)
    usual = {c for r in base for c in codes[r] if sum(c in codes[b] for b in base) * 2 >= len(base)}
    mine = codes[cand]
    if not mine or not usual:
        return None
    share = len(mine & usual) / len(mine | usual)
    if share >= 0.5:
        return None
    return (f"shares {len(mine & usual)} of {len(mine | usual)} op codes with its baseline: another model? (its "
            "findings compare different programs)")
