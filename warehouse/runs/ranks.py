"""Multi-host captures: ``tt-run --tracy`` writes one ordinary report per rank, under
``<folder>/rank<N>/<report dir>/ops_perf_results_*.csv``.

Each rank's file is a run of its own: its report, export and cells are exactly those of any file. The runs of one
capture carry two tags: ``host``, the id of rank 0's run (the capture's id), and ``rank``. ``warehouse perf`` reads
them together as tt-perf-report reads the files given together; ``--rank N`` picks one; history judges each rank
apart (a history of a label holding ranks is one history per rank, see :func:`run_ranks`).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, delete, select

from warehouse.capture.ranklayout import HOST_TAG, RANK_TAG
from warehouse.errors import NotFound, UsageError
from warehouse.store import schema as t
from warehouse.store.db import write_tx
from warehouse.store.dialect import insert_ignore
from warehouse.runs.maintenance import remove_runs


def link(engine: Engine, run_ids: list[int]) -> None:
    """Make ``run_ids`` (in rank order) the ranks of one capture, in one transaction: tags ``host`` (the first's
    id) and ``rank``; a run that was a rank of another capture leaves it."""
    if len(run_ids) < 2 or len(set(run_ids)) < len(run_ids):
        raise UsageError("a multi-host capture is two runs or more, each named once, in rank order")
    with write_tx(engine) as conn:
        known = set(conn.execute(select(t.run.c.id).where(t.run.c.id.in_(run_ids))).scalars())
        for rid in run_ids:
            if rid not in known:
                raise NotFound(f"no run {rid}; `warehouse runs` lists them")
        for rank, rid in enumerate(run_ids):
            conn.execute(delete(t.run_tag).where(t.run_tag.c.run_id == rid,
                                                 t.run_tag.c.key.in_([HOST_TAG, RANK_TAG])))
            for k, v in ((HOST_TAG, str(run_ids[0])), (RANK_TAG, str(rank))):
                conn.execute(insert_ignore(conn, t.run_tag).values(run_id=rid, key=k, value=v))


def ranks(conn: Connection, run_id: int) -> list[int]:
    """The runs of the capture ``run_id`` belongs to, in rank order (``[run_id]`` for a run of one host)."""
    tg = t.run_tag.c
    host = conn.execute(select(tg.value).where(tg.run_id == run_id, tg.key == HOST_TAG)).scalar()
    if host is None:
        return [run_id]
    r = t.run_tag.alias("r")
    members = conn.execute(select(tg.run_id, r.c.value).join(r, (r.c.run_id == tg.run_id) & (r.c.key == RANK_TAG))
                           .where(tg.key == HOST_TAG, tg.value == host)).all()
    return [rid for rid, _ in sorted(members, key=lambda m: int(m[1]) if m[1].isdigit() else 1 << 30)] or [run_id]


def rank_run(conn: Connection, run_id: int, rank: int) -> int:
    """The run of rank ``rank`` of the capture ``run_id`` belongs to."""
    members = ranks(conn, run_id)
    if rank >= len(members):
        what = f"a capture of {len(members)} ranks (0-{len(members) - 1})" if len(members) > 1 else \
            "a run of one host (no rank tags)"
        raise NotFound(f"run {run_id} is {what}: no rank {rank}")
    return members[rank]


def run_ranks(conn: Connection, runs: list[int]) -> dict[int, str]:
    """The rank of each of ``runs`` that is a rank of a multi-host capture (tagged ``host`` and ``rank``): each
    rank of a multi-host label is a history of its own."""
    return {r: rank for r, (_, rank) in run_hosts(conn, runs).items()}


def run_hosts(conn: Connection, runs: list[int]) -> dict[int, tuple[str, str]]:
    """(capture, rank) of each of ``runs`` that is a rank of a multi-host capture: its ``host`` tag (the id of rank
    0's run) and its ``rank`` tag."""
    if not runs:
        return {}
    tg, h = t.run_tag.c, t.run_tag.alias("h")
    return {rid: (host, rank) for rid, host, rank in conn.execute(
        select(tg.run_id, h.c.value, tg.value).join(h, (h.c.run_id == tg.run_id) & (h.c.key == HOST_TAG))
        .where(tg.key == RANK_TAG, tg.run_id.in_(runs)))}


def capture_outcomes(writer: Callable[[], Engine], groups: list[list[Path]], done: Callable[[Any], None]
                     ) -> Callable[[Any], None]:
    """``done`` for ingest outcomes (:class:`warehouse.api.IngestOutcome`), with those of multi-host captures'
    files held back until every rank of a capture is done: then the ranks are linked, or, when one failed, the
    others stored for it are removed (a part of a capture is never kept as if it were whole). ``writer``: the
    warehouse's writing engine, asked for only then."""
    group_of = {str(f): k for k, g in enumerate(groups) for f in g}
    held: dict[int, dict[str, Any]] = {}

    def collect(o: Any) -> None:
        k = group_of.get(o.path)
        if k is None:
            return done(o)
        held.setdefault(k, {})[o.path] = o
        if len(held[k]) == len(groups[k]):
            mine = held.pop(k)
            _settle(writer, [mine[str(f)] for f in groups[k]], done)
        return None
    return collect


def _settle(writer: Callable[[], Engine], ordered: list[Any], done: Callable[[Any], None]) -> None:
    failed = [(r, o) for r, o in enumerate(ordered) if o.error is not None or o.run_id is None]
    if failed:
        fresh = [o.run_id for o in ordered if o.error is None and o.run_id is not None and not o.existing]
        if fresh:
            remove_runs(writer(), fresh)
        rank, first = failed[0]
        for o in ordered:
            if o.error is None and not o.existing:  # (a run stored before this ingest stays as it was)
                o.run_id, o.error = None, (f"{o.path}: not kept: rank {rank} of its multi-host capture failed "
                                           f"({first.error}); ingest the capture again once fixed")
            done(o)
        return
    ids = [o.run_id for o in ordered]
    link(writer(), ids)
    for rank, o in enumerate(ordered):
        o.host, o.rank = ids[0], rank
        done(o)
