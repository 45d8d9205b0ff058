"""row_cells: every row's export cells in one narrow table, out of op and signpost

Scans of ``op`` (every report view) read only typed columns; export reads one table in row order.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "row_cells",
        sa.Column("run_id", Id, nullable=False),
        sa.Column("row_no", sa.Integer(), nullable=False),
        sa.Column("static_id", Id, nullable=False),
        sa.Column("cells", sa.Text(), nullable=False,
                  comment="the volatile cells, unit-separated (JSON when needed)"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_row_cells_run_id_run"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["static_id"], ["cell_tuple.id"], name=op.f("fk_row_cells_static_id_cell_tuple")),
        sa.PrimaryKeyConstraint("run_id", "row_no", name=op.f("pk_row_cells")),
        sqlite_with_rowid=False,
    )
    op.execute("INSERT INTO row_cells (run_id, row_no, static_id, cells) "
               "SELECT run_id, row_no, static_id, cells FROM op UNION ALL "
               "SELECT run_id, row_no, static_id, cells FROM signpost")
    for table in ("op", "signpost"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(op.f(f"fk_{table}_static_id_cell_tuple"), type_="foreignkey")
            batch_op.drop_column("cells")
            batch_op.drop_column("static_id")


def downgrade() -> None:
    for table in ("op", "signpost"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("static_id", Id, nullable=True))
            batch_op.add_column(sa.Column("cells", sa.Text(), nullable=True))
        op.execute(f"UPDATE {table} SET static_id = (SELECT c.static_id FROM row_cells c WHERE c.run_id = "
                   f"{table}.run_id AND c.row_no = {table}.row_no), cells = (SELECT c.cells FROM row_cells c "
                   f"WHERE c.run_id = {table}.run_id AND c.row_no = {table}.row_no)")
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column("static_id", existing_type=Id, nullable=False)
            batch_op.alter_column("cells", existing_type=sa.Text(), nullable=False)
            batch_op.create_foreign_key(op.f(f"fk_{table}_static_id_cell_tuple"), "cell_tuple", ["static_id"], ["id"])
    op.drop_table("row_cells")
