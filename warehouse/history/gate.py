"""The newest runs against the history of matching runs: what got slower (or faster), beyond the noise.

Every series is checked: each section the runs have (eager, trace, custom pairs; the whole run when a capture
has no sections), each grouping of ``by`` (section totals, block, layer, op code by default), each metric
(kernel, op-to-op, FW time, span by default), all devices together and, for multi-device runs, each device.
Figures are per iteration (the mean over a trace's replays), so the same work replayed more or fewer times is
no change.

A change counts when it exceeds all of: ``threshold`` x the window's median, ``min_us``, ``SIGMAS`` robust sigmas
of the window (1.4826 x MAD), ``LONG_SIGMAS`` robust night-to-night sigmas of the series over its last
``NOISE_NIGHTS`` valid nights (a step does not widen them), and half the spread between the candidate's own
replays. Eager and the trace run the same ops: a kernel or FW change seen in one of them only is a change when
the other moved the same way by a third as much (one op's hiccup lands in one section); an op-to-op change in one
section must clear its bar twice. A regressed block or layer lists the op codes inside it that moved most (the
drill-down rollups).
"""
from __future__ import annotations

import hashlib
import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, text

from warehouse.history.boundchange import with_bound_changes
from warehouse.history.changepoints import robust_sigma, row_medians
from warehouse.registry.contract import EAGER, TRACE
from warehouse.errors import NotFound
from warehouse.registry.measures import DRILL_DOWN, METRIC, METRICS, nests_under, ordered, part_rank
from warehouse.history.quality import judge, other_models
from warehouse.history.series import (ALL_DEVICES, Table, attribution_gaps, by_run, fetch, fetch_table,
                                      resolve_sections, rollup_of, run_meta, section_label, select_runs)
from warehouse.history.triage import accepted_steps, invalid_runs
from warehouse.history.triage import decisions
from warehouse.store.listing import resolve_run

SIGMAS = 3.0
NOISE_NIGHTS = 30  # the valid nights before a run whose night-to-night moves give its series' noise
LONG_SIGMAS = 5.0  # ... and how many of their robust sigmas a change must clear
CORROBORATE = 2.0  # how much clearer a change seen in one of eager and trace only must be (see _corroborated)
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
    unit: str = "us"  # of value_us, baseline_us, delta_us and noise_us: the metric's (us for times)


def _noise(window: list[float], spreads: list[float | None]) -> float:
    """What the series moves by without a change: robust sigmas of the window, and half the spread between
    replays (of the candidate, or typical of the window): a mean over other replays moves that much."""
    mid = statistics.median(window)
    mad = statistics.median([abs(v - mid) for v in window]) if len(window) > 1 else 0.0
    known = [s for s in spreads if s is not None]
    return max(SIGMAS * 1.4826 * mad, max(known, default=0.0) / 2)


