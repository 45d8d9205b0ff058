"""The column families' views (``op_<family>``): each family column read from the lossless store where each run's
header put it, typed as the family says (the families themselves are :mod:`warehouse.registry.families`)."""
from __future__ import annotations

from warehouse.registry.families import FAMILIES, NUMBER, TEXT, Family
from warehouse.store.dialect import AS_NUMBER, CHUNK_ROWS, JSON_CELL, STATIC_CELLS, rank_of


def _typed(kind: str, cell: str, backend: str) -> str:
    """SQL reading one raw cell expression as the family column's kind."""
    if kind == NUMBER:
        return AS_NUMBER[backend].replace("value", f"({cell})")
    stripped = f"NULLIF(TRIM({cell}), '')"
    if kind == TEXT:
        return stripped
    return (f"CASE LOWER({stripped}) WHEN 'true' THEN 1 WHEN '1' THEN 1 WHEN 'false' THEN 0 WHEN '0' THEN 0 "
            "END")


def family_view_sql(fam: Family, backend: str) -> str:
    """A family view's CREATE statement: the op rows of the lossless store, each column read where the run's
    header put it (a column the run lacks reads NULL)."""
    # The run's header position of each column, one row per run: a primary-key join per column and row, not a
    # search by name (the last position of a name is the one ingest types, as csv.DictReader reads it).
    cols = list(fam.columns)
    slots = ", ".join(
        "COALESCE(" + ", ".join(f"MAX(CASE WHEN name = '{name}' THEN position END)" for name in c.csv)
        + f") AS p{i}" if len(c.csv) > 1 else f"MAX(CASE WHEN name = '{c.csv[0]}' THEN position END) AS p{i}"
        for i, c in enumerate(cols))
    joins = "\n".join(f"LEFT JOIN run_column k{i} ON k{i}.run_id = rc.run_id AND k{i}.position = s.p{i}"
                      for i in range(len(cols)))

    cell = JSON_CELL[backend]
    out = ",\n       ".join(
        _typed(c.kind, cell.replace("k.kind", f"k{i}.kind").replace("k.slot", f"k{i}.slot"), backend)
        + f" AS {c.name}" for i, c in enumerate(cols))
    return f"""
CREATE VIEW {fam.view} AS
WITH rc AS (
  {CHUNK_ROWS[backend]}),
s AS (SELECT run_id, {slots} FROM run_column GROUP BY run_id)
SELECT o.run_id, o.row_no, o.device_id AS device, oc.name AS op_code,
       {out},
       {rank_of("o")}
FROM rc JOIN s ON s.run_id = rc.run_id JOIN op o ON o.run_id = rc.run_id AND o.row_no = rc.row_no
JOIN op_code oc ON oc.id = o.op_code_id JOIN cell_tuple t ON t.id = rc.static_id{STATIC_CELLS[backend]}
{joins}"""


def family_views() -> list[tuple[str, str, dict[str, str]]]:
    """The family views as (name, one line, SQL per back end), for warehouse.store.views."""
    return [(f.view, f.doc, {b: family_view_sql(f, b) for b in JSON_CELL}) for f in FAMILIES]
