"""The gate: is tonight (or this PR's run) off its baseline? The last night of a history, judged series by series.

The history is :mod:`warehouse.history.select`'s (one label and tags; invalid captures, nights triaged invalid and
other models in no baseline). For each night checked:

1. **The whole run**: each night's run-wide level is the median over every (block, op code) pair of its value
   against the pair's own median; a night whose level moved beyond the levels' own noise and by 1 % or more is one
   whole-run cause (a clock, a driver, every op a little slower), and every key is judged beyond it.
2. **Every series** (each section, grouping, key, metric; per device for section totals and op codes) is judged by
   :mod:`warehouse.history.judge`: its baseline is the median of the ``window`` nights before (for a key whose step
   a person acknowledged, the nights from that step on: every other key keeps its window), its noise its own.
3. **Evidence**: a move blocks a merge only with what a real change leaves: it shows in eager and in the trace
   (they run the same ops), or in the trace's replays with the hiccuped one taken out, or on several devices, or in
   several of the key's (block, op code) pairs, or (a series nothing else measures) it is far beyond its noise and
   beyond what one op's hiccup can do (or two nights running). Then the move is read from its ops
   (:mod:`warehouse.history.hiccups`): hiccups at different ops are no change, whatever channels they passed, and a
   hiccup-sized jump of the same op in every measurement blocks once it holds two nights. A move
   without is *suspicious*: printed, never exit 3. ``section`` restricts what is reported, never what corroborates.
4. **Causes**: the moves are nested into causes (:mod:`warehouse.history.causes`) with their contributors.

A night that is an invalid capture is reported as such (the CLI exits 4), never judged.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, text

from warehouse.errors import NotFound
from warehouse.history.boundchange import with_bound_changes
from warehouse.history.causes import Cause, Group, Overlaps, cause_id, holds, nest, rank
from warehouse.history.evidence import PER_DEVICE, Night, Series, established, evidence, share
from warehouse.history.finding import Finding
from warehouse.history.hiccups import reread_from_ops
from warehouse.history.judge import Z_GATE, judge, night_levels
from warehouse.history.quality import judge as judge_quality, other_model
from warehouse.history.select import History, load
from warehouse.history.series import (ALL_DEVICES, RunMeta, Table, all_sections, attribution_gaps, by_run,
                                      check_keys, fetch, fetch_table, resolve_sections, run_meta, section_label,
                                      select_runs)
from warehouse.store.rollupsql import rollup_of
from warehouse.history.triage import decisions
from warehouse.history.wholecapture import as_nights, whole_id
from warehouse.history.wholenights import WholeNights, is_multi_host, whole_nights
from warehouse.registry.contract import EAGER, TRACE
from warehouse.registry.measures import DRILL_DOWN, METRIC, METRICS, ordered
from warehouse.store.listing import resolve_run
from warehouse.workers import collector

NOISE_NIGHTS = 30  # the valid nights before a run whose night-to-night moves give its series' noise
RUN_MIN_CHANGE = 0.01  # a whole-run cause moved at least this much (every op 1 % slower is news)
DEFAULT_BY = ["section", "block", "layer", "op-code"]
SAME_OPS_SLACK = 0.10  # a block's top op code in eager and in the trace moved alike: within this share of the move
SAME_OPS_SLACK_SEVERAL = 0.25  # ... or several of its op codes did, each within this share of its move
TOP_CONTRIBUTORS = 3


@dataclass
class Gate:
    """The gate's answer: the runs ``checked`` (each with its window, what it judged and its coverage), the
    ``findings`` one :class:`~warehouse.history.causes.Cause` per cause (by impact, contributors nested, triage
    state), the ``invalid`` captures, every series that moved (``regressions``, ``improvements``, ``suspicious``),
    the settings, the runs' metadata and, when gating against a baseline, what it was."""

    checked: list[dict[str, Any]]
    findings: list[Cause]
    invalid: list[dict[str, Any]]
    threshold: float
    min_us: float
    window: int
    metrics: list[str]
    by: list[str]
    warnings: list[str]
    runs: dict[int, dict[str, Any]]
    regressions: list[dict[str, Any]] = field(default_factory=list)
    improvements: list[dict[str, Any]] = field(default_factory=list)
    suspicious: list[dict[str, Any]] = field(default_factory=list)
    baseline: dict[str, Any] | None = None

    @property
    def regressed(self) -> bool:
        """Whether a cause is a regression (``regressions`` exits 3)."""
        return any(c.kind == "regression" for c in self.findings)

    def to_json(self) -> dict[str, Any]:
        """The document ``regressions --format json`` prints (``baseline`` only when gating against one)."""
        out = asdict(self)
        out["findings"] = [c.to_json() for c in self.findings]
        if self.baseline is None:
            del out["baseline"]
        return out


