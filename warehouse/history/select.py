"""Which runs form a history, the first thing both history questions agree on: the runs of a label (and tags, and
dates), in capture order, and which of them no baseline may hold: invalid captures (what ingest saw in the file,
a collapsed op count), nights a person called invalid, runs of another model under the same label. The triage
decisions come with it (an acknowledged step re-baselines its own keys), and the warnings every history command
prints (capture times that cannot be right, other models, nights left out)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, select

from warehouse.errors import NotFound
from warehouse.history.quality import judge, other_models
from warehouse.history.series import RunMeta, run_meta, select_runs
from warehouse.history.triage import Decision, decisions, invalid_runs
from warehouse.history.wholecapture import WholeCapture, whole_part
from warehouse.runs.ranks import run_ranks
from warehouse.store import schema as t

QUALITY_WINDOW = 7  # a night's op counts are judged against the median of this many valid nights before it
FUTURE_SLACK = timedelta(days=1)  # a capture time this far past its ingest time is no time (clocks, time zones)
PAST_JUMP = timedelta(days=60)  # a capture this far before the label's newest when it was ingested is said


@dataclass
class History:
    """The runs of one history question, oldest first, with what makes some of them no baseline."""

    runs: list[int]
    meta: dict[int, RunMeta]
    problems: dict[int, list[str]] = field(default_factory=dict)  # invalid captures: why (never a baseline)
    strangers: dict[int, str] = field(default_factory=dict)  # another model under the label: why
    decisions: list[Decision] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # a multi-host label: each run's rank (a history of its own: a night is judged against its own rank's nights)
    rank: dict[int, str | None] = field(default_factory=dict)

    @property
    def valid(self) -> list[int]:
        """The runs a baseline may hold."""
        return [r for r in self.runs if not self.problems.get(r) and r not in self.strangers]

    def before(self, run: int) -> list[int]:
        """The valid runs before ``run`` in history order (of its own rank, on a multi-host label)."""
        pos = self.runs.index(run)
        mine = self.rank.get(run)
        return [r for r in self.runs[:pos] if not self.problems.get(r) and r not in self.strangers
                and self.rank.get(r) == mine]

    def newest(self, last: int) -> list[int]:
        """The ``last`` newest runs of each rank (one history of one host: its ``last`` newest), in history
        order."""
        keep: set[int] = set()
        for runs in _by_rank(self.runs, self.rank).values():
            keep.update(runs[-last:])
        return [r for r in self.runs if r in keep]

    def accepted(self) -> list[Decision]:
        """The steps a person acknowledged or expects: each re-baselines its own keys from its night on."""
        return [d for d in self.decisions if d.status in ("acknowledged", "expected") and d.kind != "run"]


def _by_rank(runs: list[int], rank: dict[int, str] | dict[int, str | None]) -> dict[str | None, list[int]]:
    """``runs`` by the rank they hold (None: no rank), each in its order."""
    out: dict[str | None, list[int]] = {}
    for r in runs:
        out.setdefault(rank.get(r), []).append(r)
    return out


def ordered(conn: Connection, runs: list[int]) -> tuple[list[int], list[str]]:
    """``runs`` in history order, and warnings for capture times that cannot be right.

    A run takes its capture time. One without (no date in its file name, or a date in the future, which ingest
    refuses to keep: it would make it every history's newest night for good) or with a time after its ingest takes
    the place of the night it was ingested on: just after the newest run its label held then (its ingest time when
    it was the first). A capture time far before what the label held when it was ingested is said."""
    rows = {rid: (cap, ing) for rid, cap, ing in conn.execute(
        select(t.run.c.id, t.run.c.captured_at, t.run.c.ingested_at).where(t.run.c.id.in_(runs)))} if runs else {}
    warnings = []
    # (what ingest said of a capture time it could not keep: a history command says it again)
    odd = {rid: msg for rid, msg in conn.execute(
        select(t.run_warning.c.run_id, t.run_warning.c.message).where(
            t.run_warning.c.run_id.in_([r for r in runs if rows[r][0] is None]),
            t.run_warning.c.message.like("the file name's capture time%")))} if runs else {}
    when: dict[int, datetime] = {}
    newest: datetime | None = None
    for rid in sorted(runs, key=lambda r: (rows[r][1], r)):  # in ingest order: what the label held then
        cap, ing = rows[rid]
        if cap is not None and ing is not None and cap > ing + FUTURE_SLACK:
            warnings.append(f"run {rid}'s capture time {cap:%Y-%m-%d %H:%M} is after it was ingested "
                            f"({ing:%Y-%m-%d %H:%M}): ordered as the night it was ingested on (rename its file "
                            "to fix it)")
            cap = None
        if cap is None and rid in odd:
            warnings.append(f"run {rid}: {odd[rid]}")
        if cap is None:
            w = newest + timedelta(microseconds=1) if newest is not None and ing is not None and newest < ing else ing
            when[rid] = w if w is not None else datetime.min
        else:
            when[rid] = cap
            if newest is not None and cap < newest - PAST_JUMP:
                warnings.append(f"run {rid}'s capture time {cap:%Y-%m-%d %H:%M} is {(newest - cap).days} days "
                                "before the newest run its label held when it was ingested (a wrong date in its "
                                "file name?)")
        newest = when[rid] if newest is None else max(newest, when[rid])
    return sorted(runs, key=lambda r: (when[r], r)), warnings


def load(conn: Connection, *, label: str | None = None, tags: dict[str, str] | None = None,
         since: str | None = None, until: str | None = None, last: int | None = None,
         excluded: set[int] | None = None) -> History:
    """The history of ``label`` and ``tags`` between ``since`` and ``until`` (ISO dates, inclusive), its newest
    ``last`` runs only when given, with its invalid captures, other models and triage decisions; ``excluded``
    runs are left out of every baseline too. No run at all is an error (exit 2)."""
    runs = select_runs(conn, label, tags)
    if not runs:
        raise NotFound("no runs in the warehouse; ingest a CSV first")
    runs, warnings = ordered(conn, runs)
    meta = run_meta(conn, runs)
    if since or until:
        runs = [r for r in runs if in_range(meta[r], since, until)]
    rank = run_ranks(conn, runs)
    if last is not None:  # (the newest ``last`` of each rank)
        keep = {r for mine in _by_rank(runs, rank).values() for r in mine[-last:]}
        runs = [r for r in runs if r in keep]
    h = History(runs, {r: meta[r] for r in runs}, warnings=warnings, rank={r: rank.get(r) for r in runs})
    h.problems = {r: p for r, p in judge(conn, runs, QUALITY_WINDOW).items() if p}
    for r, why in invalid_runs(conn, runs).items():
        h.problems[r] = [why]
    for r in excluded or ():
        h.problems.setdefault(r, ["left out by the caller"])
    h.strangers = other_models(conn, runs)
    h.decisions = decisions(conn, runs)
    for r in sorted(h.strangers):
        h.warnings.append(f"{h.meta[r].short()} {h.strangers[r]}: left out of every baseline")
    return h


def in_range(m: RunMeta, since: str | None, until: str | None) -> bool:
    """Whether the run's day is between ``since`` and ``until`` (ISO dates, inclusive; None: open)."""
    day = (m.time or "")[:10]
    return (since is None or day >= since[:10]) and (until is None or day <= until[:10])


class OneRank(set[int]):
    """The runs left out of one rank's history (the other ranks' runs among them): its history is not split
    again."""


def rank_parts(engine: Engine, label: str | None, tags: dict[str, str] | None, excluded: set[int] | None
                ) -> list[OneRank | WholeCapture]:
    """On a label holding the ranks of multi-host captures, what each rank's history leaves out (one entry per
    rank, in rank order), then the history of the captures as wholes (:mod:`warehouse.history.wholecapture`);
    none when the history is one host's, or when ``excluded`` is one part's already."""
    if isinstance(excluded, (OneRank, WholeCapture)):
        return []
    with engine.connect() as conn:
        runs = select_runs(conn, label, tags)
        by_rank = _by_rank(runs, run_ranks(conn, runs))
        if len(by_rank) < 2:
            return []
        whole = whole_part(conn, runs, excluded)
    order = sorted(by_rank, key=lambda k: (k is not None, int(k) if k and k.isdigit() else -1, str(k)))
    return [*(OneRank(set(excluded or ()) | (set(runs) - set(by_rank[k]))) for k in order), whole]
