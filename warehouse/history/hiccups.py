"""Whether a move is hiccups, read from the key's ops: the last check of every blocking move of the gate, and of
every step of a block or op code that `changes` finds.

A hiccup slows one op execution, once, by x2 or more. A real change moves the same ops in every measurement (eager
and each replay run the same ops) and on every night after it. So the move is split over the key's op executions,
each matched by its position inside the key and iteration against the baseline nights at that position:

- the gate (:func:`verdict`, :func:`reread_from_ops`): a night's move made (for the most part) of executions that
  jumped by a hiccup's size is *hiccup-shaped*; hiccup-shaped at different ops (one in eager and another in the
  trace, one in each of two replays) is hiccups, not a change (suspicious); hiccup-shaped at the same op in every
  measurement is a real change of that op by x2 or more, or hiccups that hit it each time (on a big model with many
  hiccups, a few times a year): it blocks once it holds two nights running, never on its first night alone;
- `changes` (:func:`step_of_hiccups`): a step whose ops, on the nights after it, moved by less than half of it once
  hiccup-sized jumps are set aside, and where no op jumped on most of those nights, is a run of nights that each
  hiccuped somewhere (a key of many ops on a farm strings them together now and then), not a step.

Where the ops say anything else (the move is spread over several ops, or an op moved by less than a hiccup does),
the evidence stands as it is.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Connection, text

from warehouse.history.evidence import HICCUP_LEAST, Night, Series, persists
from warehouse.history.finding import Finding
from warehouse.history.wholecapture import members_of
from warehouse.registry.contract import EAGER, TRACE
from warehouse.registry.measures import GROUPINGS, KEY_TEXTS

HICCUP_SHARE = 0.7  # a move this much made of hiccup-sized jumps is hiccup-shaped
HICCUP_RATIO = 0.9 * HICCUP_LEAST  # an execution this much slower than its baseline jumped by a hiccup's size
# (x2 at least, less the op's own noise of a few per cent)
BASE_NIGHTS = 3  # baseline nights whose median, position by position, the ops are held against
COLUMNS = {"kernel": "kernel_ns", "fw": "fw_ns"}  # the metrics that are sums of op durations

Ops = dict[tuple[str, int], list[list[float]]]  # (key, device) -> per iteration, the key's executions in order


def _source(dim: str, metric: str) -> tuple[str, str] | None:
    """The grouping's key expression and the op column a key's executions are read with (None: the metric is no
    sum of op durations, or the grouping's keys are not computed in Python)."""
    col = COLUMNS.get(metric)
    g = next((x for x in GROUPINGS if x.key == dim), None)
    return (g.expr, col) if col is not None and g is not None and g.expr in KEY_TEXTS else None


@dataclass
class OpReads:
    """Where the nights' ops are read from: ``cache`` keeps each run's for one command; ``members``: the nights are
    whole multi-host captures, each made of its ranks' runs (:mod:`warehouse.history.wholecapture`)."""

    conn: Connection
    cache: dict[tuple, Any]
    members: dict[int, list[int]] | None = None

    def night(self, night: int, section: str, src: tuple[str, str]) -> Ops:
        """A night's executions (:func:`_ops`); of a whole capture, every rank's executions of a key over all
        devices, rank after rank, iteration by iteration."""
        ranks = (self.members or {}).get(night, [night])
        if len(ranks) == 1:
            return _ops(self.conn, self.cache, ranks[0], section, *src)
        ck = ("capture-ops", tuple(ranks), section, *src)  # (a night is read as a baseline of several others)
        if ck in self.cache:
            return self.cache[ck]
        out: Ops = {}
        self.cache[ck] = out
        for r in ranks:
            alldev = {k: its for (k, dev), its in _ops(self.conn, self.cache, r, section, *src).items() if dev == -1}
            for k, its in alldev.items():
                mine = out.setdefault((k, -1), [])
                for i, execs in enumerate(its):
                    if i < len(mine):
                        mine[i].extend(execs)  # (a copy of rank 0's: the cache keeps each rank's own)
                    else:
                        mine.append(list(execs))
        return out


def _held(reads: OpReads, run: int, before: list[int], section: str, src: tuple[str, str], key: tuple[str, int]
          ) -> tuple[np.ndarray, np.ndarray] | None:
    """A key's executions on ``run`` (iteration x position) and, position by position, the executions of the nights
    ``before`` sorted (execution x position); None when either has none, or the key's ops differ between
    iterations or nights (a change of the model, not of speed: the ops cannot say)."""
    now = reads.night(run, section, src).get(key)
    past = [it for r in before for it in reads.night(r, section, src).get(key) or []]
    if not now or not past or any(len(it) != len(now[0]) for it in (*now, *past)):
        return None
    return np.array(now, dtype=float), np.sort(np.array(past, dtype=float), axis=0)


def verdict(reads: OpReads, cand: int, base: list[int], sections: list[str], dim: str, key: str, device: int | None,
            metric: str) -> str | None:
    """What the ops of ``key`` in ``sections`` say of its move on run ``cand`` against the nights ``base`` (the
    newest :data:`BASE_NIGHTS` of them): ``"hiccups"`` (hiccup-shaped at different ops: no change),
    ``"same ops"`` (hiccup-sized at the same ops in every measurement: it must hold a second night), or None (the
    move is a change's shape, or the ops cannot say). ``device``: None for all devices together."""
    src = _source(dim, metric)
    if src is None or not base:
        return None
    shapes = []
    for sec in sections:
        held = _held(reads, cand, base[-BASE_NIGHTS:], sec, src, (key, -1 if device is None else device))
        shape = None if held is None else _shape(held[0], np.median(held[1], axis=0))
        if shape is None:
            return None  # (a change's shape in one section, or no ops to read: the sections' evidence stands)
        shapes.append(shape)
    if not shapes:
        return None
    sets = [its for shape in shapes for its in shape]
    return "same ops" if all(its and its == sets[0] for its in sets) else "hiccups"


def _shape(cur: np.ndarray, ref: np.ndarray) -> list[frozenset[int]] | None:
    """Per iteration, the positions of the hiccup-sized jumps that make a section's move (None: the move is no
    hiccup's shape). ``cur``: the night's executions (iteration x position); ``ref``: the baseline's, by position."""
    delta = cur - ref[None, :]
    total = float(np.sum(delta[delta > 0]))
    if not total > 0:
        return None
    with np.errstate(all="ignore"):
        jumped = (ref[None, :] > 0) & (cur >= HICCUP_RATIO * ref[None, :])
    if float(np.sum(delta[jumped])) < HICCUP_SHARE * total:
        return None
    return [frozenset(np.nonzero(row)[0].tolist()) for row in jumped]


def _ops(conn: Connection, cache: dict[tuple, Any], run: int, section: str, expr: str, col: str) -> Ops:
    """A run's executions of one section by key of the grouping ``expr`` (read once per run and section)."""
    ck = ("hiccup-ops", run, section, expr, col)
    if ck in cache:
        return cache[ck]
    rows = conn.execute(text(
        f"SELECT o.iteration, COALESCE(p.block, ''), COALESCE(p.layer, ''), c.name, c.category, o.device_id, "
        f"o.{col} FROM op o JOIN section s ON s.id = o.section_id JOIN op_code c ON c.id = o.op_code_id "
        "LEFT JOIN place p ON p.id = o.hist_place_id WHERE o.run_id = :r AND s.name = :s ORDER BY o.row_no"),
        {"r": run, "s": section}).all()
    key_of = KEY_TEXTS[expr]
    per: dict[tuple[str, int], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for it, block, layer, code, cat, dev, v in rows:
        value = float(v) if v is not None and math.isfinite(float(v)) else 0.0
        k = key_of(block, layer, code, cat)
        per[(k, -1)][it or 0].append(value)
        if dev is not None:
            per[(k, int(dev))][it or 0].append(value)
    out: Ops = {k: [its[i] for i in sorted(its)] for k, its in per.items()}
    cache[ck] = out
    return out


def reread_from_ops(conn: Connection, found: list[Finding], origin: dict[int, tuple[Series, int]], n: Night,
                    threshold: float, cache: dict[tuple, Any]) -> None:
    """Every blocking move of ``found`` read from its ops, in the sections that corroborate
    it: a move made of hiccups at different ops (one in eager and one in the trace, one in each of two replays, in
    each of two blocks) is suspicious, whatever the channels it passed; a hiccup-sized jump of the same ops in every
    measurement blocks once it holds two nights running."""
    for i, f in enumerate(found):
        if f.kind == "suspicious" or i not in origin or f.section == "(whole run)":
            continue
        s, r = origin[i]
        sections = [EAGER, TRACE] if "eager and trace" in f.evidence else [s.section]
        shape = verdict(OpReads(conn, cache, n.members), n.cand, n.base, sections, s.dim, f.key,
                        None if f.device == "all" else int(f.device), f.metric)
        if shape == "hiccups" or (shape == "same ops" and not persists(s, r, n, threshold)):
            f.kind, f.evidence = "suspicious", []


STEP_NIGHTS = 5  # nights on each side of a step its ops are read on
STEP_SHARE = 0.5  # a step's ops must move by at least this share of it, hiccups aside, on the nights after


def step_of_hiccups(reads: OpReads, before: list[int], after: list[int], sections: list[str], dim: str, key: str,
                    metric: str, rel: float) -> bool:
    """Whether a step of ``key`` (``rel``: its relative size) found over a whole history is hiccups, read from its
    ops: on the nights ``after`` it, held position by position against the nights ``before`` it, the key's ops
    moved (hiccup-sized jumps aside) by less than half the step, and no op jumped on most of those nights (a change
    moves the same ops every night; a run of nights that each hiccup somewhere, which a key of many ops on a farm
    has, moves different ones). False when the ops cannot say."""
    src = _source(dim, metric)
    if src is None or not before or not after or not rel:
        return False
    moves: list[float] = []
    jumps: dict[tuple[str, int], int] = defaultdict(int)
    for run in after[:STEP_NIGHTS]:
        night_move = night_base = 0.0
        for sec in sections:
            held = _held(reads, run, before[-STEP_NIGHTS:], sec, src, (key, -1))
            if held is None:
                return False
            cur, stack = held
            # (each op's lower median over the nights before: of two nights the faster, which a hiccup in
            # either, at the start of a history, leaves where it was)
            ref = stack[(len(stack) - 1) // 2]
            with np.errstate(all="ignore"):
                jumped = (ref[None, :] > 0) & ((cur >= HICCUP_RATIO * ref[None, :])
                                               | (cur <= ref[None, :] / HICCUP_RATIO))
            night_move += float(np.where(jumped, 0.0, cur - ref[None, :]).sum()) / len(cur)
            night_base += float(ref.sum())
            for pos in set(np.nonzero(jumped)[1].tolist()):
                jumps[(sec, pos)] += 1
        if night_base > 0:
            moves.append(night_move / night_base)
    if not moves:
        return False
    typical = float(np.median(moves))
    same_op = any(c * 2 > len(moves) for c in jumps.values())
    return not same_op and not (typical * rel > 0 and abs(typical) >= STEP_SHARE * abs(rel))


def without_hiccup_steps(conn: Connection, changes: list[Any], runs: list[int]) -> list[Any]:
    """Steps of a block or an op code whose ops say they are hiccups (:func:`warehouse.history.hiccups.
    step_of_hiccups`: nights that each hiccup at a different op, which a key of many ops on a farm with many
    hiccups strings together now and then) are no change: ``changes`` (causes) without them. ``runs`` may be
    whole multi-host captures (:class:`warehouse.history.wholecapture.Captures`)."""
    reads = OpReads(conn, {}, members_of(runs))
    keep = []
    for c in changes:
        if c.kind == "step" and c.by in ("block", "op-code") and c.change_pct:
            i = runs.index(c.run_id)
            secs = [x for x in c.sections if x != "(whole run)"]
            metric = "kernel" if "kernel" in c.metrics else c.metrics[0]
            if secs and step_of_hiccups(reads, runs[max(0, i - STEP_NIGHTS):i], runs[i:i + STEP_NIGHTS],
                                        secs, c.by, c.key, metric, c.change_pct / 100):
                continue
        keep.append(c)
    return keep