def run_factor(pairs: dict[str, Table], cand: int, hist: list[int], metric: str) -> tuple[float, float]:
    """How much the whole run moved: the median, over every (block, op code) pair of every section, of the
    candidate's value against the pair's median over the window; and that figure's own noise (1.4826 x MAD of
    the same figure for each night of the window against the others). One slowed block or op code moves few
    pairs and not the median; a clock, firmware or driver change moves them all. ``pairs``: each section's
    (block, op code) rollups (:func:`warehouse.history.series.fetch_table`)."""
    per_run: dict[int, list[float]] = {r: [] for r in [cand, *hist]}
    need = max(1, (len(hist) + 1) // 2)
    for tab in pairs.values():
        c = tab.column(cand)
        if c is None:
            continue
        mine = tab.keys_of(c)
        cols = [(r, j) for r, j in ((r, tab.column(r)) for r in hist) if j is not None]
        vals = tab.values[metric]
        now = vals[mine, c]
        past = vals[np.ix_(mine, np.array([j for _, j in cols], dtype=np.intp))]
        valid = np.isfinite(past) & (past != 0)  # (a figure of 0 is no figure)
        mid = row_medians(np.where(valid, past, np.nan))
        with np.errstate(invalid="ignore"):
            keep = np.isfinite(now) & (now != 0) & (valid.sum(axis=1) >= need) & (mid > 0)
        per_run[cand] += (now[keep] / mid[keep]).tolist()
        for q, (r, _) in enumerate(cols):
            ok = keep & valid[:, q]
            per_run[r] += (past[ok, q] / mid[ok]).tolist()
    if len(per_run[cand]) < 3:
        return 1.0, 0.0
    factor = statistics.median(per_run[cand])
    levels = [statistics.median(v) for r, v in per_run.items() if r != cand and v]
    if len(levels) < 2:
        return factor, 0.0
    mid_level = statistics.median(levels)
    return factor, 1.4826 * statistics.median([abs(x - mid_level) for x in levels])


def _check(conn: Connection, cand: int, hist: list[int], section: str, dim: str, metrics: list[str],
           keys: set[str] | None, threshold: float, min_us: float, time: str | None,
           factors: dict[str, float] | None = None, judged: dict[tuple, float] | None = None,
           long_hist: list[int] | None = None, computed: dict[tuple, Any] | None = None) -> list[Finding]:
    """The findings of one section x grouping; ``judged`` collects the relative change of every series that had
    a window to be judged against, by (section, grouping, key, device, metric); ``computed``: the command's
    cache of metrics computed from the ops (:func:`warehouse.history.series.fetch`). Every key of a metric is judged at
    once, as arrays (a year's window of a big model is thousands of keys)."""
    # each device apart for the section totals (a slower device is named), all devices together for the rest
    tab = fetch_table(conn, sorted({cand, *hist, *(long_hist or [])}), section, dim, devices=dim == "section",
                      keys=sorted(keys) if keys is not None else None, metrics=metrics, cache=computed)
    c = tab.column(cand)
    if c is None:
        return []
    hcols = np.array([j for j in (tab.column(h) for h in hist) if j is not None], dtype=np.intp)
    lcols = np.array([j for j in (tab.column(h) for h in long_hist or []) if j is not None],  # (the nights' order)
                     dtype=np.intp)
    mine = tab.keys_of(c)  # the candidate's keys, in the order its rows came
    need = max(1, (len(hist) + 1) // 2)  # (fewer nights with the key: too new a key to judge)
    label = section_label(section)
    hits: list[tuple[int, int, Finding]] = []
    for mi, mk in enumerate(metrics):
        m = METRIC[mk]
        vals, spreads = tab.values[mk], tab.spreads[mk]
        now = vals[mine, c] / (factors or {}).get(mk, 1.0)  # a whole-run change already found: judge beyond it
        past = vals[np.ix_(mine, hcols)]
        n_past = np.isfinite(past).sum(axis=1)
        base = row_medians(past)
        mad = np.where(n_past > 1, row_medians(np.abs(past - base[:, None])), 0.0)
        window_spread = row_medians(spreads[np.ix_(mine, hcols)])
        own_spread = spreads[mine, c]
        known = np.fmax(np.where(np.isfinite(own_spread), own_spread, -np.inf),
                        np.where(np.isfinite(window_spread), window_spread, -np.inf))
        noise = np.maximum(SIGMAS * 1.4826 * mad, np.where(np.isfinite(known), known, 0.0) / 2)
        if long_hist:  # the series' night-to-night noise over its longer history (the detector's own measure)
            noise = np.maximum(noise, LONG_SIGMAS * _long_sigma(vals[np.ix_(mine, lcols)]))
        judge = np.isfinite(now) & (n_past >= need)
        bar = np.maximum(np.maximum(threshold * np.abs(base), m.floor_of(min_us)), noise)
        moved = judge & (np.abs(now - base) > bar)
        for i in np.nonzero(judge)[0]:
            key, dev = tab.keys[mine[i]]
            device = "all" if dev == ALL_DEVICES else str(dev)
            v, b = float(now[i]), float(base[i])
            if judged is not None:
                judged[(label, dim, key, device, mk)] = v / b - 1 if b else 0.0
            if moved[i]:
                delta = v - b
                # (a utilisation that drops, or fewer FLOP-bound ops, is the regression: Metric.worse)
                hits.append((int(i), mi, Finding("regression" if delta * m.worse > 0 else "improvement", cand, time,
                                                 label, dim, key, device, mk, round(v, 3), round(b, 3),
                                                 round(delta, 3), round(100 * delta / b, 2) if b else None,
                                                 round(float(noise[i]), 3), int(n_past[i]), unit=m.unit)))
    return [f for _, _, f in sorted(hits, key=lambda h: (h[0], h[1]))]


def _long_sigma(seq: np.ndarray) -> np.ndarray:
    """Each row's night-to-night noise (:func:`warehouse.history.changepoints.robust_sigma` of its figures, the nights
    without one left out): the rows with every night at once."""
    out = np.zeros(len(seq))
    fin = np.isfinite(seq)
    full = fin.all(axis=1)
    if seq.shape[1] >= 3 and full.any():
        out[full] = 1.4826 * row_medians(np.abs(np.diff(seq[full], axis=1))) / math.sqrt(2)
    for i in np.nonzero(~full)[0]:
        out[i] = robust_sigma(seq[i][fin[i]])
    return out


def _contributors(conn: Connection, f: Finding, cand: int, hist: list[int], section: str,
                  cache: dict[tuple, Any] | None = None, layers: set[str] | None = None,
                  metrics: list[str] | None = None) -> list[dict[str, Any]]:
    """The op codes inside a regressed block or layer that moved most, on the same metric and device (the
    drill-down rows are read once per section and grouping, whatever the number of findings; ``layers``: every
    layer of the section that will be asked about, when the drill-down is computed from the ops)."""
    sub = DRILL_DOWN.get(f.by)
    if sub is None:
        return []
    dev = ALL_DEVICES if f.device == "all" else int(f.device)
    prefix = f.key + " / "
    ck = (cand, section, sub, dev != ALL_DEVICES)
    if cache is not None and ck in cache:
        points = cache[ck]
    else:
        points = by_run(fetch(conn, [cand, *hist], section, sub, devices=dev != ALL_DEVICES,
                              layers=(layers or {f.key}) if f.by == "layer" else None, metrics=metrics or []))
        if cache is not None:
            cache[ck] = points
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


@dataclass
class Gate:
    """The gate's answer: the runs ``checked`` (each with its window), the ``findings`` one per cause (by impact,
    contributors nested, triage state), the ``invalid`` captures, every series that moved (``regressions``,
    ``improvements``), the settings, the runs' metadata and, when gating against a baseline, what it was."""

    checked: list[dict[str, Any]]
    findings: list[dict[str, Any]]
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
    baseline: dict[str, Any] | None = None

    @property
    def regressed(self) -> bool:
        """Whether a cause is a regression (``regressions`` exits 3)."""
        return any(c["kind"] == "regression" for c in self.findings)

    def to_json(self) -> dict[str, Any]:
        """The document ``regressions --format json`` prints (``baseline`` only when gating against one)."""
        out = asdict(self)
        if self.baseline is None:
            del out["baseline"]
        return out


def find_regressions(engine: Engine, *, label: str | None = None, tags: dict[str, str] | None = None,
                     last: int = 1, window: int = 7, threshold: float = 0.05, min_us: float = 1.0,
                     by: list[str] | None = None, section: str | None = None, metrics: list[str] | None = None,
                     keys: list[str] | None = None, run: str | int | None = None,
                     baseline_label: str | None = None, baseline_tags: dict[str, str] | None = None
                     ) -> Gate:
    """Compare each of the ``last`` newest matching runs with the ``window`` matching runs before it.

    PR gating: with ``run`` (an id or 'latest'), ``baseline_label`` or ``baseline_tags``, the one run (default:
    the newest matching ``label``/``tags``) is checked against the ``window`` newest valid runs of the baseline
    (``baseline_label``/``baseline_tags``, default the run's own filter), e.g. a PR's capture against main's
    nights."""
    by = by or DEFAULT_BY
    metrics = metrics or [m.key for m in METRICS]
    findings: list[Finding] = []
    warnings: list[str] = []
    with engine.connect() as conn:
        if run is not None or baseline_label is not None or baseline_tags:
            return _against_baseline(engine, conn, run, label, tags, baseline_label, baseline_tags, window,
                                     threshold, min_us, by, section, metrics, keys)
        runs = select_runs(conn, label, tags)
        if not runs:
            raise NotFound("no runs in the warehouse; ingest a CSV first")
        scope = runs[-(last + window):]
        sections = resolve_sections(conn, section, scope)
        # capture quality of the checked runs and of every run that could be in their windows
        quality = judge(conn, runs[-(last + 2 * window + QUALITY_WINDOW):], QUALITY_WINDOW)
        for r, why in invalid_runs(conn, runs[-(last + 2 * window + QUALITY_WINDOW):]).items():
            quality[r] = [why]
        accepted = accepted_steps(conn, runs[-(last + 2 * window + QUALITY_WINDOW):])
        suppress: dict[int, set[tuple[str, str, bool]]] = {}
        strangers = other_models(conn, runs[-(last + 2 * window + QUALITY_WINDOW):])
        valid = [r for r in runs if not quality.get(r) and r not in strangers]
        pos = {r: k for k, r in enumerate(runs)}
        meta = run_meta(conn, runs[-(last + 2 * window):])
        if keys is not None:
            _check_keys(conn, scope, sections, by, keys)
        checked, invalid = [], []
        computed: dict[tuple, Any] = {}  # metrics computed from the ops, each run's read once for every night
        for i in range(max(0, len(runs) - last), len(runs)):
            cand = runs[i]
            if quality.get(cand):
                invalid.append({**meta[cand].as_dict(), "problems": quality[cand]})
                continue
            if cand in strangers:
                warnings.append(f"{meta[cand].short()} {strangers[cand]}; it is compared all the same (pass "
                                "--label to keep one model per history)")
            # the window: the newest valid runs before it (an invalid night, another model, in no baseline)
            before = [r for r in valid if pos[r] < i]
            hist = before[-window:]
            # the noise: the night-to-night moves over a longer stretch (a 7-night MAD is itself noisy)
            long_hist = before[-NOISE_NIGHTS:]
            # a step a person acknowledged or expects is the new baseline: the window starts at its first night
            # (the old level no longer widens the noise); until the window has a night of it, the same key and
            # direction is not reported again
            mine = [d for d in accepted if d.run_id in pos and pos[d.run_id] <= i]
            if mine:
                start = max(pos[d.run_id] for d in mine)
                since = [r for r in hist if pos[r] >= start]
                if since:
                    hist = since
                    long_hist = [r for r in long_hist if pos[r] >= start]
                else:
                    suppress[cand] = {(d.by, d.key, d.up) for d in mine if pos[d.run_id] >= i - window}
            for r in sorted(set(runs[max(0, i - window):i]) & set(strangers)):
                warnings.append(f"{meta[r].short() if r in meta else f'run {r}'} {strangers[r]}: left out of the "
                                "baseline")
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
            findings += _judge(conn, cand, hist, sections, by, metrics, keys, threshold, min_us, meta[cand].time,
                               long_hist, computed)
        findings.sort(key=lambda f: (f.kind != "regression", -abs(f.delta_pct or 0), -abs(f.delta_us)))
        causes = group_causes(conn, findings, meta) if findings else []
        causes = [c for c in causes
                  if (c["by"], c["key"], c["kind"] == "regression") not in suppress.get(c["run_id"], set())]
        _with_triage(conn, causes)
        with_bound_changes(conn, causes, {c["run_id"]: c["window"] for c in checked})
    return Gate(checked, causes, invalid, threshold, min_us, window, metrics, by, warnings,
                {r: m.as_dict() for r, m in meta.items()},
                [asdict(f) for f in findings if f.kind == "regression"],
                [asdict(f) for f in findings if f.kind == "improvement"])


def _against_baseline(engine: Engine, conn: Connection, run: str | int | None, label: str | None,
                      tags: dict[str, str] | None, baseline_label: str | None, baseline_tags: dict[str, str] | None,
                      window: int, threshold: float, min_us: float, by: list[str], section: str | None,
                      metrics: list[str], keys: list[str] | None) -> Gate:
    """One run against the newest valid runs of a baseline filter (see :func:`find_regressions`)."""

    if run is not None:
        cand = resolve_run(conn, str(run), label)
    else:
        mine = select_runs(conn, label, tags)
        if not mine:
            raise NotFound("no runs in the warehouse; ingest a CSV first")
        cand = mine[-1]
    pool = [r for r in select_runs(conn, baseline_label if baseline_label is not None else label,
                                   baseline_tags if baseline_tags else tags) if r != cand]
    if not pool:
        raise NotFound("the baseline has no run besides the one checked")
    quality = judge(conn, pool[-(window + QUALITY_WINDOW):] + [cand], QUALITY_WINDOW)
    long_hist = [r for r in pool if not quality.get(r)][-NOISE_NIGHTS:]
    hist = long_hist[-window:]
    meta = run_meta(conn, [cand, *hist])
    sections = resolve_sections(conn, section, [*hist[-1:], cand])
    if keys is not None:
        _check_keys(conn, [*hist, cand], sections, by, keys)
    res = Gate([], [], [], threshold, min_us, window, metrics, by, [], {r: m.as_dict() for r, m in meta.items()},
               baseline={"label": baseline_label, "tags": baseline_tags or {}, "runs": hist})
    if quality.get(cand):
        res.invalid.append({**meta[cand].as_dict(), "problems": quality[cand]})
        return res
    if not hist:
        res.warnings.append("the baseline has no valid run to compare with")
        return res
    res.checked.append({**meta[cand].as_dict(), "window": hist, "sections": [section_label(s) for s in sections]})
    findings = _judge(conn, cand, hist, sections, by, metrics, keys, threshold, min_us, meta[cand].time, long_hist,
                      {})
    findings.sort(key=lambda f: (f.kind != "regression", -abs(f.delta_pct or 0), -abs(f.delta_us)))
    res.findings = group_causes(conn, findings, meta) if findings else []
    _with_triage(conn, res.findings)
    with_bound_changes(conn, res.findings, {cand: hist})
    res.regressions = [asdict(f) for f in findings if f.kind == "regression"]
    res.improvements = [asdict(f) for f in findings if f.kind == "improvement"]
    return res


def _judge(conn: Connection, cand: int, hist: list[int], sections: list[str], by: list[str], metrics: list[str],
           keys: list[str] | None, threshold: float, min_us: float, time: str | None,
           long_hist: list[int] | None = None, computed: dict[tuple, Any] | None = None) -> list[Finding]:
    """Every series finding of one run against its window: the whole run first (without a key filter), then each
    section x grouping judged beyond it, regressions with the op codes inside them."""
    findings: list[Finding] = []
    factors: dict[str, float] = {}
    if keys is None:
        whole = _whole_run(conn, cand, hist, sections, metrics, threshold, min_us, time)
        factors = {f.metric: f.value_us / f.baseline_us for f in whole}  # (span is cycles: judged as it is)
        findings += whole
    cache: dict[tuple, Any] = {}
    judged: dict[tuple, float] = {}
    found = {sec: [f for dim in by for f in _check(conn, cand, hist, sec, dim, metrics, set(keys) if keys else None,
                                                   threshold, min_us, time, factors, judged, long_hist,
                                                   computed)]
             for sec in sections}
    moved = {(f.section, f.by, f.key, f.device, f.metric, f.kind) for fs in found.values() for f in fs}
    for sec in sections:
        # (the layers a drill-down will be computed for, all at once: warehouse.registry.measures, layer/op-code)
        layers = {f.key for f in found[sec] if f.kind == "regression" and f.by == "layer"}
        for f in found[sec]:
            if not _corroborated(f, moved, judged, threshold, min_us):
                continue
            if f.kind == "regression":
                f.contributors = _contributors(conn, f, cand, hist, sec, cache, layers, metrics)
            findings.append(f)
    return findings


def _corroborated(f: Finding, moved: set[tuple], judged: dict[tuple, float], threshold: float,
                  min_us: float) -> bool:
    """Eager and the trace run the same ops. A kernel or FW time that moved in one of them is a change only when
    the other section, which judged the same key, moved the same way by at least a third as much: one op's
    hiccup lands in one section (a kernel that changed runs slower in both). Op-to-op gaps are the host's, which
    the trace leaves out: one section is enough, at ``CORROBORATE`` times its bar."""
    other = {EAGER: TRACE, TRACE: EAGER}.get(f.section)
    there = judged.get((other, f.by, f.key, f.device, f.metric)) if other else None
    if there is None or (other, f.by, f.key, f.device, f.metric, f.kind) in moved:
        return True
    if f.metric in ("kernel", "fw") or not METRIC[f.metric].stored:  # (the ops' own figures, like the kernel's)
        here = f.delta_pct / 100 if f.delta_pct is not None else 0.0
        return here * there > 0 and abs(there) >= abs(here) / 3
    bar = max(threshold * abs(f.baseline_us), min_us, f.noise_us)
    return abs(f.delta_us) > CORROBORATE * bar


def _whole_run(conn: Connection, cand: int, hist: list[int], sections: list[str], metrics: list[str],
               threshold: float, min_us: float, time: str | None) -> list[Finding]:
    """A change of the whole run (every op slower), per metric: one finding each, which the keys are then judged
    beyond."""
    out = []
    runs = [cand, *hist]
    pairs = {sec: fetch_table(conn, runs, sec, "block/op-code") for sec in sections}  # read once, all metrics
    totals = {sec: by_run(fetch(conn, runs, sec, "section")) for sec in sections}
    for mk in metrics:
        if mk == "span" or not METRIC[mk].stored:  # (computed metrics are judged per key only)
            continue
        factor, noise = run_factor(pairs, cand, hist, mk)
        if abs(factor - 1) <= max(threshold, SIGMAS * noise):
            continue
        now = base = 0.0
        for sec in sections:
            pts = totals[sec]
            p = pts.get(cand, {}).get(("total", ALL_DEVICES))
            past = [pts[h][("total", ALL_DEVICES)].values.get(mk) or 0.0 for h in hist
                    if ("total", ALL_DEVICES) in pts.get(h, {})]
            if p is None or not past:
                continue
            now += p.values.get(mk) or 0.0
            base += statistics.median(past)
        if not base or abs(now - base) < min_us:
            continue
        out.append(Finding("regression" if factor > 1 else "improvement", cand, time, "(whole run)", "section", "all",
                           "all", mk, round(now, 3), round(base, 3), round(now - base, 3),
                           round(100 * (factor - 1), 2), round(noise * base, 3), len(hist)))
    return out


def group_causes(conn: Connection, findings: list[Finding], meta: dict) -> list[dict[str, Any]]:
    """One entry per cause (the JSON contract of ``findings``): the same key seen in several sections or metrics
    is one; the whole run and a device hold everything that moved the same way; a block holds the op codes and
    layers inside it, an op code the blocks it runs in, a section total anything of its section; by impact."""
    runs = sorted({f.run_id for f in findings})
    inlist = ", ".join(str(int(r)) for r in runs)
    pairs = {(r, k) for r, k in conn.execute(text(
        f"SELECT DISTINCT run_id, key FROM {rollup_of(['block/op-code'])} WHERE grouping = 'block/op-code' "
        f"AND run_id IN ({inlist})"))}
    layer_block = {layer: block for block, layer in conn.execute(text("SELECT block, layer FROM place")) if layer}
    merged: dict[tuple, list[Finding]] = {}
    for f in findings:
        by, key = ("device", f.device) if f.by == "section" and f.key == "total" and f.device != "all" \
            else (f.by, f.key)
        merged.setdefault((f.run_id, f.kind, by, key), []).append(f)
    groups = []
    for (run, kind, by, key), fs in merged.items():
        main = max(fs, key=lambda f: (f.metric == "kernel", abs(f.delta_us)))
        groups.append((run, kind, by, key, main, fs))

    def holds(top, cand) -> bool:
        (r1, k1, b1, key1, m1, fs1), (r2, k2, b2, key2, m2, fs2) = top, cand
        if r1 != r2 or k1 != k2:
            return False
        if key1 == "all" or b1 == "device":
            return True
        if not nests_under(m1.metric, m2.metric):
            return False
        mean = METRIC[m1.metric].mean or METRIC[m2.metric].mean
        if abs(m2.delta_us) > 1.25 * abs(m1.delta_us) and not mean:  # (a mean's parts do not add up to it)
            return False
        secs = {f.section for f in fs1} & {f.section for f in fs2}
        if b2 == "section" and key2 == "total":
            return bool(secs)
        if b1 == "block" and b2 == "op-code":
            return (r1, f"{key1} / {key2}") in pairs
        if b1 == "op-code" and b2 == "block":
            return (r1, f"{key2} / {key1}") in pairs
        if b1 == "block" and b2 == "layer":
            return layer_block.get(key2) == key1 or key2 == f"[{key1} glue]"
        if b1 == "layer" and b2 == "op-code":
            return False
        return False

    def rank(g) -> tuple:
        tier = 0 if g[3] == "all" else 1 if g[2] == "device" else 3 if g[3] == "total" else 2
        return (g[1] != "regression", tier, part_rank(g[2], g[4].metric), -abs(g[4].delta_us))

    tops: list[tuple[Any, list]] = []
    for g in sorted(groups, key=rank):
        home = next((t for t in tops if holds(t[0], g)), None)
        if home is None:
            tops.append((g, []))
        else:
            home[1].append(g)
    return [_cause_doc(top, nested, meta) for top, nested in tops]


def _with_triage(conn: Connection, causes: list[dict[str, Any]]) -> None:
    """Each cause's ``triage``: what a person decided about it (`warehouse triage`), or None."""
    status = {d.id: d.status for d in decisions(conn, sorted({c["run_id"] for c in causes}))}
    for c in causes:
        c["triage"] = status.get(c["id"])


def _cause_doc(top, nested, meta: dict) -> dict[str, Any]:
    run, kind, by, key, main, fs = top
    m = meta.get(run)
    ident = hashlib.sha1(f"{m.label if m else ''}|{kind}|{by}|{key}|{run}".encode()).hexdigest()[:12]
    noise = max(main.noise_us, 1e-9)
    doc = {"id": f"r-{ident}", "kind": kind, "by": by, "key": key, "time": main.time, "run_id": run,
           "before": main.baseline_us, "after": main.value_us, "change_pct": main.delta_pct,
           "delta_us": main.delta_us, "confidence": round(1 - math.erfc(abs(main.delta_us) / noise / math.sqrt(2)),
                                                           6),
           "sections": sorted({f.section for f in fs}), "metrics": ordered({f.metric for f in fs}),
           "unit": main.unit,
           "devices": sorted({f.device for f in fs}), "window": main.window,
           "tags": m.tags if m else {}, "top_op_codes": main.contributors}
    kids = [_cause_doc(g, [], meta) for g in nested]
    kids.sort(key=lambda d: -abs(d["delta_us"]))
    doc["contributors"] = kids
    return doc


def _check_keys(conn: Connection, runs: list[int], sections: list[str], by: list[str], keys: list[str]) -> None:
    """An unknown ``--key`` is an error, not an empty answer."""
    have: set[str] = set()
    for sec in sections:
        for dim in by:
            have |= {k for (_, k, _) in fetch(conn, runs[-1:], sec, dim, keys=keys)}
    missing = [k for k in keys if k not in have]
    if missing:
        # in the API's terms (the grouping and the key), which the CLI's --key, --block and --layer all are
        raise NotFound(f"no {' or '.join(by)} {missing[0]!r} in section {', '.join(section_label(s) for s in sections)}"
                       f" of run {runs[-1]}; `warehouse trend --by {by[0]} --top 50` lists the largest")
