"""run_series: each run's rollups as typed arrays, what history reads

A year of ``changes`` spent 72 % of its time reading rollup rows back and parsing them; the same figures as one
row of blobs per run, section and grouping read in a fraction of that. The rows of runs stored before are built
when the upgrade reaches head (migrations/env.py calls ``warehouse.runs.derived.backfill``, the head's code).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "run_series",
        sa.Column("run_id", _ID, nullable=False),
        sa.Column("section", sa.Text(), nullable=False, comment="as rollup_row.section"),
        sa.Column("grouping", sa.String(32), nullable=False, comment="as rollup_key.grouping"),
        sa.Column("figure", sa.String(32), nullable=False,
                  comment="key_ids (rollup_key ids), devices (-1: all) or a column of the view rollup"),
        sa.Column("row_count", sa.Integer(), nullable=False, comment="how many rows (keys x devices) the arrays have"),
        sa.Column("data", sa.LargeBinary(), nullable=False,
                  comment="the array, little-endian: ids int32 (int64 past 2^31), devices int32 (empty: all -1), "
                          "values float64 in the view's units (NaN: NULL), or int32 whole stored units, or one "
                          "float64 for all rows, or empty for NULL on every row (warehouse.store.runseries.decode)"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_run_series_run_id_run"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "section", "grouping", "figure", name=op.f("pk_run_series")),
        sqlite_with_rowid=False,
        comment="per run, section, grouping and figure: the rollup rows as one typed array per figure (key ids, "
                "devices, each column of the view `rollup` in its units), what history reads; derived from "
                "`rollup_row`, rebuilt by `warehouse check --repair`",
    )


def downgrade() -> None:
    op.drop_table("run_series")
