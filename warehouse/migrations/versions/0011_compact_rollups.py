"""compact rollups: keys stored once (rollup_key), times in whole ns, one b-tree per row (rollup_row)

The table ``rollup`` kept each row's grouping and key as text twice (in the table and in its primary key index)
and its times as doubles: on a realistic 100,000-op capture it was 39 MB of a 72 MB run, more than the ops. Its
rows move to ``rollup_row`` (a ``rollup_key`` id instead of the two texts, ``WITHOUT ROWID`` on SQLite so that the
primary key is the table) and ``rollup`` becomes a view with the same columns, so that SQL over it and every
reader stay as they were. The rows of existing runs are computed again from their ops when the upgrade reaches
head (migrations/env.py calls ``warehouse.runs.derived.backfill``, the head's code): exact sums in ns, not the old
doubles converted.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

_TIMES = [("kernel", "kernel time", "ns"), ("op2op", "op-to-op time", "ns"), ("fw", "FW time", "ns"),
          ("span", "span", "us")]


def upgrade() -> None:
    op.create_table(
        "rollup_key",
        sa.Column("id", Id, nullable=False),
        sa.Column("grouping", sa.String(32), nullable=False,
                  comment="section | block | layer | op-code | category ..."),
        sa.Column("key", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rollup_key")),
        sa.UniqueConstraint("grouping", "key", name=op.f("uq_rollup_key_grouping_key")),
    )
    metrics = []
    for base, label, unit in _TIMES:
        metrics.append(sa.Column(f"{base}_{unit}", sa.Double(), nullable=True,
                                 comment=f"{label} per iteration (mean over replays), {unit}"))
        metrics.append(sa.Column(f"{base}_spread_{unit}", sa.Double(), nullable=True,
                                 comment=f"max - min over replays (NULL: one), {unit}"))
    op.create_table(
        "rollup_row",
        sa.Column("run_id", Id, nullable=False),
        sa.Column("section", sa.Text(), nullable=False,
                  comment="eager, trace, a custom section's name, '' the whole run"),
        sa.Column("key_id", Id, nullable=False),
        sa.Column("device", sa.Integer(), nullable=False, comment="-1: all devices together"),
        sa.Column("iterations", sa.Integer(), nullable=False, comment="replays the figures are averaged over"),
        sa.Column("ops", sa.Double(), nullable=False, comment="ops per iteration"),
        *metrics,
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_rollup_row_run_id_run"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["key_id"], ["rollup_key.id"], name=op.f("fk_rollup_row_key_id_rollup_key")),
        sa.PrimaryKeyConstraint("run_id", "section", "key_id", "device", name=op.f("pk_rollup_row")),
        sqlite_with_rowid=False,
    )
    op.drop_table("rollup")  # (its rows are built again from the ops at head)


def downgrade() -> None:
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
    op.execute("INSERT INTO rollup SELECT r.run_id, r.section, k.grouping, k.key, r.device, r.iterations, r.ops, "
               "r.kernel_ns / 1000.0, r.kernel_spread_ns / 1000.0, r.op2op_ns / 1000.0, r.op2op_spread_ns / 1000.0, "
               "r.fw_ns / 1000.0, r.fw_spread_ns / 1000.0, r.span_us, r.span_spread_us "
               "FROM rollup_row r JOIN rollup_key k ON k.id = r.key_id")
    op.drop_table("rollup_row")
    op.drop_table("rollup_key")
