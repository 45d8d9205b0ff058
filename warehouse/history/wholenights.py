"""The gate's nights of multi-host captures as wholes: besides each rank's newest night against its own rank's
nights, each capture's against the captures before it, its ranks' figures merged
(:mod:`warehouse.history.wholecapture`)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection

from warehouse.history.evidence import Night
from warehouse.history.select import History
from warehouse.history.series import RunMeta
from warehouse.history.wholecapture import as_wholes, whole_part, whole_quality


@dataclass
class WholeNights:
    """The whole captures' nights to judge, their metadata (rank tag ``all``), the invalid ones and why each is
    judged."""

    nights: list[Night]
    meta: dict[int, RunMeta]
    invalid: list[dict[str, Any]]
    why: dict[int, str]


def is_multi_host(h: History) -> bool:
    """Whether the history holds the ranks of multi-host captures (two ranks or more)."""
    return len({r for r in h.rank.values() if r is not None}) > 1


def whole_nights(conn: Connection, h: History, last: int, window: int, noise: int, label: str | None
                 ) -> WholeNights:
    """The ``last`` newest captures of ``h`` as wholes, each against the ``window`` valid captures before it (its
    noise from the ``noise`` before it). A capture is invalid when any of its ranks is; a step a person
    acknowledged on a capture's first rank re-baselines the whole capture's same key too."""
    part = whole_part(conn, h.runs, None)
    heads = list(part.members)
    where = {r: i for i, r in enumerate(heads)}
    problems = whole_quality(h.problems, part)
    meta = {r: replace(h.meta[r], tags=dict(h.meta[r].tags)) for r in heads}
    as_wholes({r: m.tags for r, m in meta.items()})
    valid = [r for r in heads if not problems.get(r) and r not in h.strangers]
    out = WholeNights([], meta, [], {})
    for back, cand in enumerate(reversed(heads[-last:])):
        if problems.get(cand):
            out.invalid.insert(0, {**meta[cand].as_dict(), "problems": problems[cand]})
            continue
        before = [r for r in valid if where[r] < where[cand]]
        if not before:
            continue
        breaks = [(d.by, d.key, d.run_id) for d in h.accepted() if where.get(d.run_id, len(heads)) <= where[cand]]
        out.nights.insert(0, Night(cand, before[-window:], before[-noise:], breaks, before[-1], part.members))
        out.why[cand] = (f"{'the newest' if not back else f'{back} before the newest'} capture (all ranks) of "
                         f"{f'label {label!r}' if label else 'the history'} by capture time")
    return out
