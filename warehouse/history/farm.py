"""A farm of models: every label's changes, grouped where one cause (a firmware, a compiler) moved several.

Each label's history is asked :func:`warehouse.history.changes.find_changes` on its own. Each change names the
*last good* run (the run just before the first night of the new level, in that label's history) and the *first bad*
run, with their tags (a ``commit=`` or ``tt-metal=`` tag is what a bisection needs). Changes group when their runs
carry a commit tag and their (last good, first bad) commit ranges overlap (share a commit), else when they share a
first night. Groups are ordered by first night; each lists its labels and, with a ``--bisect-cmd`` template, the
command that bisects it (printed, never run).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from warehouse.history.changes import Change, find_changes

COMMIT_TAGS = ("commit", "tt-metal", "sha", "git")  # tags that name a commit, first found wins


@dataclass
class FarmChange:
    """One label's change with the runs that bound it."""

    label: str
    change: Change
    last_good: dict[str, Any] | None
    first_bad: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        c = self.change
        return {"label": self.label, "id": c.id, "kind": c.kind, "by": c.by, "key": c.key,
                "change_pct": c.change_pct, "before": c.before, "after": c.after, "unit": c.unit,
                "worse": c.worse, "last_good": self.last_good, "first_bad": self.first_bad}


@dataclass
class Group:
    """Changes of one cause across labels: its first night, its labels, its commit range."""

    first_night: str
    changes: list[FarmChange] = field(default_factory=list)
    good: str | None = None  # the commit of the newest last-good run (the bisection's good end)
    bad: str | None = None  # the commit of the oldest first-bad run (its bad end)

    @property
    def labels(self) -> list[str]:
        return sorted({c.label for c in self.changes})

    def bisect(self, template: str | None) -> str | None:
        """``template`` with ``{good}`` and ``{bad}`` filled (None without a template or commits)."""
        if not template or self.good is None or self.bad is None:
            return None
        return template.replace("{good}", self.good).replace("{bad}", self.bad)

    def to_json(self, template: str | None = None) -> dict[str, Any]:
        return {"first_night": self.first_night, "labels": self.labels, "good": self.good, "bad": self.bad,
                "bisect": self.bisect(template), "changes": [c.to_json() for c in self.changes]}


@dataclass
class Farm:
    """Every label's changes in groups, oldest first night first; labels whose history was too short apart."""

    groups: list[Group]
    labels: list[str]
    skipped: dict[str, str]
    bisect_cmd: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"labels": self.labels, "skipped": self.skipped,
                "groups": [g.to_json(self.bisect_cmd) for g in self.groups]}


def commit_of(tags: dict[str, str]) -> str | None:
    """The commit a run's tags name (``commit=``, ``tt-metal=`` ...), if any."""
    return next((tags[t] for t in COMMIT_TAGS if tags.get(t)), None)


def find_farm(engine: Engine, *, labels: list[str] | None = None, bisect_cmd: str | None = None,
              **options: Any) -> Farm:
    """Every label's (or ``labels``') changes, grouped (see the module). ``options`` as
    :func:`warehouse.history.changes.find_changes`."""
    from warehouse.errors import WarehouseError

    with engine.connect() as conn:
        every = sorted({m.label for m in _labels(conn)} - {None})
    wanted = labels or every
    found: list[FarmChange] = []
    skipped: dict[str, str] = {}
    for label in wanted:
        try:
            res = find_changes(engine, label=label, **options)
        except WarehouseError as e:
            skipped[label] = str(e)
            continue
        order = [r["run_id"] for r in res.runs]
        by_id = {r["run_id"]: r for r in res.runs}
        for c in res.changes:
            i = order.index(c.run_id) if c.run_id in order else -1
            good = by_id[order[i - 1]] if i > 0 else None
            found.append(FarmChange(label, c, _bound(good), _bound(by_id.get(c.run_id)) or {"run_id": c.run_id}))
    return Farm(_group(found), wanted, skipped, bisect_cmd)


def _labels(conn: Any) -> list[Any]:
    from sqlalchemy import text
    return list(conn.execute(text("SELECT DISTINCT label FROM run WHERE label IS NOT NULL")))


def _bound(run: dict[str, Any] | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {"run_id": run["run_id"], "time": run.get("time"), "tags": run.get("tags") or {},
            "commit": commit_of(run.get("tags") or {})}


def _group(found: list[FarmChange]) -> list[Group]:
    """Changes into groups: by overlapping commit ranges where both carry commits, else by first night."""
    groups: list[Group] = []
    for fc in sorted(found, key=lambda f: (f.first_bad.get("time") or "", f.label)):
        night = (fc.first_bad.get("time") or "")[:10]
        rng = _range(fc)
        home = None
        for g in groups:
            g_ranges = [r for r in (_range(x) for x in g.changes) if r]
            if rng and g_ranges:
                if any(rng & r for r in g_ranges):
                    home = g
                    break
            elif g.first_night == night:
                home = g
                break
        if home is None:
            home = Group(night)
            groups.append(home)
        home.changes.append(fc)
    for g in groups:
        goods = [c.last_good for c in g.changes if c.last_good and c.last_good.get("commit")]
        bads = [c.first_bad for c in g.changes if c.first_bad.get("commit")]
        # (the narrowest range all agree on: the newest good end and the oldest bad end)
        g.good = max(goods, key=lambda r: r.get("time") or "")["commit"] if goods else None
        g.bad = min(bads, key=lambda r: r.get("time") or "")["commit"] if bads else None
    return groups


def _range(fc: FarmChange) -> set[str]:
    """The commits of a change's range, as far as its runs say: its last good and its first bad."""
    good = fc.last_good.get("commit") if fc.last_good else None
    bad = fc.first_bad.get("commit")
    return {c for c in (good, bad) if c} if good and bad else set()