def find_regressions(engine: Engine, *, label: str | None = None, tags: dict[str, str] | None = None,
                     last: int = 1, window: int = 7, threshold: float = 0.05, min_us: float = 1.0,
                     by: list[str] | None = None, section: str | None = None, metrics: list[str] | None = None,
                     keys: list[str] | None = None, run: str | int | None = None,
                     baseline_label: str | None = None, baseline_tags: dict[str, str] | None = None) -> Gate:
    """Judge each of the ``last`` newest matching runs against the ``window`` valid runs before it.

    PR gating: with ``run`` (an id or 'latest'), ``baseline_label`` or ``baseline_tags``, the one run (default:
    the newest matching ``label``/``tags``) is judged against the ``window`` newest valid runs of the baseline
    (``baseline_label``/``baseline_tags``, default the run's own filter), with the same rules: triage honoured,
    another model said."""
    by = by or DEFAULT_BY
    metrics = metrics or [m.key for m in METRICS]
    with engine.connect() as conn, collector.paused():  # (as changes: arrays by the thousand, no cycle)
        if run is not None or baseline_label is not None or baseline_tags:
            return _against_baseline(conn, run, label, tags, baseline_label, baseline_tags, window, threshold,
                                     min_us, by, section, metrics, keys)
        h = load(conn, label=label, tags=tags, last=last + NOISE_NIGHTS + window + 7)
        gate = Gate([], [], [], threshold, min_us, window, metrics, by, list(h.warnings),
                    {r: h.meta[r].as_dict() for r in h.runs})
        nights = []
        for cand in h.newest(last):  # (a multi-host label: the newest of each rank)
            if h.problems.get(cand):
                gate.invalid.append({**h.meta[cand].as_dict(), "problems": h.problems[cand]})
                continue
            if cand in h.strangers:
                gate.warnings.append(f"{h.meta[cand].short()} {h.strangers[cand]}; it is judged all the same (pass "
                                     "--label to keep one model per history)")
            before = h.before(cand)
            if not before:
                gate.warnings.append(f"{h.meta[cand].short()} has no earlier valid run to compare with")
                continue
            if label is None and len({h.meta[r].label for r in [cand, *before[-window:]]}) > 1:
                gate.warnings.append(f"the window of run {cand} mixes labels "
                                     f"{sorted({str(h.meta[r].label) for r in [cand, *before[-window:]]})}; "
                                     "pass --label")
            breaks = [(d.by, d.key, d.run_id) for d in h.accepted() if d.run_id in h.runs
                      and h.runs.index(d.run_id) <= h.runs.index(cand) and h.rank.get(d.run_id) == h.rank.get(cand)]
            nights.append(Night(cand, before[-window:], before[-NOISE_NIGHTS:], breaks, before[-1]))
        _judge_nights(conn, gate, nights, h.meta, section, keys)
        for c in gate.checked:
            c["why"] = _judging(h, c["run_id"], label)
        if is_multi_host(h):  # (and each capture as a whole, against the captures before it)
            _join(gate, _wholes(conn, gate, whole_nights(conn, h, last, window, NOISE_NIGHTS, label), section, keys))
    return gate


def _wholes(conn: Connection, settings: Gate, w: WholeNights, section: str | None, keys: list[str] | None) -> Gate:
    """The gate of whole multi-host captures' nights, with the settings of ``settings`` (the stored metrics only:
    nothing is computed from a whole capture's ops)."""
    gate = Gate([], [], w.invalid, settings.threshold, settings.min_us, settings.window,
                [m for m in settings.metrics if METRIC[m].stored], settings.by, [],
                {r: m.as_dict() for r, m in w.meta.items()})
    _judge_nights(conn, gate, w.nights, w.meta, section, keys)
    for c in gate.checked:
        c["why"] = w.why[c["run_id"]]
    return gate


