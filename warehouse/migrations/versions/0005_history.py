"""history: a second attribution for ops (per replay, aligned), replay iterations, and per-run rollups

The oracle's attribution (op.block / op.layer) stays as it is for the report. History reads op.hist_block /
op.hist_layer, which also covers replayed and mismatched traces, and the rollup table, which holds per-iteration
figures per run x section x grouping x key x device. Existing runs are attributed and rolled up here.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("op") as b:
        b.add_column(sa.Column("hist_block", sa.Text(), nullable=True,
                               comment="history attribution: the block (see hist_how)"))
        b.add_column(sa.Column("hist_layer", sa.Text(), nullable=True, comment="history attribution: the layer"))
        b.add_column(sa.Column("hist_how", sa.String(16), nullable=True,
                               comment="how history attributed it: signpost | position | aligned | unmatched "
                                       "(NULL: no signpost)"))
        b.add_column(sa.Column("iteration", sa.Integer(), nullable=True,
                               comment="trace: the replay (0, 1, ...) the op belongs to"))
        b.add_column(sa.Column("iter_pos", sa.Integer(), nullable=True,
                               comment="trace: the op's position within its replay"))
    with op.batch_alter_table("run") as b:
        b.add_column(sa.Column("attribution", sa.Text(), nullable=True,
                               comment="JSON: ops per history attribution (signpost, position, aligned, unmatched, "
                                       "none)"))
    op.create_table(
        "rollup",
        sa.Column("run_id", Id, nullable=False),
        sa.Column("section", sa.Text(), nullable=False,
                  comment="eager, trace, a custom section's name, '' the whole run"),
        sa.Column("grouping", sa.String(32), nullable=False,
                  comment="section | block | layer | op-code | category ..."),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("device", sa.Integer(), nullable=False, comment="-1: all devices together"),
        sa.Column("iterations", sa.Integer(), nullable=False, comment="replays the figures are averaged over"),
        sa.Column("ops", sa.Double(), nullable=False, comment="ops per iteration"),
        sa.Column("kernel_us", sa.Double(), nullable=True, comment="per iteration (mean over replays)"),
        sa.Column("kernel_spread_us", sa.Double(), nullable=True, comment="max - min over replays (NULL: one)"),
        sa.Column("op2op_us", sa.Double(), nullable=True),
        sa.Column("op2op_spread_us", sa.Double(), nullable=True),
        sa.Column("fw_us", sa.Double(), nullable=True),
        sa.Column("fw_spread_us", sa.Double(), nullable=True),
        sa.Column("span_us", sa.Double(), nullable=True, comment="section and device totals only"),
        sa.Column("span_spread_us", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_rollup_run_id_run"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "section", "grouping", "key", "device", name=op.f("pk_rollup")),
    )
    # Existing runs: the history attribution, computed by the same code as ingest (their rollups are built when
    # the upgrade reaches head, by the head's code: see migrations/env.py).
    from warehouse.migrations.legacy import backfill_v8

    backfill_v8(op.get_bind())


def downgrade() -> None:
    op.drop_table("rollup")
    with op.batch_alter_table("run") as b:
        b.drop_column("attribution")
    with op.batch_alter_table("op") as b:
        for c in ("iter_pos", "iteration", "hist_how", "hist_layer", "hist_block"):
            b.drop_column(c)
