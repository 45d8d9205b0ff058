"""run ids are never reused (SQLite AUTOINCREMENT); arch and tag keys of any length

On SQLite a rowid table gives a deleted run's id to the next run unless the table is declared AUTOINCREMENT,
which only a rebuild can add (foreign keys are off during migrations, see ``warehouse.store.db._migrating``).
PostgreSQL's identity columns never reuse ids; there only the column types change.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _recreate() -> str:
    # only SQLite needs (and only SQLite can take) the rebuild; elsewhere ALTER COLUMN does it
    return "always" if op.get_bind().dialect.name == "sqlite" else "auto"


def upgrade() -> None:
    with op.batch_alter_table("run", recreate=_recreate(), table_kwargs={"sqlite_autoincrement": True}) as b:
        b.alter_column("arch", existing_type=sa.String(32), type_=sa.Text(), existing_nullable=True)
    with op.batch_alter_table("run_tag") as b:
        b.alter_column("key", existing_type=sa.String(128), type_=sa.Text(), existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("run_tag") as b:
        b.alter_column("key", existing_type=sa.Text(), type_=sa.String(128), existing_nullable=False)
    with op.batch_alter_table("run", recreate=_recreate(), table_kwargs={"sqlite_autoincrement": False}) as b:
        b.alter_column("arch", existing_type=sa.Text(), type_=sa.String(32), existing_nullable=True)
