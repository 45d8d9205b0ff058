"""perf and every column: the static facts of ops for tt-perf-report's per-op analysis, every cell readable by SQL

Adds the interned perf_shape table (with its perf_tensor rows), op.perf_shape_id, run.perf_arch and run_column,
and stores the volatile cells of row_cells as JSON arrays (SQL reads them: view csv_cell). Existing runs are
converted and get their facts here, from their stored cells, by the same code as ingest
(warehouse.store.perfstore.backfill).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _REPORT_CELLS() -> list[sa.Column]:
    """The static cells the report prints, moved from op (one copy per op) to perf_shape (one per distinct
    static tuple)."""
    return [sa.Column("op_type", sa.Text(), nullable=False, comment="OP TYPE"),
            sa.Column("fidelity", sa.Text(), nullable=True, comment="MATH FIDELITY (stripped)"),
            sa.Column("input0_shape", sa.Text(), nullable=False,
                      comment="logical W x Z x Y x X of input 0 (the report's)"),
            sa.Column("input0_memory", sa.Text(), nullable=True, comment="INPUT_0_MEMORY (stripped)"),
            sa.Column("output0_memory", sa.Text(), nullable=True, comment="OUTPUT_0_MEMORY (stripped)")]


_MOVED = ["op_type", "fidelity", "input0_shape", "input0_memory", "output0_memory"]


def upgrade() -> None:
    op.create_table(
        "perf_shape",
        sa.Column("id", Id, nullable=False),
        sa.Column("digest", sa.LargeBinary(16), nullable=False),
        sa.Column("category", sa.Text(), nullable=False, comment="tt-perf-report's: Compute, DM, CCL, TM, Host, Other"),
        sa.Column("is_host", sa.Boolean(), nullable=False, comment="a host fallback op ((torch) in the op code)"),
        sa.Column("label", sa.Text(), nullable=False,
                  comment="the op code with the matmul / conv problem size or config"),
        sa.Column("analysis", sa.String(16), nullable=False, comment="full (matmul) | flops_only (conv) | none"),
        sa.Column("peak_fidelity", sa.Text(), nullable=True,
                  comment="MATH FIDELITY when tt-perf-report knows its peak: HiFi4, HiFi3, HiFi2, LoFi"),
        sa.Column("math_fidelity", sa.Text(), nullable=True, comment="the Math Fidelity text: fidelity and datatypes"),
        sa.Column("flop_count", sa.Double(), nullable=True, comment="floating-point operations of one call"),
        sa.Column("dram_bytes", sa.Double(), nullable=True, comment="bytes a matmul reads from and writes to DRAM"),
        sa.Column("dram_sharded", sa.Boolean(), nullable=False),
        sa.Column("cores", sa.Integer(), nullable=True, comment="CORE COUNT"),
        sa.Column("available_cores", sa.Integer(), nullable=True, comment="AVAILABLE WORKER CORE COUNT"),
        sa.Column("sub_device", sa.Text(), nullable=True, comment="SUB DEVICE ID"),
        sa.Column("in0_dtype", sa.Text(), nullable=True),
        sa.Column("in1_dtype", sa.Text(), nullable=True),
        sa.Column("out_dtype", sa.Text(), nullable=True),
        sa.Column("in0_memory", sa.Text(), nullable=True),
        sa.Column("inner_block", sa.Integer(), nullable=True, comment="in0_block_w of the program config"),
        sa.Column("subblock_h", sa.Integer(), nullable=True),
        sa.Column("subblock_w", sa.Integer(), nullable=True),
        *_REPORT_CELLS(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_perf_shape")),
        sa.UniqueConstraint("digest", name=op.f("uq_perf_shape_digest")),
    )
    op.create_table(
        "perf_tensor",
        sa.Column("perf_shape_id", Id, nullable=False),
        sa.Column("io", sa.String(8), nullable=False, comment="input | output"),
        sa.Column("idx", sa.Integer(), nullable=False, comment="the N of INPUT_N / OUTPUT_N"),
        *[sa.Column(d, sa.BigInteger(), nullable=True, comment=f"logical {d.upper()}") for d in "wzyx"],
        *[sa.Column(f"{d}_pad", sa.BigInteger(), nullable=True, comment=f"padded {d.upper()}") for d in "wzyx"],
        sa.Column("layout", sa.Text(), nullable=True),
        sa.Column("datatype", sa.Text(), nullable=True),
        sa.Column("memory", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["perf_shape_id"], ["perf_shape.id"],
                                name=op.f("fk_perf_tensor_perf_shape_id_perf_shape"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("perf_shape_id", "io", "idx", name=op.f("pk_perf_tensor")),
    )
    op.create_table(
        "run_column",
        sa.Column("run_id", Id, nullable=False),
        sa.Column("position", sa.Integer(), nullable=False, comment="0-based index in the header"),
        sa.Column("name", sa.Text(), nullable=False, comment="the CSV column name"),
        sa.Column("kind", sa.String(8), nullable=False, comment="static (in cell_tuple) | volatile (in row_cells)"),
        sa.Column("slot", sa.Integer(), nullable=False, comment="index in the cell tuple or in the volatile array"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_run_column_run_id_run"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "position", name=op.f("pk_run_column")),
    )
    op.create_index("ix_run_column_name", "run_column", ["name", "run_id"])
    with op.batch_alter_table("row_cells") as b:
        b.alter_column("cells", existing_type=sa.Text(), existing_nullable=False,
                       comment="the volatile cells, a JSON array of strings (trailing empty cells left out)")
    with op.batch_alter_table("op") as b:
        b.add_column(sa.Column("perf_shape_id", Id, nullable=True,
                               comment="the op's static facts for the per-op analysis (view op_perf)"))
        b.create_foreign_key(op.f("fk_op_perf_shape_id_perf_shape"), "perf_shape", ["perf_shape_id"], ["id"])
    with op.batch_alter_table("run") as b:
        b.add_column(sa.Column("perf_arch", sa.Text(), nullable=True,
                               comment="tt-perf-report's architecture for `warehouse perf` (NULL: one it does not "
                                       "know)"))
    from warehouse.migrations.legacy import reencode_cells
    from warehouse.migrations.legacy import perf_backfill as backfill

    reencode_cells(op.get_bind(), to_json=True)
    backfill(op.get_bind())
    with op.batch_alter_table("op") as b:
        for c in _MOVED:
            b.drop_column(c)


def downgrade() -> None:
    from warehouse.migrations.legacy import reencode_cells

    reencode_cells(op.get_bind(), to_json=False)
    with op.batch_alter_table("op") as b:
        b.add_column(sa.Column("op_type", sa.Text(), nullable=True))
        b.add_column(sa.Column("fidelity", sa.Text(), nullable=True))
        b.add_column(sa.Column("input0_shape", sa.Text(), nullable=True, comment="logical W x Z x Y x X of input 0"))
        b.add_column(sa.Column("input0_memory", sa.Text(), nullable=True))
        b.add_column(sa.Column("output0_memory", sa.Text(), nullable=True))
    op.execute("UPDATE op SET " + ", ".join(
        f"{c} = (SELECT p.{c} FROM perf_shape p WHERE p.id = op.perf_shape_id)" for c in _MOVED))
    with op.batch_alter_table("row_cells") as b:
        b.alter_column("cells", existing_type=sa.Text(), existing_nullable=False,
                       comment="the volatile cells, unit-separated (JSON when needed)")
    op.drop_index("ix_run_column_name", table_name="run_column")
    op.drop_table("run_column")
    op.drop_table("perf_tensor")
    with op.batch_alter_table("run") as b:
        b.drop_column("perf_arch")
    with op.batch_alter_table("op") as b:
        b.drop_constraint(op.f("fk_op_perf_shape_id_perf_shape"), type_="foreignkey")
        b.drop_column("perf_shape_id")
    op.drop_table("perf_shape")
