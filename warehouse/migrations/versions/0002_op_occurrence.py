"""op.occurrence: the stable identity of an op across runs

An op is the same op in two runs when its section name, block, layer, op code and occurrence (its index among
the ops with those four values, in file order) are equal. Existing runs are backfilled.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

BACKFILL = """
UPDATE op SET occurrence = n.k FROM (
  SELECT o.id, ROW_NUMBER() OVER (
           PARTITION BY o.run_id, COALESCE(s.name, ''), COALESCE(o.block, ''), COALESCE(o.layer, ''), o.op_code_id
           ORDER BY o.row_no) - 1 AS k
  FROM op o LEFT JOIN section s ON s.id = o.section_id) n
WHERE n.id = op.id
"""


def upgrade() -> None:
    with op.batch_alter_table("op", schema=None) as batch_op:
        batch_op.add_column(sa.Column("occurrence", sa.Integer(), nullable=True,
                                      comment="index among the run's ops of the same section, block, layer, op code"))
    op.execute(BACKFILL)


def downgrade() -> None:
    with op.batch_alter_table("op", schema=None) as batch_op:
        batch_op.drop_column("occurrence")
