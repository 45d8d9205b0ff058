"""the warehouse's own id: a table of facts about the warehouse, with ``id`` made once

A Parquet lake's manifest names the warehouse it mirrors, so that another warehouse (which numbers its runs from 1
too) cannot export into it and remove the first one's runs.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06
"""
from __future__ import annotations

import uuid

from alembic import op
import sqlalchemy as sa

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "warehouse_meta",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_warehouse_meta"),
        comment="facts about the warehouse itself: `id`, made once when it is created, which a Parquet lake's "
                "manifest names so that no other warehouse exports into it",
    )
    op.bulk_insert(table, [{"key": "id", "value": uuid.uuid4().hex}])


def downgrade() -> None:
    op.drop_table("warehouse_meta")