def _join(gate: Gate, whole: Gate) -> None:
    """``whole``'s nights and findings added to ``gate``'s (a run's metadata and warnings: its rank's own)."""
    gate.checked += whole.checked
    gate.findings += whole.findings
    gate.invalid += whole.invalid
    gate.regressions += whole.regressions
    gate.improvements += whole.improvements
    gate.suspicious += whole.suspicious
    gate.warnings += [x for x in whole.warnings if x not in gate.warnings]


def _judging(h: History, cand: int, label: str | None) -> str:
    """Why the gate judges this night: its place in the history by capture time (the newest, or the one before
    it that --last asks for)."""
    mine = [r for r in h.runs if h.rank.get(r) == h.rank.get(cand)]  # (a multi-host label: its rank's runs)
    back = len(mine) - 1 - mine.index(cand)
    which = "the newest" if not back else f"{back} before the newest"
    rank = f" rank {h.rank[cand]}" if h.rank.get(cand) is not None else ""
    return f"{which}{rank} run of {f'label {label!r}' if label else 'the history'} by capture time"


def _against_baseline(conn: Connection, run: str | int | None, label: str | None, tags: dict[str, str] | None,
                      baseline_label: str | None, baseline_tags: dict[str, str] | None, window: int,
                      threshold: float, min_us: float, by: list[str], section: str | None, metrics: list[str],
                      keys: list[str] | None) -> Gate:
    """One run against the newest valid runs of a baseline filter (see :func:`find_regressions`)."""
    if run is not None:
        cand = resolve_run(conn, str(run), label)
    else:
        mine = select_runs(conn, label, tags)
        if not mine:
            raise NotFound("no runs in the warehouse; ingest a CSV first")
        cand = mine[-1]
    h = load(conn, label=baseline_label if baseline_label is not None else label,
             tags=baseline_tags if baseline_tags else tags)
    pool = [r for r in h.valid if r != cand]
    if not pool:
        raise NotFound("the baseline has no valid run besides the one checked")
    meta = {**h.meta, **run_meta(conn, [cand])}
    gate = Gate([], [], [], threshold, min_us, window, metrics, by, list(h.warnings),
                {r: meta[r].as_dict() for r in [cand, *pool[-window:]]},
                baseline={"label": baseline_label, "tags": baseline_tags or {}, "runs": pool[-window:]})
    # the run's own capture quality, against the baseline's nights
    problems = judge_quality(conn, [*pool[-7:], cand], 7).get(cand)
    if problems:
        gate.invalid.append({**meta[cand].as_dict(), "problems": problems})
        return gate
    other = other_model(conn, cand, pool[-window:])
    if other:
        gate.warnings.append(f"{meta[cand].short()} {other}")
        gate.baseline["other_model"] = other  # type: ignore[index]
    breaks = [(d.by, d.key, d.run_id) for d in h.accepted()]  # (every acknowledged step is before the PR's run)
    _judge_nights(conn, gate, [Night(cand, pool[-window:], pool[-NOISE_NIGHTS:], breaks)], meta, section, keys)
    for c in gate.checked:
        c["why"] = "the run asked for" if run is not None else "the newest run of its own filter"
    return gate


