"""Small integer codes for the texts that every op row repeats (how its block and layer were attributed): a
code takes no byte or one in SQLite's record (0 and 1 none), the texts took 8 to 14 an op, twice. The views
(``op_detail``, ``op_history``) give the texts; SQL over the table ``op`` reads the codes (the schema's comments
list them)."""
from __future__ import annotations

# the report's attribution of an op (op.attribution): its own signposts, or the eager op's at its position
ATTRIBUTION = {"eager_position": 0, "signpost": 1}
# how history attributed an op (op.hist_how; see warehouse.capture.alignment)
HIST_HOW = {"position": 0, "signpost": 1, "aligned": 2, "unmatched": 3}


def code(codes: dict[str, int], name: str | None) -> int | None:
    """The stored code of ``name`` (None stays None)."""
    return None if name is None else codes[name]


def text_sql(column: str, codes: dict[str, int]) -> str:
    """SQL giving the text of a code column (NULL stays NULL)."""
    return f"CASE {column} " + " ".join(f"WHEN {v} THEN '{k}'" for k, v in codes.items()) + " END"


def comment(codes: dict[str, int]) -> str:
    """The codes as a schema comment: ``0 eager_position | 1 signpost``."""
    return " | ".join(f"{v} {k}" for k, v in codes.items())
