"""The history of multi-host captures as wholes: each night one capture, its ranks' figures merged.

A label holding the ranks of multi-host captures (``tt-run --tracy``: a file per rank) has one history per rank
(:mod:`warehouse.history.select`) and, besides them, the history of the capture as a whole, which this module
gives: a night is the capture (named by its first rank's run), and its series are its ranks' rows merged as one
run, all devices of every rank together:

- a key's figure over all devices is the sum over the ranks of the sums of op durations (kernel, FW, op-to-op)
  and of the ops, per iteration (each rank runs the same replays); the span is the longest rank's (the ranks run
  at once, each on its own clock); the iterations are the most any rank has;
- a spread (max - min over replays) of a sum is the sum of the ranks' spreads: the most the sum can spread,
  so the whole capture's replays never look quieter than its ranks';
- a figure that is neither (a ratio) is not merged: NaN, never a wrong number;
- devices are judged in the ranks' own histories, each against its own host's devices: a rank's device is no
  series of the whole (its level, the median over devices, would mix hosts: half the devices 4 % slower would
  show as the other half 2 % faster).

A capture is an invalid night when any of its ranks is; its causes carry the rank tag ``all`` (``all ranks whole
run``) and ids of their own, so that triage tells them from rank 0's.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np
from sqlalchemy import Connection

from warehouse.capture.ranklayout import HOST_TAG, RANK_TAG
from warehouse.history.causes import cause_id
from warehouse.runs.ranks import run_hosts
from warehouse.registry.measures import METRIC, METRICS
from warehouse.store.runseries import Part

ALL_DEVICES = -1
WHOLE = "all"  # the rank tag of a whole capture's night in history outputs

# How each figure of a rank's row joins the same key's rows of the other ranks
_SUMMED = {"ops", *(c for m in METRICS if m.expr.startswith("SUM(") and m.expr.count("(") == 1
                    for c in (m.column, m.spread_column))}
_LONGEST = {"iterations", *(c for m in METRICS if m.key == "span" for c in (m.column, m.spread_column))}


class Captures(list[int]):
    """Run ids that stand for whole multi-host captures' nights (each a capture's first rank's run), with
    ``members``: each night's runs, its ranks', in rank order. The history reads given these read each night's
    ranks merged (:func:`merge`)."""

    def __init__(self, nights: Iterable[int], members: dict[int, list[int]]) -> None:
        super().__init__(nights)
        self.members = members


def as_nights(runs: list[int], members: dict[int, list[int]] | None) -> list[int]:
    """``runs`` as whole captures' nights when ``members`` is given, else as they are."""
    return runs if members is None else Captures(runs, members)


def members_of(runs: Iterable[int]) -> dict[int, list[int]] | None:
    """The ranks of each night of ``runs`` when they are whole captures (:class:`Captures`), else None."""
    return runs.members if isinstance(runs, Captures) else None


class WholeCapture(set[int]):
    """The runs a whole-capture history leaves out (every rank's run but each capture's first, and the caller's
    exclusions, ``asked``), with ``members``: each night's run (a capture's first rank, or a run of one host) ->
    the runs its figures are made of, in rank order."""

    def __init__(self, asked: set[int], members: dict[int, list[int]], runs: list[int]) -> None:
        super().__init__(asked | (set(runs) - set(members)))
        self.asked, self.members = asked, members


def captures(conn: Connection, runs: list[int]) -> dict[int, list[int]]:
    """The nights of ``runs`` as wholes: each capture's first rank among ``runs`` -> its ranks among ``runs``
    in rank order; a run of one host is a night of itself alone. In the order of ``runs``' first ranks."""
    hosts = {r: (host, int(rank)) for r, (host, rank) in run_hosts(conn, runs).items() if rank.isdigit()}
    groups: dict[str, list[int]] = defaultdict(list)
    for r in runs:
        groups[hosts[r][0] if r in hosts else f"run {r}"].append(r)
    out = {}
    for g in groups.values():
        g.sort(key=lambda r: hosts[r][1] if r in hosts else 0)
        out[g[0]] = g
    return {r: out[r] for r in runs if r in out}


def whole_part(conn: Connection, runs: list[int], excluded: set[int] | None) -> WholeCapture:
    """The whole-capture history of ``runs`` (a multi-host label's): what it leaves out, and its nights' ranks."""
    return WholeCapture(set(excluded or ()), captures(conn, runs), runs)


def whole_quality(quality: dict[int, list[str]], part: set[int] | None) -> dict[int, list[str]]:
    """Each night's problems as a whole capture: those of every rank (named), a rank the caller left out
    (``quality`` itself outside the history of whole captures)."""
    if not isinstance(part, WholeCapture):
        return quality
    out = dict(quality)
    for head, ranks in part.members.items():
        problems = []
        for k, r in enumerate(ranks):
            mine = list(quality.get(r) or []) + (["left out by the caller"] if r in part.asked and r != head else [])
            problems += [f"rank {k}: {p}" if len(ranks) > 1 else p for p in mine]
        out[head] = problems
    return out


