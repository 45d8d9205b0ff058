"""Reading the stored rollups in SQL: the ``rollup`` view's SELECT (keys as text, times in us), the same as a FROM
item that seeks only some groupings' rows, and the section names a read filters on (so that it follows the primary
key). Computing rollups is :mod:`warehouse.analysis.rollups`' work; reading them as series,
:mod:`warehouse.history`'s."""
from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, text

from warehouse.registry.measures import METRICS
from warehouse.store.dialect import rank_of


def rollup_select(rank: bool = False) -> str:
    """The SELECT of the view ``rollup`` (every stored rollup row with its grouping and key as text, its times
    in us; ``rank``: with the rank of a multi-host capture's run, as the view has it)."""
    metrics = []
    for m in METRICS:
        for stored, shown in ((m.stored_column, m.column), (m.stored_spread_column, m.spread_column)):
            metrics.append(f"r.{stored} / {m.scale:.1f} AS {shown}" if m.scale != 1 else f"r.{stored} AS {shown}")
    return (f"SELECT r.run_id, r.section, k.grouping, k.key, r.device, r.iterations, r.ops, "
            f"{', '.join(metrics)}{', ' + rank_of('r') if rank else ''}\n"
            "FROM rollup_row r JOIN rollup_key k ON k.id = r.key_id")


def rollup_of(groupings: Iterable[str] = (), *, bind: str | None = None) -> str:
    """The view ``rollup`` as a FROM item of the rows of ``groupings`` only (or of the grouping in the bind
    parameter ``bind``). A query of the view that filters on grouping reads every row of each run and section it
    asks for (a run of a big model holds some 17,000 rollup rows, 3 of them section totals); this one seeks the
    rows of those groupings' keys on the primary key (a year's section totals: 0.5 s -> 3 ms)."""
    which = f":{bind}" if bind else sql_list(groupings)
    return (f"({rollup_select()} WHERE r.key_id IN (SELECT id FROM rollup_key WHERE grouping IN ({which}))) "
            "AS rollup")


def section_names(conn: Connection, run_ids: Iterable[int]) -> list[str]:
    """Every section name the runs' rollups can hold ('' the whole run, then each section's name), from the small
    ``section`` table: a ``section IN (...)`` filter built from it lets a rollup read follow the primary key
    (run, section, grouping, ...) instead of scanning every row of each run."""
    ids = [int(r) for r in run_ids]
    names = {""}
    for k in range(0, len(ids), 500):
        names.update(conn.execute(text(
            f"SELECT DISTINCT name FROM section WHERE run_id IN ({', '.join(map(str, ids[k:k + 500]))})")).scalars())
    return sorted(names)


def sql_list(values: Iterable[str]) -> str:
    """Text values as a SQL list literal (quotes doubled), for IN filters over thousands of runs."""
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def rollup_view_sql() -> str:
    """The view ``rollup``: every stored row with its grouping and key as text and its times in us."""
    return f"CREATE VIEW rollup AS\n{rollup_select(rank=True)}"