# ------------------------------------------------------------------------------------------------ judging
def _judge_nights(conn: Connection, gate: Gate, nights: list[Night], meta: dict[int, RunMeta],
                  section: str | None, keys: list[str] | None) -> None:
    findings: list[Finding] = []
    computed: dict[tuple, Any] = {}  # metrics computed from the ops: each run's read once for every night
    for n in nights:
        runs = as_nights(sorted({n.cand, *n.base, *n.noise}), n.members)
        shown = resolve_sections(conn, section, [*n.base[-1:], n.cand])
        read = sorted({*shown, *all_sections(conn, [*n.base[-1:], n.cand])}) if section is not None else shown
        if keys is not None:
            check_keys(conn, [*n.base, n.cand], shown, gate.by, keys)
        if section is not None and set(read) - set(shown):
            gate.warnings.append(f"--section {section}: findings of {section_label(shown[0])} only; "
                                 f"{', '.join(section_label(s) for s in sorted(set(read) - set(shown)))} is still read "
                                 "to corroborate them")
        elif section is not None:
            gate.warnings.append(f"--section {section}: a section alone corroborates a move only by its replays, "
                                 "devices and pairs, or its size (no other section runs the same ops)")
        for sec in shown:
            gap = attribution_gaps(conn, n.cand, sec)
            if gap > 0.5 and any(d in ("block", "layer") for d in gate.by):
                gate.warnings.append(f"section {section_label(sec)} of run {n.cand}: {100 * gap:.0f} % of its ops "
                                     "have no block (no m: signposts, and no eager section to align with); its "
                                     "block and layer series say little, op codes and totals are still checked")
        tables = _Tables(conn, runs, gate.metrics, computed)
        levels = _levels(tables, read, gate.metrics)
        got, coverage = _night(conn, gate, n, runs, read, shown, levels, keys, meta, computed, tables)
        findings += got
        gate.checked.append({**meta[n.cand].as_dict(), "window": n.base,
                             "sections": [section_label(s) for s in shown], **coverage})
    findings.sort(key=lambda f: (f.kind != "regression", -abs(f.delta_pct or 0), -abs(f.delta_us)))
    gate.findings = _causes(conn, findings, meta) if findings else []
    for c in gate.findings if any(n.members for n in nights) else []:
        c.id = whole_id(c.id)  # (a whole capture's cause is not its first rank's)
    status = {d.id: d.status for d in decisions(conn, sorted({c.run_id for c in gate.findings}))}
    for c in gate.findings:
        c.triage = status.get(c.id)
    docs = [c.to_json() for c in gate.findings]
    with_bound_changes(conn, docs, {c["run_id"]: c["window"] for c in gate.checked})
    for c, d in zip(gate.findings, docs):
        c.bound_changes = d.get("bound_changes")
    gate.regressions = [asdict(f) for f in findings if f.kind == "regression"]
    gate.improvements = [asdict(f) for f in findings if f.kind == "improvement"]
    gate.suspicious = [asdict(f) for f in findings if f.kind == "suspicious"]


class _Tables:
    """The rollup tables of one checked night's runs, each read once (the run-wide level and the judgment both
    read the (block, op code) pairs, the most rows by far)."""

    def __init__(self, conn: Connection, runs: list[int], metrics: list[str], computed: dict[tuple, Any]) -> None:
        self.conn, self.runs, self.metrics, self.computed = conn, runs, metrics, computed
        self.read: dict[tuple, Table] = {}

    def get(self, section: str, dim: str, devices: bool = False, keys: list[str] | None = None) -> Table:
        k = (section, dim, devices, None if keys is None else tuple(keys))
        if k not in self.read:
            self.read[k] = fetch_table(self.conn, self.runs, section, dim, devices=devices, keys=keys,
                                       metrics=self.metrics, cache=self.computed)
        return self.read[k]


def _levels(tables: _Tables, sections: list[str], metrics: list[str]
            ) -> dict[str, tuple[np.ndarray, list[int], int]]:
    """Each stored time metric's run-wide level per night (columns: the night's runs), over every (block, op
    code) pair of every section, and how many pairs said."""
    runs = tables.runs
    tabs = [tables.get(sec, "block/op-code") for sec in sections]
    out: dict[str, tuple[np.ndarray, list[int], int]] = {}
    for mk in metrics:
        if mk == "span" or not METRIC[mk].stored:
            continue
        parts = []
        for tab in tabs:
            if not tab.runs:
                continue
            m = np.full((len(tab.keys), len(runs)), np.nan)
            cols = [runs.index(r) for r in tab.runs]
            m[:, cols] = tab.values[mk]
            parts.append(m)
        if not parts:
            continue
        allm = np.vstack(parts)
        out[mk] = (night_levels(allm), runs, int(np.isfinite(allm).any(axis=1).sum()))
    return out