def merge(parts: list[Part], members: dict[int, list[int]]) -> list[Part]:
    """The parts of whole captures from their ranks' parts (``parts``: every rank's, any order): per night,
    section and grouping one part of all devices together, run id the night's, rows in the stored order (key
    id); see the module for how figures merge. Parts of runs that are no night's rank are dropped."""
    night_of = {r: (head, k) for head, ranks in members.items() for k, r in enumerate(ranks)}
    grouped: dict[tuple[int, str, str], list[tuple[int, Part]]] = defaultdict(list)
    for p in parts:
        if p.run_id in night_of:
            head, k = night_of[p.run_id]
            grouped[(head, p.section, p.grouping)].append((k, p.only(p.devices == ALL_DEVICES)))
    # (each night's ranks in rank order: the order their figures are added in)
    return [_merged(*at, [p for _, p in sorted(mine, key=lambda x: x[0])]) for at, mine in sorted(grouped.items())]


def _merged(head: int, section: str, grouping: str, ranks: list[Part]) -> Part:
    """One part from the ranks' parts of one section and grouping, all devices together. Ranks that hold the same
    keys (a model's hosts run the same program: the common case) are merged row by row; others by key."""
    first = ranks[0]
    if len(ranks) == 1:
        return Part(head, section, grouping, first.key_ids, first.devices, first.values)
    if all(np.array_equal(p.key_ids, first.key_ids) for p in ranks[1:]):
        uniq, at = first.key_ids, None
    else:
        uniq, at = np.unique(np.concatenate([p.key_ids for p in ranks]), return_inverse=True)
        at = at.reshape(-1)
    values = {fig: _join_figure(fig, [p.values[fig] for p in ranks], at, len(uniq)) for fig in first.values}
    return Part(head, section, grouping, uniq.astype(np.int64), np.full(len(uniq), ALL_DEVICES, dtype=np.int32),
                values)


def _join_figure(fig: str, vs: list[np.ndarray], at: np.ndarray | None, keys: int) -> np.ndarray:
    """One figure of the ranks' rows joined by key (``at``: each concatenated row's key; None: row by row)."""
    if fig not in _SUMMED and fig not in _LONGEST:
        return np.full(keys, np.nan)
    if at is None:  # (added in rank order, as the path by key adds them: the same doubles)
        got = vs[0]
        for v in vs[1:]:
            # (a rank without the figure adds nothing; no rank with it: NaN)
            got = np.fmax(got, v) if fig in _LONGEST else np.where(
                np.isnan(got), v, np.where(np.isnan(v), got, got + v))
        return got
    v = np.concatenate(vs)
    if fig in _LONGEST:
        order = np.argsort(at, kind="stable")
        starts = np.flatnonzero(np.r_[True, at[order][1:] != at[order][:-1]])
        return np.fmax.reduceat(v[order], starts)
    got = np.bincount(at, weights=np.nan_to_num(v), minlength=keys)
    got[np.bincount(at, weights=~np.isnan(v), minlength=keys) == 0] = np.nan
    return got


def as_wholes(tags: dict[int, dict[str, str]]) -> None:
    """A night's tags as a whole capture's: its rank is every rank (``all``)."""
    for mine in tags.values():
        if HOST_TAG in mine:
            mine[RANK_TAG] = WHOLE


def whole_id(cause_id_: str) -> str:
    """A whole capture's cause's id: of its own, never its first rank's same cause's."""
    prefix = cause_id_.split("-", 1)[0]
    return cause_id(prefix, cause_id_, "whole capture")


# What a history question does differently when it is the history of whole captures (``part``: what it leaves
# out, a :class:`WholeCapture` then; any other set leaves everything as it is)

def judged_metrics(part: set[int] | None, metrics: list[str]) -> tuple[list[str], list[str]]:
    """The metrics judged, and a warning for those left out: whole captures have only the stored ones (a metric
    computed from the ops would be computed from one rank's)."""
    if not isinstance(part, WholeCapture) or all(METRIC[m].stored for m in metrics):
        return metrics, []
    return [m for m in metrics if METRIC[m].stored], [
        "whole captures: metrics computed from the ops are judged per rank only"]


def named(part: set[int] | None, meta: dict[int, Any]) -> None:
    """Each night's metadata (:class:`warehouse.history.series.RunMeta`) named as a whole capture's."""
    if isinstance(part, WholeCapture):
        as_wholes({r: meta[r].tags for r in part.members if r in meta})


def of_part(part: set[int] | None, runs: list[int]) -> list[int]:
    """``runs`` as whole captures' nights (:class:`Captures`) in the history of whole captures."""
    return Captures(runs, part.members) if isinstance(part, WholeCapture) else runs


def own_ids(part: set[int] | None, causes: list[Any]) -> None:
    """The causes' ids as whole captures' (:func:`whole_id`)."""
    for c in causes if isinstance(part, WholeCapture) else []:
        c.id = whole_id(c.id)
