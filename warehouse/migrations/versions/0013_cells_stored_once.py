"""cells stored once: a chunk may hold JSON null where its op's typed value prints the cell

From this revision ingest stores a volatile cell of a typed numeric column (kernel, FW, op-to-op durations,
FW cycles, device id, call count, host times) only in the op table when its text is exactly the value printed
(``str(int(value))``: ``123676``, not ``123676.0`` or ``0123``); the chunk keeps null in its place, and export
and the view csv_cell print the op's value. Nothing changes in the tables: the runs stored before keep their
cells as text, which this revision reads as well. The downgrade prints every null back into its chunk.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""
from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass  # (a storage convention of the rows ingested from now on: see the docstring)


def downgrade() -> None:
    from warehouse.migrations.legacy import fill_stored_once
    fill_stored_once(op.get_bind())
