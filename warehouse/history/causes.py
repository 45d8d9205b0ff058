"""Causes, not rows: what `changes` and the gate both report.

A history question yields *detections*, one per series that moved (a section, a block, an op code... in one
section, on one metric and device). One change of the code moves many of them: the block, the op codes inside it,
the section total that holds it, in eager and in the trace, on kernel and FW time. :func:`nest` folds them into
causes, top-down:

1. the same key seen in several sections, metrics or devices is one group (the sections, metrics and devices it
   shows in are listed);
2. groups are ranked: the whole run, then a device, then blocks, op codes and layers by impact, then section totals;
3. a group nests under the first ranked cause that holds it: the whole run and a device hold everything that moved
   the same way; a section total anything of its section; a block the op codes that run in it and the layers
   inside it; an op code the blocks it runs in and the layers whose move it explains; a child must move the same
   way, on a metric the cause's holds, by no more than the cause (times ``NEST_SLACK``), and (over a whole history)
   on a night close to the cause's.

One :class:`Cause` type carries the answer of both questions; ``to_json()`` is the document each command prints.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from warehouse.registry.measures import METRIC, nests_under, part_rank

NEST_SLACK = 1.25  # a child's change may be this much larger than its cause's (noise in either)
EXPLAINS = 0.5  # an op code explains a layer's move when it is at least this share of it


@dataclass
class Cause:
    """One cause. ``kind``: step, drift or outlier (over a whole history, ``changes``); regression, improvement
    or suspicious (a night against its baseline, the gate: suspicious is a move without the evidence a real change
    leaves, a warning). ``by``/``key``: the grouping and key (``section``/``all`` is the whole run); ``before``,
    ``after`` and ``delta_us`` in ``unit`` per iteration; ``evidence``: what corroborates it (eager and trace,
    replays, devices, pairs, persistence)."""

    id: str
    kind: str
    by: str
    key: str
    time: str | None
    run_id: int
    before: float
    after: float
    change_pct: float | None
    delta_us: float
    confidence: float
    sections: list[str]
    metrics: list[str]
    devices: list[str]
    unit: str = "us"
    z: float | None = None
    tags: dict[str, str] = field(default_factory=dict)
    contributors: list[dict[str, Any]] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    triage: str | None = None  # what a person decided (`warehouse triage`): acknowledged, expected, invalid
    worse: bool | None = None  # the change is for the worse (slower; a utilisation that fell, ...)
    # over a whole history (`changes`)
    since: str | None = None  # a drift: where its rise begins
    per_night_pct: float | None = None  # a drift's rate
    first_shown: bool = False  # the new level holds from the first night in view: the change is at or before it
    fixes: str | None = None  # a step that undoes an earlier one (a regression fixed again): that step's id
    series: list[float | None] | None = None  # the values it was found on, per night of the history
    series_of: str | None = None  # which series that is ("trace kernel": its section and metric)
    bound_changes: list[dict[str, Any]] | None = None  # a Bound count's change: the ops whose Bound moved
    # a night against its baseline (the gate)
    window: int | None = None  # the nights of the baseline
    top_op_codes: list[dict[str, Any]] | None = None  # a block's or layer's op codes that moved most

    def __getitem__(self, name: str) -> Any:
        """``cause["key"]``: the gate's findings were plain dicts before they were causes; code that reads them so
        still works."""
        return getattr(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        """``cause.get("key")``, as a dict has it (see :meth:`__getitem__`)."""
        return getattr(self, name, default)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for k in ("since", "per_night_pct", "fixes", "series", "series_of", "bound_changes", "window",
                  "top_op_codes", "z"):
            if out[k] is None:
                del out[k]
        if not out["first_shown"]:
            del out["first_shown"]
        return out


def cause_id(prefix: str, *parts: object) -> str:
    """A stable id: ``prefix`` and 12 hex digits of what names the cause (its label, kind, key, night, way)."""
    return f"{prefix}-" + hashlib.sha1("|".join(str(p) for p in parts).encode()).hexdigest()[:12]


@dataclass
class Group:
    """Detections of one key that are one finding: ``main`` is the one the cause is told by (kernel first, then
    the largest), ``members`` every detection behind it (their sections, metrics and devices)."""

    by: str
    key: str
    kind: str
    up: bool
    main: Any  # a detection: has .section, .metric, .delta (or .delta_us), .night (or .run_id)
    members: list[Any]

    @property
    def delta(self) -> float:
        return float(getattr(self.main, "delta", getattr(self.main, "delta_us", 0.0)))

    @property
    def sections(self) -> set[str]:
        return {d.section for d in self.members}


@dataclass
class Overlaps:
    """What nesting needs to know of a history: which (block, op code) pairs exist, which block a layer is in,
    and which op codes moved inside a layer (a layer -> [(op code, delta)])."""

    pairs: set[str] = field(default_factory=set)  # "block / op code"
    layer_block: dict[str, str] = field(default_factory=dict)
    layer_codes: dict[str, list[tuple[str, float]]] = field(default_factory=dict)


def holds(top: Group, cand: Group, overlaps: Overlaps) -> bool:
    """Whether the cause ``top`` holds the group ``cand`` (they moved the same way; see the module docstring)."""
    if top.up != cand.up:
        return False
    tb, tk, cb, ck = top.by, top.key, cand.by, cand.key
    if tk == "all" or tb == "device":
        return True
    if not nests_under(top.main.metric, cand.main.metric):
        return False
    mean = METRIC[top.main.metric].mean or METRIC[cand.main.metric].mean  # (a mean's parts do not add up to it)
    if not mean and ck != "total" and abs(cand.delta) > NEST_SLACK * abs(top.delta):
        return False
    if cb == "section" and ck == "total":
        return bool(top.sections & cand.sections)
    if tb == "block" and cb == "op-code":
        return f"{tk} / {ck}" in overlaps.pairs
    if tb == "op-code" and cb == "block":
        return f"{ck} / {tk}" in overlaps.pairs
    if tb == "block" and cb == "layer":
        return overlaps.layer_block.get(ck) == tk or ck == f"[{tk} glue]"
    if tb == "op-code" and cb == "layer":
        moved = overlaps.layer_codes.get(ck) or []
        total = sum(abs(d) for _, d in moved) or abs(cand.delta)
        mine = sum(abs(d) for c, d in moved if c == tk)
        return bool(moved) and mine >= EXPLAINS * total
    return False


def rank(g: Group) -> tuple:
    """The order causes are taken in: the whole run, a device, then keys by their grouping's rank and impact,
    section totals last (a total holds what moved in it; it is the cause only when nothing inside explains it)."""
    tier = 0 if g.key == "all" else 1 if g.by == "device" else 3 if g.key == "total" else 2
    return (tier, part_rank(g.by, g.main.metric), -abs(g.delta), g.by, g.key)


def nest(groups: list[Group], overlaps: Overlaps,
         when: Callable[[Group, Group], bool] | None = None) -> list[tuple[Group, list[Group]]]:
    """Causes with the groups nested under each, by :func:`rank`; ``when(top, cand)``: a further condition on the
    nights (over a whole history, a child moved on a night close to its cause's)."""
    tops: list[tuple[Group, list[Group]]] = []
    for g in sorted(groups, key=rank):
        home = next((t for t in tops if holds(t[0], g, overlaps) and (when is None or when(t[0], g))), None)
        if home is None:
            tops.append((g, []))
        else:
            home[1].append(g)
    return tops


FIX_LIKE = 0.5  # a step undoes an earlier one when its size is within this share of it (log scale)


def link_fixes(causes: list[Cause], runs: list[int]) -> None:
    """A step that undoes an earlier step of the same key (the other way, by a like size: a regression fixed
    again) names it in ``fixes``: one episode, its start and its end."""
    steps = sorted((c for c in causes if c.kind == "step"), key=lambda c: runs.index(c.run_id))
    fixed: set[str] = set()
    for i, late in enumerate(steps):
        if not (late.before > 0 and late.after > 0):
            continue
        d = math.log(late.after / late.before)
        for early in reversed(steps[:i]):
            if (early.by, early.key) != (late.by, late.key) or early.id in fixed \
                    or not (early.before > 0 and early.after > 0):
                continue
            e = math.log(early.after / early.before)
            if e * d < 0 and abs(abs(d) - abs(e)) <= FIX_LIKE * max(abs(d), abs(e)):
                late.fixes = early.id
                fixed.add(early.id)
            break  # (only the key's step just before it can be the one it undoes)
