"""Series across runs: which runs match a filter, and per-run totals by section, block, layer, op code,
category or single op (the ``series_*`` and ``op_identity`` views)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

from sqlalchemy import Connection, select, text

from warehouse import schema as t
from warehouse.errors import NotFound, UsageError
from warehouse.runs import order_key
from warehouse.views import BLOCK_KEY, LAYER_KEY

# --by value -> (view, key column): every dimension is a view users can query themselves.
DIMENSIONS = {
    "section": ("series_section", "key"),
    "category": ("series_category", "key"),
    "block": ("series_block", "key"),
    "layer": ("series_layer", "key"),
    "op-code": ("series_op_code", "key"),
    "op": ("op_identity", "identity"),
}


@dataclass
class Value:
    """One series point: a key's totals in one run and section."""

    ops: int
    kernel_us: float
    gap_us: float


def select_runs(conn: Connection, label: str | None = None, tags: dict[str, str] | None = None) -> list[int]:
    """Ids of the runs with ``label`` and every tag in ``tags``, oldest capture first."""
    q = select(t.run.c.id)
    if label is not None:
        q = q.where(t.run.c.label == label)
    for k, v in (tags or {}).items():
        q = q.where(t.run.c.id.in_(select(t.run_tag.c.run_id).where(t.run_tag.c.key == k, t.run_tag.c.value == v)))
    return list(conn.execute(q.order_by(*order_key())).scalars())


def sections_of(conn: Connection, run_id: int) -> set[str]:
    """The section names that hold ops in a run ('' for ops outside every section)."""
    return set(conn.execute(text("SELECT DISTINCT section FROM series_section WHERE run_id = :r"),
                            {"r": run_id}).scalars())


def check_section(conn: Connection, section: str | None, run_ids: list[int]) -> None:
    """Refuse a ``--section`` that none of the runs has (a typo must not turn a CI gate into a silent pass)."""
    if section is None or section == "all":
        return
    have: set[str] = set()
    for r in run_ids:
        have |= sections_of(conn, r)
    if section not in have:
        names = ", ".join(sorted(n for n in have if n)) or "none"
        raise NotFound(f"--section {section!r}: no such section in run(s) {', '.join(map(str, run_ids))} "
                       f"(sections there: {names}; 'all' for ops outside sections)")


def default_section(conn: Connection, run_ids: Iterable[int]) -> str:
    """``trace`` when every run has one, else ``eager``, else ``''`` (ops outside any section)."""
    common: set[str] | None = None
    for r in run_ids:
        s = sections_of(conn, r)
        common = s if common is None else common & s
    for cand in ("trace", "eager"):
        if common and cand in common:
            return cand
    return "" if common and "" in common else next(iter(sorted(common or {""})))


def fetch(conn: Connection, by: str, run_ids: list[int], section: str) -> dict[int, dict[str, Value]]:
    """``{run id: {key: Value}}`` for a dimension and section over the given runs."""
    if by not in DIMENSIONS:
        raise UsageError(f"--by {by!r}: expected one of {', '.join(DIMENSIONS)}")
    view, key = DIMENSIONS[by]
    out: dict[int, dict[str, Value]] = defaultdict(dict)
    if not run_ids:
        return out
    if by == "op":
        sql = (f"SELECT run_id, {key} AS key, COUNT(*) AS ops, SUM(kernel_us) AS kernel_us, SUM(gap_us) AS gap_us "
               f"FROM {view} WHERE run_id IN ({', '.join(map(str, run_ids))}) AND COALESCE(section, '') = :s "
               f"GROUP BY run_id, {key}")
    else:
        sql = (f"SELECT run_id, key, ops, kernel_us, gap_us FROM {view} "
               f"WHERE run_id IN ({', '.join(map(str, run_ids))}) AND section = :s")
    for r in conn.execute(text(sql), {"s": section}).mappings():
        out[r["run_id"]][r["key"]] = Value(int(r["ops"]), float(r["kernel_us"] or 0), float(r["gap_us"] or 0))
    return out


def fetch_replays(conn: Connection, by: str, run_id: int, section: str) -> dict[str, list[float]]:
    """Per key, the kernel us of each replay session of a run (only when it has several)."""
    if by == "section":
        key = "'total'"
    elif by == "op":
        key = "identity"
    else:
        key = {"category": "category", "block": BLOCK_KEY, "layer": LAYER_KEY, "op-code": "op_code"}[by]
    view = "op_identity" if by == "op" else "op_detail"
    group = "" if key.startswith("'") else f"{key}, "  # PostgreSQL refuses a constant in GROUP BY
    rows = conn.execute(text(
        f"SELECT {key} AS key, replay_session, SUM(kernel_us) AS k FROM {view} "
        f"WHERE run_id = :r AND COALESCE(section, '') = :s AND replay_session <> '' "
        f"GROUP BY {group}replay_session"), {"r": run_id, "s": section}).all()
    per: dict[str, list[float]] = defaultdict(list)
    for k, _, v in rows:
        per[k].append(float(v or 0))
    return {k: v for k, v in per.items() if len(v) > 1}
