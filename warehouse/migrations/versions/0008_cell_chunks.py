"""cell chunks: the export cells of consecutive rows stored together, compressed (SQLite) or left to TOAST (PostgreSQL)

Replaces the per-row ``row_cells`` with ``cell_chunk`` (see warehouse.store.cells): a run's database growth halves
and export stays byte for byte. Both ways convert every stored run.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    from warehouse.migrations.legacy import to_chunks

    op.create_table(
        "cell_chunk",
        sa.Column("run_id", Id, nullable=False),
        sa.Column("first_row", sa.Integer(), nullable=False, comment="row_no of the chunk's first row"),
        sa.Column("last_row", sa.Integer(), nullable=False, comment="row_no of its last row"),
        sa.Column("row_nos", sa.Text(), nullable=True,
                  comment="JSON list of the rows' row_no, when they are not first_row .. last_row"),
        sa.Column("static_ids", sa.Text(), nullable=False, comment="JSON list: each row's cell_tuple id"),
        sa.Column("raw_size", sa.Integer(), nullable=False, comment="bytes of the cells' JSON text"),
        sa.Column("cells", sa.LargeBinary(), nullable=False,
                  comment="the rows' volatile cells, a JSON array of arrays of strings (trailing empty cells left "
                          "out); zlib-compressed when its length differs from raw_size: sqlar_uncompress(cells, "
                          "raw_size)"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_cell_chunk_run_id_run"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "first_row", name=op.f("pk_cell_chunk")),
        sqlite_with_rowid=False,
        comment="every row's cells for export, in compressed chunks of consecutive rows: each row's `cell_tuple` "
                "id and its volatile cells (durations, cycles...)",
    )
    to_chunks(op.get_bind())
    op.drop_table("row_cells")
    _kind_comment("volatile (in cell_chunk)")


def _kind_comment(where: str) -> None:
    with op.batch_alter_table("run_column") as b:
        b.alter_column("kind", existing_type=sa.String(8), existing_nullable=False,
                       comment=f"static (in cell_tuple) | {where}")


def downgrade() -> None:
    from warehouse.migrations.legacy import to_rows

    op.create_table(
        "row_cells",
        sa.Column("run_id", Id, nullable=False),
        sa.Column("row_no", sa.Integer(), nullable=False),
        sa.Column("static_id", Id, nullable=False),
        sa.Column("cells", sa.Text(), nullable=False,
                  comment="the volatile cells, a JSON array of strings (trailing empty cells left out)"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_row_cells_run_id_run"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["static_id"], ["cell_tuple.id"], name=op.f("fk_row_cells_static_id_cell_tuple")),
        sa.PrimaryKeyConstraint("run_id", "row_no", name=op.f("pk_row_cells")),
        sqlite_with_rowid=False,
        comment="every row's cells for export: a `cell_tuple` id and the volatile cells (durations, cycles...)",
    )
    to_rows(op.get_bind())
    op.drop_table("cell_chunk")
    _kind_comment("volatile (in row_cells)")
