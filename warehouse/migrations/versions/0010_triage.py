"""triage: what a person decided about a change or a night

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "triage",
        sa.Column("id", sa.Text(), nullable=False,
                  comment="the finding's id (c-..., r-...) or run:<id> for a night"),
        sa.Column("run_id", Id, nullable=False,
                  comment="the night it names (a change: the first night of its new level)"),
        sa.Column("kind", sa.Text(), nullable=False, comment="step, creep, regression, improvement, run"),
        sa.Column("by", sa.Text(), nullable=False, comment="section, device, block, layer, op-code; run for a night"),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("up", sa.Boolean(), nullable=False, comment="the change made it slower"),
        sa.Column("status", sa.Text(), nullable=False, comment="acknowledged, expected or invalid"),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("who", sa.Text(), nullable=True),
        sa.Column("decided_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_triage_run_id_run"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_triage")),
    )


def downgrade() -> None:
    op.drop_table("triage")