def _night(conn: Connection, gate: Gate, n: Night, runs: list[int], read: list[str], shown: list[str],
           levels: dict[str, tuple[np.ndarray, list[int], int]], keys: list[str] | None,
           meta: dict[int, RunMeta], computed: dict[tuple, Any], tables: _Tables
           ) -> tuple[list[Finding], dict[str, Any]]:
    """The findings of one night, and its coverage: series judged, with too little history, keys new and gone."""
    time = meta[n.cand].time
    out: list[Finding] = []
    if keys is None:
        out += _whole_run(conn, gate, n, runs, read, levels, time)
    series: list[Series] = []
    coverage = {"series_judged": 0, "too_little_history": 0, "new_keys": 0, "gone_keys": 0}
    for sec in read:
        for dim in dict.fromkeys([*gate.by, "block/op-code"] if set(gate.by) & {"block", "op-code"} else gate.by):
            tab = tables.get(sec, dim, dim in PER_DEVICE,
                             sorted(keys) if keys is not None and dim != "block/op-code" else None)
            c = tab.column(n.cand)
            if c is None:
                continue
            mine = tab.keys_of(c)
            base_cols = [tab.column(r) for r in n.base]
            noise_cols = np.array([j for j in (tab.column(r) for r in n.noise) if j is not None], dtype=np.intp)
            need = _need(gate, n)
            plain = np.array([b for b in base_cols if b is not None], dtype=np.intp)
            rows_base = [_baseline_cols(tab, n, plain, tab.keys[i][0], dim) for i in mine] if n.breaks \
                else [plain] * len(mine)
            for mk in gate.metrics:
                m = METRIC[mk]
                if dim == "block/op-code" and (mk == "span" or not m.stored):
                    continue
                vals = tab.values[mk][mine]
                lv = _table_levels(levels.get(mk if mk != "span" else "kernel"), tab, m.stored and m.unit == "us")
                # (a count per iteration, ops of a Bound class, is judged as count + 1: none to one is a move)
                off = 1.0 if m.unit == "ops" else 0.0
                j = judge(vals + off, tab.spreads[mk][mine], tab.iterations[mine] if tab.iterations is not None
                          else np.ones_like(vals), lv, c, rows_base, noise_cols)
                j.now, j.base = j.now - off, j.base - off
                series.append(Series(sec, dim, mk, tab, mine, j, lv))
                if sec in shown and dim != "block/op-code":
                    judged = np.isfinite(j.now) & (j.n_base >= need)
                    coverage["series_judged"] += int(judged.sum())
                    coverage["too_little_history"] += int((np.isfinite(j.now) & (j.n_base < need)).sum())
                    if mk == "kernel":
                        coverage["new_keys"] += int((np.isfinite(j.now) & (j.n_base == 0)).sum())
                        past = np.isfinite(tab.values[mk][:, plain]).sum(axis=1)
                        coverage["gone_keys"] += int(((past * 2 >= max(1, len(n.base)))
                                                      & ~np.isfinite(tab.values[mk][:, c])).sum())
    index = {(s.section, s.dim, s.metric): s for s in series}
    origin: dict[int, tuple[Series, int]] = {}  # a finding's place in ``out``: its series and row
    for s in series:
        if s.section not in shown or s.dim == "block/op-code":
            continue
        m = METRIC[s.metric]
        need = _need(gate, n)
        for r, i in enumerate(s.rows):
            key, dev = s.table.keys[i]
            if dev != ALL_DEVICES and s.dim != "section":
                continue  # (a key's devices corroborate it; only a device's own total is a finding of its own)
            jj = s.j
            if not (np.isfinite(jj.now[r]) and np.isfinite(jj.rel[r]) and jj.n_base[r] >= need):
                continue
            delta = float(jj.now[r] - jj.base[r])
            if abs(jj.rel[r]) <= gate.threshold or jj.z[r] < Z_GATE or abs(delta) < m.floor_of(gate.min_us):
                continue
            if established(s, r, n, gate.threshold):
                continue
            ev = evidence(s, r, index, gate.threshold, n)
            up = jj.rel[r] > 0
            kind = ("regression" if up == (m.worse > 0) else "improvement") if ev else "suspicious"
            origin[len(out)] = (s, r)
            out.append(Finding(kind, n.cand, time, section_label(s.section), s.dim, key,
                               "all" if dev == ALL_DEVICES else str(dev), s.metric, round(float(jj.now[r]), 3),
                               round(float(jj.base[r]), 3), round(delta, 3), round(100 * float(jj.rel[r]), 2),
                               round(float(jj.sigma[r] * jj.base[r]), 3), int(jj.n_base[r]),
                               z=round(float(jj.z[r]), 1), evidence=ev, unit=m.unit))
    layers = {f.key for f in out if f.by == "layer" and f.kind != "improvement"}
    cache: dict[tuple, Any] = {}
    for f in out:
        if f.kind != "improvement" and f.by in DRILL_DOWN:
            sec = "" if f.section == "(whole run)" else f.section
            f.contributors = _contributors(conn, f, n, sec, cache, layers, gate.metrics)
    _same_ops(conn, out, n, cache, layers, gate.metrics)
    reread_from_ops(conn, out, origin, n, gate.threshold, computed)
    return out, coverage


