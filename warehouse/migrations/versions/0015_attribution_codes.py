"""attribution codes: op.attribution and op.hist_how as small integers

Every op row repeated the text of how its block and layer were attributed, twice (``signpost``,
``eager_position``, ``position`` ...): 8 to 14 bytes each, about 2 MB of a realistic 100,000-op capture (a fifth
of the op table). They become the codes of ``warehouse.registry.codes`` (0 and 1 take no byte in SQLite's record); the
views ``op_detail`` and ``op_history`` give the texts as before. The codes are written out here (a migration
must not follow the head's modules).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_CODES = {"attribution": {"eager_position": 0, "signpost": 1},
          "hist_how": {"position": 0, "signpost": 1, "aligned": 2, "unmatched": 3}}
_COMMENTS = {
    "attribution": ("the report's: 0 eager_position | 1 signpost (warehouse.registry.codes; op_detail gives the text)",
                    "signpost | eager_position"),
    "hist_how": ("how history attributed it: 0 position | 1 signpost | 2 aligned | 3 unmatched (NULL: no signpost; "
                 "op_history gives the text)",
                 "how history attributed it: signpost | position | aligned | unmatched (NULL: no signpost)"),
}


def _quoted(comment: str) -> str:
    return "'" + comment.replace("'", "''") + "'"


def _case(column: str, pairs: list[tuple[str, str]]) -> str:
    return f"CASE {column} " + " ".join(f"WHEN {a} THEN {b}" for a, b in pairs) + " END"


def upgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    for col, codes in _CODES.items():
        case = _case(col, [(f"'{k}'", str(v)) for k, v in codes.items()])
        if pg:
            op.execute(f"ALTER TABLE op ALTER COLUMN {col} TYPE smallint USING ({case})")
            op.execute(f"COMMENT ON COLUMN op.{col} IS {_quoted(_COMMENTS[col][0])}")
        else:
            op.execute(f"UPDATE op SET {col} = {case} WHERE {col} IS NOT NULL")
    if not pg:  # (SQLite keeps the values as they are; the declared type follows in one rebuild of the table)
        with op.batch_alter_table("op") as batch:
            for col in _CODES:
                batch.alter_column(col, existing_type=sa.String(16), type_=sa.SmallInteger(), existing_nullable=True,
                                   comment=_COMMENTS[col][0], existing_comment=_COMMENTS[col][1])


def downgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    for col, codes in _CODES.items():
        case = _case(col, [(str(v), f"'{k}'") for k, v in codes.items()])
        if pg:
            op.execute(f"ALTER TABLE op ALTER COLUMN {col} TYPE varchar(16) USING ({case})")
            op.execute(f"COMMENT ON COLUMN op.{col} IS {_quoted(_COMMENTS[col][1])}")
        else:
            op.execute(f"UPDATE op SET {col} = {case} WHERE {col} IS NOT NULL")
    if not pg:
        with op.batch_alter_table("op") as batch:
            for col in _CODES:
                batch.alter_column(col, existing_type=sa.SmallInteger(), type_=sa.String(16), existing_nullable=True,
                                   comment=_COMMENTS[col][1], existing_comment=_COMMENTS[col][0])
