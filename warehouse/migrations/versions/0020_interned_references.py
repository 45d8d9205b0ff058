"""references to interned tables are not constraints on PostgreSQL

``op.op_code_id``, ``op.place_id``, ``op.hist_place_id``, ``op.perf_shape_id`` and ``rollup_row.key_id`` point into
content-addressed tables that ingest fills before it uses them and nothing ever deletes from. On PostgreSQL every
op row inserted (and every trace op moved to its eager op's place) fired one lookup per reference, over a third
of the server's time of an ingest; ingest writes these ids only as it found or made them, and ``warehouse check``
verifies them with a query. SQLite keeps them as constraints (its ingest already skips them and ``check`` reads
them): nothing changes there.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07
"""
from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

# (name, table, column, referred table): written out, a migration must not follow the head's modules
_REFERENCES = [("fk_op_place_id_place", "op", "place_id", "place"),
               ("fk_op_op_code_id_op_code", "op", "op_code_id", "op_code"),
               ("fk_op_hist_place_id_place", "op", "hist_place_id", "place"),
               ("fk_op_perf_shape_id_perf_shape", "op", "perf_shape_id", "perf_shape"),
               ("fk_rollup_row_key_id_rollup_key", "rollup_row", "key_id", "rollup_key")]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, table, _column, _parent in _REFERENCES:
        op.drop_constraint(name, table, type_="foreignkey")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, table, column, parent in _REFERENCES:
        op.create_foreign_key(name, table, parent, [column], ["id"])