MIN_JUDGE = 3  # baseline nights a series needs to be judged (fewer: insufficient data), unless --window is smaller


def _need(gate: Gate, n: Night) -> int:
    """The baseline nights a series needs on night ``n``: half its window, and at least MIN_JUDGE (or the whole
    window a user asked to be smaller): one or two nights say nothing of a series' noise."""
    return max(1, min(MIN_JUDGE, gate.window), (len(n.base) + 1) // 2)


def _same_ops(conn: Connection, found: list[Finding], n: Night, cache: dict[tuple, Any], layers: set[str],
              metrics: list[str]) -> None:
    """A block's or layer's move that only eager and the trace corroborate must come from the same op code in both,
    moved by a like share: a hiccup in each section (common on a big model with many hiccups) hits whichever op,
    by whatever amount. Such a move that does not is suspicious."""
    for f in found:
        if f.kind == "suspicious" or f.by not in DRILL_DOWN or f.evidence != ["eager and trace"]:
            continue
        other = {EAGER: TRACE, TRACE: EAGER}.get(f.section)
        if other is None:
            continue
        mine = f.contributors or _contributors(conn, f, n, f.section, cache, layers, metrics)
        twin = Finding(f.kind, f.run_id, f.time, other, f.by, f.key, f.device, f.metric, 0, 0, 0, None, 0, 0)
        theirs = _contributors(conn, twin, n, other, cache, layers, metrics)
        if not mine or not theirs:
            continue
        a, b = mine[0], theirs[0]
        # (by share, not by microseconds: a replay runs the same ops faster than eager, by the same share)
        alike = a["op_code"] == b["op_code"] and _alike(share(a), share(b), SAME_OPS_SLACK)
        # ... or several of its op codes moved alike in both, each within a quarter of its move: a hiccup is one
        # op; a change of the block moves all of its op codes (each op's share carries its own noise, which a
        # tenth does not cover: a +30 % block read +27 % and +30 %)
        twins = [(x, y) for x in mine for y in theirs if x["op_code"] == y["op_code"]]
        alike = alike or (len(twins) >= 2 and all(_alike(share(x), share(y), SAME_OPS_SLACK_SEVERAL)
                                                  for x, y in twins))
        if not alike:
            f.kind, f.evidence = "suspicious", []


def _alike(da: float, db: float, slack: float) -> bool:
    """Two log shares of one op code's move, in eager and in the trace: the same way, within ``slack`` of it."""
    return da * db > 0 and abs(da - db) <= slack * max(abs(da), abs(db))


def _table_levels(level: tuple[np.ndarray, list[int], int] | None, tab: Table, apply: bool) -> np.ndarray:
    """The run-wide level of each of ``tab``'s columns (1 where the metric has none: a count, a utilisation)."""
    if level is None or not apply:
        return np.ones(len(tab.runs))
    lv, cols, _ = level
    return np.array([lv[cols.index(r)] for r in tab.runs])


def _baseline_cols(tab: Table, n: Night, plain: np.ndarray, key: str, dim: str) -> np.ndarray:
    """A key's baseline columns: the window (``plain``), from the night of a step a person acknowledged on this
    key (or on a key that holds it) on, when there is one before the checked night."""
    starts = [tab.runs.index(night) for b_by, b_key, night in n.breaks
              if night in tab.runs and _rebaselines(b_by, b_key, dim, key)]
    return plain[plain >= max(starts)] if starts else plain


def _rebaselines(b_by: str, b_key: str, dim: str, key: str) -> bool:
    """Whether an acknowledged step of ``b_by``/``b_key`` moves the baseline of this series: its own key, and the
    section totals (which hold it); the whole run's and a device's move every key."""
    if b_key == "all" or b_by == "device":
        return True
    if (b_by, b_key) == (dim, key):
        return True
    return dim == "section" and key == "total"


def _whole_run(conn: Connection, gate: Gate, n: Night, runs: list[int], sections: list[str],
               levels: dict[str, tuple[np.ndarray, list[int], int]], time: str | None) -> list[Finding]:
    """The whole run's move per metric (see the module docstring): one finding each, which the keys are then
    judged beyond. Its figures are the measured sums of the section totals."""
    out = []
    totals = {sec: by_run(fetch(conn, runs, sec, "section")) for sec in sections}
    for mk, (lv, cols, npairs) in levels.items():
        if npairs < 3:
            continue
        c = cols.index(n.cand)
        base = [cols.index(r) for r in n.base if r in cols]
        noise = [cols.index(r) for r in n.noise if r in cols]
        # (a whole-run step a person acknowledged: the baseline starts at its night)
        starts = [cols.index(night) for b_by, b_key, night in n.breaks
                  if night in cols and _rebaselines(b_by, b_key, "section", "all")]
        if starts:
            base = [b for b in base if b >= max(starts)]
        if not base:
            continue
        logs = np.log(lv)
        mid = float(np.median(logs[base]))
        moves = np.abs(np.diff(logs[noise])) if len(noise) >= 3 else np.array([])
        sigma = max(1.4826 * float(np.median(moves)) / math.sqrt(2) if len(moves) else 0.0, 1e-3)
        d = float(logs[c] - mid)
        z = abs(d) / (sigma * math.sqrt(1 + (math.pi / 2) / len(base)))
        if abs(math.expm1(d)) < RUN_MIN_CHANGE or z < Z_GATE:
            continue
        now = base_sum = 0.0
        for sec in sections:
            pts = totals[sec]
            p = pts.get(n.cand, {}).get(("total", ALL_DEVICES))
            past = [pts[h][("total", ALL_DEVICES)].values.get(mk) or 0.0 for h in n.base
                    if ("total", ALL_DEVICES) in pts.get(h, {})]
            if p is None or not past:
                continue
            now += p.values.get(mk) or 0.0
            base_sum += float(np.median(past))
        if not base_sum or abs(now - base_sum) < METRIC[mk].floor_of(gate.min_us):
            continue
        up = d > 0
        out.append(Finding("regression" if up == (METRIC[mk].worse > 0) else "improvement", n.cand, time,
                           "(whole run)", "section", "all", "all", mk, round(now, 3), round(base_sum, 3),
                           round(now - base_sum, 3), round(100 * math.expm1(d), 2), round(sigma * base_sum, 3),
                           len(base), z=round(z, 1), evidence=[f"{npairs} (block, op code) pairs"]))
    return out


def _contributors(conn: Connection, f: Finding, n: Night, section: str,
                  cache: dict[tuple, Any] | None = None, layers: set[str] | None = None,
                  metrics: list[str] | None = None) -> list[dict[str, Any]]:
    """The op codes inside a moved block or layer that moved most on night ``n`` against its window, on the same
    metric and device (the drill-down rows are read once per section and grouping, whatever the number of
    findings; ``layers``: every layer of the section that will be asked about, when the drill-down is computed from
    the ops)."""
    cand, hist = n.cand, n.base
    sub = DRILL_DOWN.get(f.by)
    if sub is None:
        return []
    dev = ALL_DEVICES if f.device == "all" else int(f.device)
    prefix = f.key + " / "
    ck = (cand, section, sub, dev != ALL_DEVICES)
    if cache is not None and ck in cache:
        points = cache[ck]
    else:
        points = by_run(fetch(conn, as_nights([cand, *hist], n.members), section, sub, devices=dev != ALL_DEVICES,
                              layers=(layers or {f.key}) if f.by == "layer" else None, metrics=metrics or []))
        if cache is not None:
            cache[ck] = points
    moved: list[dict[str, Any]] = []
    for (key, d), p in points.get(cand, {}).items():
        if d != dev or not key.startswith(prefix):
            continue
        past = [points[h][(key, d)].values.get(f.metric) or 0.0 for h in hist if (key, d) in points.get(h, {})]
        base = float(np.median(past)) if past else 0.0
        moved.append({"op_code": key[len(prefix):], "value_us": round(p.values.get(f.metric) or 0.0, 3),
                      "delta_us": round((p.values.get(f.metric) or 0.0) - base, 3)})
    moved.sort(key=lambda m: (-abs(m["delta_us"]), m["op_code"]))
    return moved[:TOP_CONTRIBUTORS]


def _causes(conn: Connection, findings: list[Finding], meta: dict[int, RunMeta]) -> list[Cause]:
    """One cause per night and cause (the JSON contract of ``findings``): see :mod:`warehouse.history.causes`."""
    runs = sorted({f.run_id for f in findings})
    inlist = ", ".join(str(int(r)) for r in runs)
    pairs = {(r, k) for r, k in conn.execute(text(
        f"SELECT DISTINCT run_id, key FROM {rollup_of(['block/op-code'])} WHERE grouping = 'block/op-code' "
        f"AND run_id IN ({inlist})"))}
    layer_block = {layer: block for block, layer in conn.execute(text("SELECT block, layer FROM place")) if layer}
    out: list[Cause] = []
    for run in runs:
        mine = [f for f in findings if f.run_id == run]
        layer_codes = {f.key: [(c["op_code"], c["delta_us"]) for c in f.contributors]
                       for f in mine if f.by == "layer" and f.metric == "kernel"}
        overlaps = Overlaps({k for r, k in pairs if r == run}, layer_block, layer_codes)
        merged: dict[tuple, list[Finding]] = {}
        for f in mine:
            by, key = ("device", f.device) if f.by == "section" and f.key == "total" and f.device != "all" \
                else (f.by, f.key)
            merged.setdefault((f.kind, by, key), []).append(f)
        groups = []
        for (kind, by, key), fs in merged.items():
            main = max(fs, key=lambda f: (f.metric == "kernel", abs(f.delta_us)))
            groups.append(Group(by, key, kind, (main.delta_pct or 0) > 0, main, fs))
        # (regressions and improvements nest apart; a suspicious move a regression holds is part of it, the rest
        # are causes of their own, never above a regression)
        regs = nest([g for g in groups if g.kind == "regression"], overlaps)
        loose = []
        for g in sorted((g for g in groups if g.kind == "suspicious"), key=rank):
            # (on any metric: a layer whose FW time alone moved inside a block whose kernel time regressed)
            home = next((t for t in regs if holds(t[0], g, overlaps) or holds(
                t[0], replace(g, main=replace(g.main, metric=t[0].main.metric)), overlaps)), None)
            if home is None:
                loose.append(g)
            else:
                home[1].append(g)
        for tops in (regs, nest(loose, overlaps), nest([g for g in groups if g.kind == "improvement"], overlaps)):
            out += [_cause(top, kids, meta) for top, kids in tops]
    out.sort(key=lambda c: ({"regression": 0, "suspicious": 1, "improvement": 2}[c.kind], -abs(c.delta_us)))
    return out


def _cause(top: Group, kids: list[Group], meta: dict[int, RunMeta]) -> Cause:
    main: Finding = top.main
    m = meta.get(main.run_id)
    noise = max(main.noise_us, 1e-9)
    c = Cause(cause_id("r", m.label if m else "", top.kind, top.by, top.key, main.run_id), top.kind, top.by,
              top.key, main.time, main.run_id, main.baseline_us, main.value_us, main.delta_pct, main.delta_us,
              round(1 - math.erfc(abs(main.delta_us) / noise / math.sqrt(2)), 6),
              sorted({f.section for f in top.members}), ordered({f.metric for f in top.members}),
              sorted({f.device for f in top.members}), unit=main.unit, z=main.z, tags=m.tags if m else {},
              evidence=sorted({e for f in top.members for e in f.evidence}), window=main.window,
              top_op_codes=main.contributors, worse=(main.delta_us > 0) == (METRIC[main.metric].worse > 0))
    c.contributors = sorted((_cause(k, [], meta).to_json() for k in kids), key=lambda d: -abs(d["delta_us"]))
    return c
