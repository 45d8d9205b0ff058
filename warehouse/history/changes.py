"""The change points of a label's whole history, one finding per cause.

Fed from the rollups (runs x keys, never ops) and handed to the pure detector of :mod:`warehouse.history.changepoints`:

1. **Series**: per section (eager, trace, custom; the whole run for captures without sections), the section total
   (all devices, and each device of a multi-device capture), every block and every op code, on every metric
   (kernel, FW, op-to-op; span for totals), per iteration (the mean over trace replays; the replays' spread is
   the night's own noise).
2. **The run-wide level**: each night's level is the median, over every (block, op code) pair, of its value
   against its own median over the history: a clock, firmware or driver change moves every pair, one slowed block
   or op code moves few. Series are divided by it (devices by the median over devices), so that a night where
   everything is 0.4 % faster is one whole-run change, not one per key; the level itself is a series too.
3. **False alarms controlled over the model**: every series gets the p-value of its best split (Bonferroni over
   the splits, normal noise), and the threshold is the Benjamini-Hochberg cut at ``fdr`` over all series, never
   below ``min_sigmas``: more keys do not mean more false alarms.
4. **Causes**: detections on the same night and in the same direction are nested: the whole run over everything,
   a device over everything, then by impact (us per iteration), a block over the op codes inside it and an op code
   over the blocks it runs in; the same key seen in several sections or metrics is one finding listing where it
   shows. Contributors (the op codes of a block, the blocks of an op code) come from the same rows, in one pass.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import Engine

from warehouse.registry.contract import SECTIONS, TRACE  # the oracle's sections, which run the same ops
from warehouse.history.changepoints import Prepared, analyse, prepare_many, split_z
from warehouse.history.splits import MIN_AFTER, MIN_BEFORE
from warehouse.errors import NotFound, UsageError
from warehouse.registry.measures import METRIC, is_metric, ordered
from warehouse.history.fdr import combined, p_value, thresholds
from warehouse.history.levels import (Pairs, _level, _moved_itself, _robust_night, _without_outliers, replay_noises,
                                      robust_nights)
from warehouse.history.nightseries import HISTORY_METRICS, LEVEL_METRICS, SeriesData, fetch_history, fetch_pairs
from warehouse.history.series import RunMeta, run_meta, select_runs
from warehouse.history.boundchange import of_causes
from warehouse.history.causes import Cause, Group, Overlaps, cause_id, link_fixes, nest
from warehouse.history.hiccups import without_hiccup_steps
from warehouse.history.quality import judge, other_models
from warehouse.history.rowstats import row_medians
from warehouse.history.select import OneRank, in_range, ordered as history_order, rank_parts
from warehouse.history.wholecapture import (WholeCapture, judged_metrics, named, of_part, own_ids,
                                             whole_quality)
from warehouse.history.triage import decisions, invalid_runs
from warehouse.workers import collector, threads

METRICS = HISTORY_METRICS  # the stored ones, read by default; any of METRIC when asked
TOP_CONTRIBUTORS = 5
PAIRS_SEEN = 3  # a block or op code with this many (block, op code) pairs is also seen through their median
NEST_NIGHTS = 3  # a child's night is this close to its cause's (a noisy child may name a neighbouring night)
CORROBORATE = 2.0  # a key moved in one of its sections only must be this many times as clear


Change = Cause  # (``changes`` and the gate answer with one type: warehouse.history.causes.Cause)


@dataclass
class ChangesResult:
    """``changes`` (causes, by impact), ``outliers`` (one-night), what was read and the warnings."""

    label: str | None
    runs: list[dict[str, Any]]
    series: int
    threshold_sigmas: float | None  # None: no series passed the false-discovery rule
    fdr: float
    changes: list[Change]
    outliers: list[Change]
    warnings: list[str]
    invalid: list[dict[str, Any]] = field(default_factory=list)  # invalid captures left out (newest last)
    newest_invalid: bool = False  # the history's newest night is an invalid capture (the CLI exits 4)
    # what was judged: series judged, series with too few nights to judge, keys that appeared after the first
    # night and keys the newest night no longer has (neither is a change)
    coverage: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "runs": self.runs, "series": self.series, "invalid": self.invalid,
                "newest_invalid": self.newest_invalid, "coverage": self.coverage,
                "threshold_sigmas": self.threshold_sigmas, "fdr": self.fdr,
                "changes": [c.to_json() for c in self.changes], "outliers": [c.to_json() for c in self.outliers],
                "warnings": self.warnings}


@dataclass
class _Detection:
    section: str
    by: str
    key: str
    device: int
    metric: str
    kind: str
    night: int
    before: float
    after: float
    z: float
    p: float
    start: int | None = None
    per_night: float | None = None

    @property
    def up(self) -> bool:
        return self.after > self.before

    @property
    def delta(self) -> float:
        return self.after - self.before


def find_changes(engine: Engine, *, label: str | None = None, tags: dict[str, str] | None = None,
                 since: str | None = None, until: str | None = None, fdr: float = 0.01, min_sigmas: float = 6.0,
                 min_change: float = 0.01, min_us: float = 1.0, metrics: list[str] | None = None,
                 excluded: set[int] | None = None) -> ChangesResult:
    """The change points of the history of ``label`` (and ``tags``), between ``since`` and ``until`` (ISO dates,
    inclusive), one :class:`Change` per cause. ``min_change`` is the smallest relative change and ``min_us`` the
    smallest change in us per iteration reported; ``excluded`` run ids are left out of every series (invalid
    captures, nights triaged as invalid; a :class:`WholeCapture`: the history of multi-host captures as wholes)."""
    # (a multi-host label: one history per rank, found apart, and one of the captures as wholes)
    parts = rank_parts(engine, label, tags, excluded)
    if parts:
        return _joined(engine, parts, dict(label=label, tags=tags, since=since, until=until, fdr=fdr,
                                           min_sigmas=min_sigmas, min_change=min_change, min_us=min_us,
                                           metrics=metrics))
    metrics = list(metrics or METRICS)
    for m in metrics:
        if not is_metric(m):
            raise UsageError(f"metric {m!r}: expected one of {', '.join(METRIC)}, or col:<CSV column name>")
    metrics, warnings = judged_metrics(excluded, metrics)
    # (the collector off: a history's arrays, by the ten thousand, hold no cycle; its passes cost a tenth)
    with engine.connect() as conn, collector.paused():
        runs = select_runs(conn, label, tags)
        if not runs:
            raise NotFound("no runs in the warehouse; ingest a CSV first")
        # (the gate's order: a capture time in the future orders its run by its ingest time, with a warning)
        runs, said = history_order(conn, runs)
        warnings += said
        meta = run_meta(conn, runs)
        named(excluded, meta)
        # the detector reads the history before ``since`` too: a step a few nights into the view is then named on
        # its own night, with the id it has without ``since`` (never a night late, for want of its old level)
        shown = {r for r in runs if in_range(meta[r], since, until)}
        runs = [r for r in runs if in_range(meta[r], None, until)]
        if not shown:
            raise NotFound(f"no run of the history is between {since or 'its start'} and {until or 'its end'}; "
                           f"changes need at least {MIN_BEFORE + MIN_AFTER} nights")
        quality = judge(conn, runs)
        strangers = other_models(conn, runs)
        triaged = {d.id: d.status for d in decisions(conn, runs)}
        for r, why in invalid_runs(conn, runs).items():
            quality[r] = [why]
        quality = whole_quality(quality, excluded)  # (a whole capture: invalid when any of its ranks is)
        warnings += [f"{meta[r].short()} {strangers[r]}: left out" for r in sorted(set(strangers) & shown)]
        bad = {r for r, p in quality.items() if p} | set(excluded or ()) | set(strangers)
        warnings += [f"{meta[r].short()} is an invalid capture ({'; '.join(quality[r])}): left out"
                     for r in sorted(bad & shown) if quality.get(r)]
        invalid = [{**meta[r].as_dict(), "problems": quality[r]} for r in runs if quality.get(r) and r in shown]
        newest_invalid = bool(runs) and bool(quality.get(runs[-1]))
        runs = of_part(excluded, [r for r in runs if r not in bad])
        if len(runs) < MIN_BEFORE + MIN_AFTER:
            raise NotFound(f"{len(runs)} valid run(s) in the history; changes need at least "
                           f"{MIN_BEFORE + MIN_AFTER} nights")
        # the (block, op code) pairs first: their levels are taken in a thread of their own (numpy lets go of the
        # GIL) while this one reads the other series
        pair_data = fetch_pairs(conn, runs)
        data, pairs = threads.together(
            lambda: fetch_history(conn, runs, tuple(m for m in metrics if not METRIC[m].stored), pair_data),
            lambda: Pairs.ready(pair_data, len(runs), metrics, PAIRS_SEEN))
        res = _detect(data, runs, meta, label, metrics, fdr, min_sigmas, min_change, min_us, pairs)
        res.warnings = warnings
        own_ids(excluded, res.changes + res.outliers)
        res.changes = without_hiccup_steps(conn, res.changes, runs)
        link_fixes(res.changes, runs)  # (over the whole history: a step in view may undo one before it)
        _within(res, runs, shown)
        of_causes(conn, res.changes, runs, NEST_NIGHTS + 4)
    res.invalid, res.newest_invalid = invalid, newest_invalid
    for c in res.changes:
        c.triage = triaged.get(c.id)
    return res


def _joined(engine: Engine, parts: list[OneRank | WholeCapture], options: dict[str, Any]) -> ChangesResult:
    """Each rank's changes, then the whole captures', as one answer (every cause names its rank, or ``all``):
    runs, warnings and invalid captures once (a rank's own), coverage summed, the strictest threshold."""
    ps = [find_changes(engine, excluded=p, **options) for p in parts]
    sigmas = [p.threshold_sigmas for p in ps if p.threshold_sigmas is not None]

    def once(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:  # (each run's first: its rank's own)
        first: dict[int, dict[str, Any]] = {}
        return [first.setdefault(d["run_id"], d) for d in docs if d["run_id"] not in first]
    out = ChangesResult(ps[0].label, once([r for p in ps for r in p.runs]), sum(p.series for p in ps),
                        max(sigmas) if sigmas else None, ps[0].fdr, [c for p in ps for c in p.changes],
                        [c for p in ps for c in p.outliers], list(dict.fromkeys(w for p in ps for w in p.warnings)),
                        once([r for p in ps for r in p.invalid]), any(p.newest_invalid for p in ps))
    for k in {k for p in ps for k in p.coverage}:
        out.coverage[k] = sum(p.coverage.get(k, 0) for p in ps)
    return out


def _within(res: ChangesResult, runs: list[int], shown: set[int]) -> None:
    """What ``since`` shows of an answer found over the whole history: the changes and outlier nights on its
    nights, the runs and each change's series over them."""
    keep = [i for i, r in enumerate(runs) if r in shown]
    res.changes = [c for c in res.changes if c.run_id in shown]
    res.outliers = [c for c in res.outliers if c.run_id in shown]
    res.runs = [d for d in res.runs if d["run_id"] in shown]
    for c in res.changes:
        if c.series is not None and len(c.series) == len(runs):
            c.series = [c.series[i] for i in keep]


# a pass's answer: the series judged (section, grouping, key, device, metric, values, noise), moves, outliers, tau
_Passed = tuple[list[tuple[str, str, str, int, str, np.ndarray, float]], list["_Detection"], list["_Detection"], float]
# a cause before it is told: (grouping, key, kind, up, main detection, its detections)
_Top = tuple[str, str, str, bool, "_Detection", list["_Detection"]]

def _detect(data: SeriesData, runs: list[int], meta: dict[int, RunMeta],
            label: str | None, metrics: list[str], fdr: float, min_sigmas: float, min_change: float,
            min_us: float, pairs: Pairs | None = None) -> ChangesResult:
    """The changes of ``data`` (``pairs``: its (block, op code) pairs, when the caller has them ready)."""
    n = len(runs)
    sections = sorted({s for (s, _, _, _) in data})
    if any(s for s in sections):
        sections = [s for s in sections if s]  # the whole run would count replays k times
    pairs = Pairs.of(data, sections, n) if pairs is None else pairs  # (the sections judged hold every pair)
    first = _pass(data, n, sections, metrics, fdr, min_sigmas, min_change, min_us, set(), pairs)
    moved = {(d.section, d.by, d.key) for d in first[1]}
    return _finish(data, runs, meta, label, metrics, fdr, min_sigmas, min_change, min_us, sections, moved,
                   first, pairs)


def _finish(data: SeriesData, runs: list[int], meta: dict[int, RunMeta], label: str | None, metrics: list[str],
            fdr: float, min_sigmas: float, min_change: float, min_us: float, sections: list[str],
            moved: set[tuple[str, str, str]], first: _Passed,
            pairs: Pairs | None = None) -> ChangesResult:
    n = len(runs)
    # nothing moved in the first pass: the level had nothing to leave out, the second pass would be the same
    todo, found, outliers, tau = (_pass(data, n, sections, metrics, fdr, min_sigmas, min_change, min_us, moved,
                                        pairs) if moved else first)
    changes = _causes(found, data, runs, meta, label, tau)
    outs = _outlier_nights(outliers, runs, meta, label)
    return ChangesResult(label, [meta[r].as_dict() for r in runs], len(todo),
                         round(tau, 2) if math.isfinite(tau) else None, fdr, changes, outs, [],
                         coverage={"series_judged": len(todo), **_coverage(data, n, sections, metrics)})


def _coverage(data: SeriesData, n: int, sections: list[str], metrics: list[str]) -> dict[str, int]:
    """The series too short to judge (a figure on fewer nights than a change needs), and the keys (kernel time)
    that appeared after the history's first night or that its newest night no longer has."""
    short = new = gone = 0
    for (s, g, _key, dev), d in data.items():
        if s not in sections or g == "block/op-code" or (dev >= 0 and g != "section"):
            continue
        for m in metrics:
            if m in d and (m != "span" or g == "section"):
                got = int(np.isfinite(d[m]).sum())
                short += int(0 < got < MIN_BEFORE + MIN_AFTER)
        at = np.nonzero(np.isfinite(d.get("kernel", np.full(n, np.nan))))[0]
        if len(at):
            new += int(at[0] > 0)
            gone += int(at[-1] < n - 1)
    return {"too_little_history": short, "new_keys": new, "gone_keys": gone}


def _pass(data: SeriesData, n: int, sections: list[str], metrics: list[str], fdr: float, min_sigmas: float,
          min_change: float, min_us: float, moved: set[tuple[str, str, str]],
          pairs: Pairs | None = None) -> _Passed:
    """One detection pass. The run-wide level leaves out the (block, op code) pairs of the keys in ``moved``
    (what a first pass found changed), so that one op code that many blocks hold cannot move it.
    ``pairs`` keeps the levels of each block's and op code's pairs, which no pass changes."""
    pairs = Pairs.of(data, sections, n) if pairs is None else pairs
    levels = {m: pairs.run_wide(m, moved) for m in LEVEL_METRICS}
    levels["span"] = levels["kernel"]
    # the series are divided by the level without its own one-night outliers: a night when everything was slow
    # stays an outlier night in every series (and in the level), never a dip of every key
    steady_levels = {m: _without_outliers(lv) for m, lv in levels.items()}
    for m in metrics:  # a computed metric (a utilisation, a count) is its own figure: no run-wide level
        levels.setdefault(m, np.ones(n))
        steady_levels.setdefault(m, np.ones(n))
    dev_levels: dict[tuple[str, str], np.ndarray] = {}
    for s in sections:
        for m in metrics:
            devs = [d[m] for (s2, g, _, dev), d in data.items() if s2 == s and g == "section" and dev >= 0]
            if devs:
                dev_levels[(s, m)] = _level(devs, n)
    # Each device's own level, the median over its op codes (all sections) of their values against their own
    # medians: far steadier than its total, which one long op dominates; divided by the median over devices.
    dev_series: dict[int, dict[str, np.ndarray]] = {}
    devices = sorted({dev for (s, g, _, dev) in data if g == "op-code" and dev >= 0 and s in sections})
    if len(devices) > 1:
        for m in metrics:
            if m == "span" or not METRIC[m].stored:
                continue
            per = {dev: _level([_robust_night(d, m) for (s, g, _, d2), d in data.items()
                                if g == "op-code" and d2 == dev and s in sections], n) for dev in devices}
            with np.errstate(all="ignore"):
                common = np.nanmedian(np.vstack(list(per.values())), axis=0)
            for dev in devices:
                dev_series.setdefault(dev, {})[m] = per[dev] / common

    # A block's and an op code's series are also seen through their (block, op code) pairs: the median over the
    # pairs of each against its own median. A change of the block (or op code) moves every pair; one op's hiccup
    # moves one pair and not this series, so a hiccup on the night before a step cannot pull the step a night
    # early (the raw sum, still looked at, sees a change inside one pair)
    pairs.with_part_levels(metrics, PAIRS_SEEN)
    # the series to look at, each divided by its level
    todo: list[tuple[str, str, str, int, str, np.ndarray, float]] = []
    looked = [(sgkd, d, m) for sgkd, d in data.items() if sgkd[0] in sections and sgkd[1] != "block/op-code"
              and (sgkd[3] < 0 or sgkd[1] == "section" and sgkd[3] not in dev_series)
              for m in metrics if m != "span" or sgkd[1] == "section"]
    # (a device is looked at through its level over its op codes, below); every series' median at once
    # (np.nanmedian's numbers; one call a series cost a tenth of the pass)
    # (each series' nights robust to a hiccuped replay and its replays' noise, all at once too)
    v, sp, k = (np.vstack(x) if looked else np.empty((0, n)) for x in zip(
        *((d[m], d[f"{m}_spread"], d["iterations"]) for _, d, m in looked)))
    got, robust, noise = np.isfinite(v).sum(axis=1), robust_nights(v, sp, k), replay_noises(v, sp, k).tolist()
    medians = row_medians(v, overwrite=True)
    for i, ((s, g, key, dev), _d, m) in enumerate(looked):
        off = _OFFSET.get(METRIC[m].unit, 0.0)
        if got[i] < MIN_BEFORE + MIN_AFTER or medians[i] + off < METRIC[m].floor_of(min_us):
            continue
        lv = (dev_levels.get((s, m)) if METRIC[m].stored else None) if dev >= 0 else steady_levels[m]
        lv = np.ones(n) if lv is None else lv
        todo.append((s, g, key, dev, m, (robust[i] + off) / lv, noise[i]))
        part = pairs.part.get((s, g, key, m))
        if part is not None:
            todo.append((s, g, key, dev, m, medians[i] * part / lv, noise[i]))
    for m in metrics:
        if m != "span" and METRIC[m].stored:
            todo.append(("", "run", "all", -1, m, levels[m], 0.0))
    for dev, per_metric in dev_series.items():
        for m, y in per_metric.items():
            todo.append(("", "device", str(dev), dev, m, y, 0.0))

    floor = 1e-4
    ready = prepare_many([y for (*_, y, _rn) in todo], floor=floor, replay_noise=[rn for *_, rn in todo])
    best = [(p.best_z, len(p.z)) for p in ready]
    tau, bar = thresholds(best, fdr, min_sigmas)
    found: list[_Detection] = []
    outliers: list[_Detection] = []
    weak: list[_Detection] = []  # (steps under tau: kept when the other sections' evidence lifts them to it)
    for (s, g, key, dev, m, _y, _rn), p in zip(todo, ready):
        res = analyse(p, tau=tau, min_change=min_change)
        scale = _scale(data, s, g, key, dev, m, g == "run")
        off, least = _OFFSET.get(METRIC[m].unit, 0.0), METRIC[m].floor_of(min_us)
        for st, into in [*((x, found) for x in res.steps), *((x, weak) for x in (
                analyse(p, tau=bar, min_change=min_change).steps if s and bar < tau and not res.steps else []))]:
            if abs(st.after - st.before) * scale < least and g != "run" or not _moved_itself(
                    data, (s, g, key, dev), m, slice(max(0, st.index - 7), st.index), slice(st.index, st.index + 7),
                    math.copysign(min_change / 2, st.after - st.before)):  # (the week either side)
                continue
            into.append(_Detection(s, g, key, dev, m, "step", st.index, st.before * scale - off,
                                   st.after * scale - off, st.z, p_value(st.z, n)))
        if res.creep is not None:
            cr = res.creep
            # (a drift's own move: its last week against the week before it began)
            if (abs(cr.after - cr.before) * scale >= least or g == "run") and _moved_itself(
                    data, (s, g, key, dev), m, slice(max(0, cr.start_index - 7), cr.start_index + 1),
                    slice(-7, None), math.copysign(min_change / 2, cr.after - cr.before)):
                found.append(_Detection(s, g, key, dev, m, "creep", cr.index, cr.before * scale - off,
                                        cr.after * scale - off, cr.z, p_value(cr.z, n), start=cr.start_index,
                                        per_night=cr.per_night))
        for o in res.outliers:
            if o.z >= 2 * (tau if math.isfinite(tau) else min_sigmas):
                outliers.append(_Detection(s, g, key, dev, m, "outlier", o.index, o.expected * scale, o.value * scale,
                                           o.z, 0.0))
    return todo, found + _combined_with_other_sections(todo, ready, weak, tau), outliers, tau


def _combined_with_other_sections(todo: list[tuple[str, str, str, int, str, np.ndarray, float]],
                                  ready: list[Prepared], weak: list[_Detection], tau: float) -> list[_Detection]:
    """The steps just under ``tau`` in one section that reach it with the other sections' statistics for their
    night combined with their own (:mod:`warehouse.history.fdr`)."""
    by_section: dict[tuple[str, str, int, str], dict[str, Prepared]] = defaultdict(dict)
    for (s, g, key, dev, m, _y, _rn), p in zip(todo, ready):
        by_section[(g, key, dev, m)].setdefault(s, p)
    kept = []
    for w in weak:
        others = [split_z(p, w.night, w.up) for s, p in by_section[(w.by, w.key, w.device, w.metric)].items()
                  if s != w.section]
        if others and combined([w.z, *others]) >= tau:
            kept.append(w)
    return kept


# The detector works on logs of positive figures: a count per iteration (ops of a Bound class) is seen as
# count + 1, so that none of it to one of it is a step (log 2), not a night left out
_OFFSET = {"ops": 1.0}


def _scale(data: SeriesData, s: str, g: str, key: str, dev: int, m: str, run_level: bool) -> float:
    """What a normalised level of 1.0 is in us per iteration (the whole run: the sum of the section totals; a
    device: the sum of its section totals)."""
    if g == "device":
        tot = [np.nanmedian(d[m]) for (s2, g2, _, d2), d in data.items() if g2 == "section" and d2 == dev]
        return float(np.nansum(tot)) if tot else 1.0
    if run_level:
        tot = [np.nanmedian(d[m]) for (s2, g2, _, d2), d in data.items() if g2 == "section" and d2 == -1 and s2]
        tot = tot or [np.nanmedian(d[m]) for (s2, g2, _, d2), d in data.items() if g2 == "section" and d2 == -1]
        return float(np.nansum(tot)) if tot else 1.0
    return 1.0


def _by_of(d: _Detection) -> tuple[str, str]:
    if d.by == "run":
        return "section", "all"
    if d.by == "device":
        return "device", d.key
    if d.by == "section" and d.device >= 0:
        return "device", str(d.device)
    return d.by, d.key


def _causes(found: list[_Detection], data: SeriesData, runs: list[int], meta: dict[int, RunMeta],
            label: str | None, tau: float) -> list[Change]:
    """Nest detections into causes (see the module docstring), ordered by impact."""
    # 1. one finding per (by, key, kind, night, direction): the sections and metrics where it shows
    # (a key's creeps are one whichever night each says; its steps within a night of each other are one: eager
    # and trace, kernel and FW may name neighbouring nights when one of them is noisier)
    by_key: dict[tuple, list[_Detection]] = defaultdict(list)
    for d in found:
        by_key[(*_by_of(d), d.kind, d.up)].append(d)
    groups = []
    for (by, key, kind, up), ds in by_key.items():
        ds.sort(key=lambda d: -d.z)
        sets: list[list[_Detection]] = []
        for d in ds:
            home = next((g for g in sets if kind == "creep" or abs(g[0].night - d.night) <= 1), None)
            if home is None:
                sets.append([d])
            else:
                home.append(d)
        for g in sets:
            # the night most of the evidence names: the sum of z over the detections naming it (the trace, a mean
            # over replays, and the series seen through their pairs outweigh eager's one iteration, which a hiccup
            # can move by a night); the cause is told by that night's metric in the trace where it shows there (a
            # mean over replays, what the dashboard then draws), else by its largest move
            votes: dict[int, float] = defaultdict(float)
            for d in g:
                votes[d.night] += d.z
            night = max(votes, key=lambda k: (votes[k], -k))
            on = [d for d in g if d.night == night]
            main = max(on, key=lambda d: (d.metric == "kernel", d.z))
            main = max((d for d in on if d.metric == main.metric), key=lambda d: (d.section == TRACE, abs(d.delta)))
            if not _corroborated(g, data, tau):
                continue
            groups.append((by, key, kind, up, main, g))
    # 2. nest (warehouse.history.causes, as the gate does): the whole run over everything, a device over
    # everything, then by impact; a child must be held by its cause (a block holds the op codes that run in it, an
    # op code the blocks it runs in, a section total anything of its section), move the same way, no more than the
    # cause does, and on a night close to the cause's (or, under a creep, any night after it began)
    overlaps = Overlaps(pairs={k for (s, g, k, dev) in data if g == "block/op-code"})

    def when(top: Group, cand: Group) -> bool:
        t, c = top.main, cand.main
        if top.kind == "creep":  # a drift shows in its parts as drifts (from any night) or steps after it began
            return cand.kind == "creep" or c.night >= (t.start if t.start is not None else t.night) - 1
        return cand.kind == "step" and abs(c.night - t.night) <= NEST_NIGHTS

    tops = [((g.by, g.key, g.kind, g.up, g.main, g.members), [(k.by, k.key, k.kind, k.up, k.main, k.members)
                                                                for k in kids])
            for g, kids in nest([Group(*gr) for gr in groups], overlaps, when)]
    out = [_change(top, nested, data, runs, meta, label) for top, nested in tops]
    for c, (top, _nested) in zip(out, tops):
        c.series, c.series_of = _series_of(top[4], data)
    out.sort(key=lambda c: -abs(c.delta_us))
    return out


def _series_of(d: _Detection, data: SeriesData) -> tuple[list[float | None], str]:
    """The values behind a detection, per night, and what they are: its key's own series; the whole run's and a
    device's are the sums of their section totals (what their before and after are in)."""
    what = f"sum of the sections' {d.metric}" if d.by in ("run", "device") else \
        f"{d.section or 'whole run'} {d.metric}"
    if d.by in ("run", "device"):
        dev = -1 if d.by == "run" else d.device
        parts = [v[d.metric] for (s, g, _k, dv), v in data.items() if g == "section" and dv == dev]
        if not parts:
            return [], what
        with np.errstate(all="ignore"):
            stacked = np.vstack(parts)
            y = np.where(np.isfinite(stacked).any(axis=0), np.nansum(stacked, axis=0), np.nan)
    else:
        y = data[(d.section, d.by, d.key, d.device)][d.metric]
    return [round(float(v), 3) if math.isfinite(v) else None for v in y], what


def _corroborated(ds: list[_Detection], data: SeriesData, tau: float) -> bool:
    """A key that runs in several sections (eager and its trace run the same ops) and moved in one of them only
    must be twice as clear: the same kernels rarely change in one section alone, noise often does."""
    secs = {d.section for d in ds}
    if len(secs) > 1 or ds[0].by == "run":
        return True
    d0 = ds[0]
    elsewhere = any((s, d0.by, d0.key, d0.device) in data for s in SECTIONS if s not in secs)
    return not elsewhere or max(d.z for d in ds) >= CORROBORATE * tau


def _window_delta(v: np.ndarray, night: int, w: int = 7) -> tuple[float, float]:
    before = v[max(0, night - w):night]
    after = v[night:night + w]
    b = float(np.nanmedian(before)) if np.isfinite(before).any() else 0.0
    a = float(np.nanmedian(after)) if np.isfinite(after).any() else 0.0
    return b, a


def _change(top: _Top, nested: list[_Top], data: SeriesData, runs: list[int], meta: dict[int, RunMeta],
            label: str | None) -> Change:
    by, key, kind, up, main, ds = top
    night = main.night
    run = runs[night]
    m = meta[run]
    pct = 100 * (main.after / main.before - 1) if main.before else 0.0
    conf = max(0.0, 1 - min(1.0, min(d.p for d in ds)))
    contributors = [{k: v for k, v in _change(gr, [], data, runs, meta, label).to_json().items()
                     if k not in ("series", "series_of")}
                    for gr in nested]
    contributors += _drill(by, key, main, data, night, {(c["by"], c["key"]) for c in contributors})
    contributors.sort(key=_by_impact)
    return Cause(
        id=cause_id("c", label, kind, by, key, run, up), kind=kind, by=by, key=key, time=m.time, run_id=run,
        before=round(main.before, 3), after=round(main.after, 3), change_pct=round(pct, 2),
        delta_us=round(main.delta, 3), confidence=round(conf, 6), z=round(main.z, 1),
        sections=sorted({d.section or "(whole run)" for d in ds}), metrics=ordered({d.metric for d in ds}),
        unit=METRIC[main.metric].unit, worse=(main.after > main.before) == (METRIC[main.metric].worse > 0),
        devices=sorted({"all" if d.device < 0 else str(d.device) for d in ds}), tags=m.tags,
        since=meta[runs[main.start]].time if main.start is not None else None,
        per_night_pct=round(100 * main.per_night, 3) if main.per_night is not None else None,
        contributors=contributors[:TOP_CONTRIBUTORS + len(nested)])


def _drill(by: str, key: str, main: _Detection, data: SeriesData, night: int,
           seen: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """What moved inside a cause on its night: a block's op codes, an op code's blocks (us per iteration)."""
    if by not in ("block", "op-code"):
        return []
    out = []
    for (s, g, k, _), d in data.items():
        if g != "block/op-code" or s != main.section or main.metric not in d:
            continue
        b, _, c = k.partition(" / ")
        if (by == "block" and b == key) or (by == "op-code" and c == key):
            other = ("op-code", c) if by == "block" else ("block", b)
            if other in seen:
                continue
            before, after = _window_delta(d[main.metric], night)
            out.append({"kind": "contributor", "by": other[0], "key": other[1], "section": s,
                        "metric": main.metric, "before": round(before, 3), "after": round(after, 3),
                        "delta_us": round(after - before, 3),
                        "change_pct": round(100 * (after / before - 1), 2) if before else None})
    out.sort(key=_by_impact)
    return out[:TOP_CONTRIBUTORS]


def _by_impact(c: dict[str, Any]) -> tuple:
    """Contributors by the size of their change (as printed), then by name and section: an order that does not
    depend on the order a back end hands rows over (PostgreSQL's is its own)."""
    return -abs(c["delta_us"]), c["by"], c["key"], c.get("section") or ""


def _outlier_nights(outs: list[_Detection], runs: list[int], meta: dict[int, RunMeta],
                    label: str | None) -> list[Change]:
    """One entry per night with outliers: its strongest series, the others as contributors."""
    by_night: dict[int, list[_Detection]] = defaultdict(list)
    for o in outs:
        by_night[o.night].append(o)
    res = []
    for night, os_ in sorted(by_night.items()):
        # a night is worth naming when the whole run or a device was off, or a key was off in several sections
        # (every Matmul slower one night); one op hiccuping in one section is noise, not news
        keys = defaultdict(set)
        for o in os_:
            keys[_by_of(o)].add(o.section)
        wide = [o for o in os_ if o.by in ("run", "device") or len(keys[_by_of(o)]) > 1]
        if not wide:
            continue
        os_ = sorted(wide, key=lambda o: (o.by != "run", o.by != "device", -o.z))
        main = os_[0]
        by, key = _by_of(main)
        run = runs[night]
        m = meta[run]
        res.append(Cause(
            id=cause_id("o", label, "outlier", run), kind="outlier", by=by, key=key, time=m.time, run_id=run,
            before=round(main.before, 3),
            after=round(main.after, 3), change_pct=round(100 * (main.after / main.before - 1), 2) if main.before else 0,
            delta_us=round(main.delta, 3), confidence=1.0, z=round(main.z, 1),
            sections=sorted({o.section or "(whole run)" for o in os_}), metrics=sorted({o.metric for o in os_}),
            devices=sorted({"all" if o.device < 0 else str(o.device) for o in os_}), tags=m.tags,
            contributors=[{"by": _by_of(o)[0], "key": _by_of(o)[1], "section": o.section, "metric": o.metric,
                           "delta_us": round(o.delta, 3), "z": round(o.z, 1)} for o in os_[1:TOP_CONTRIBUTORS + 1]]))
    return res
