"""stored report parts: the OPT_BASELINE report's figures computed from a run's ops, once, at ingest

Adds ``run_report``. The parts of runs stored before are computed when the upgrade reaches head (migrations/env.py
calls ``warehouse.analysis.report.backfill_parts`` after the views are back: the computation reads them).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "run_report",
        sa.Column("run_id", Id, nullable=False),
        sa.Column("doc", sa.Text(), nullable=False,
                  comment="JSON: trace_ids, replay_sessions and the eager / trace sections of the OPT_BASELINE report"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_run_report_run_id_run"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_run_report")),
        comment="per run, the OPT_BASELINE report's parts computed from its ops (trace ids, sections, group "
                "tables, top ops), stored at ingest so that `report` reads kilobytes, not ops",
    )


def downgrade() -> None:
    op.drop_table("run_report")
