"""layer / op code rollups computed when asked, not stored

The rollups of the drill-down grouping ``layer/op-code`` (which op codes of a moved layer moved) were 61 % of the
rollup rows of a realistic capture and about a quarter of a night's growth: a layer holds few ops, so its op codes
are nearly a key per op. Only ``regressions`` reads them, to explain a moved layer over the few runs of its window,
and from this revision it computes them from those runs' ops (warehouse.analysis.rollups.computed_rows). The upgrade
deletes the stored rows and their keys; the downgrade computes them again for every run.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""
from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    conn.exec_driver_sql("DELETE FROM rollup_row WHERE key_id IN "
                         "(SELECT id FROM rollup_key WHERE grouping = 'layer/op-code')")
    conn.exec_driver_sql("DELETE FROM rollup_key WHERE grouping = 'layer/op-code'")


def downgrade() -> None:
    from warehouse.migrations.legacy import store_layer_op_code_rollups
    store_layer_op_code_rollups(op.get_bind())
