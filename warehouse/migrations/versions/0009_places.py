"""places: an op names its (block, layer) pairs by id, for the report's attribution and for history's

The four text columns op.block, op.layer, op.hist_block, op.hist_layer become op.place_id and op.hist_place_id
into the interned table ``place`` ('' for a missing block or layer; NULL id: neither). The views give the text as
before. Both ways convert every stored op.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_PAIRS = (("place_id", "block", "layer"), ("hist_place_id", "hist_block", "hist_layer"))


def upgrade() -> None:
    from warehouse.capture.places import place_digest

    op.create_table(
        "place",
        sa.Column("id", Id, nullable=False),
        sa.Column("digest", sa.LargeBinary(16), nullable=False),
        sa.Column("block", sa.Text(), nullable=False, comment="the model block ('' when none)"),
        sa.Column("layer", sa.Text(), nullable=False, comment="the layer ('' when none)"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_place")),
        sa.UniqueConstraint("digest", name=op.f("uq_place_digest")),
    )
    op.add_column("op", sa.Column("place_id", Id, nullable=True))
    op.add_column("op", sa.Column("hist_place_id", Id, nullable=True))
    bind = op.get_bind()
    pairs = set()
    for _, b, lay in _PAIRS:
        pairs.update(bind.execute(sa.text(f"SELECT DISTINCT COALESCE({b}, ''), COALESCE({lay}, '') FROM op "
                                          f"WHERE {b} IS NOT NULL OR {lay} IS NOT NULL")).all())
    place = sa.table("place", sa.column("digest"), sa.column("block"), sa.column("layer"))
    rows = [{"digest": place_digest(b, lay), "block": b, "layer": lay} for b, lay in sorted(pairs)]
    if rows:
        bind.execute(place.insert(), rows)
    op.create_index("tmp_place_pair", "place", ["block", "layer"])
    for col, b, lay in _PAIRS:
        op.execute(f"UPDATE op SET {col} = (SELECT p.id FROM place p WHERE p.block = COALESCE(op.{b}, '') "
                   f"AND p.layer = COALESCE(op.{lay}, '')) WHERE {b} IS NOT NULL OR {lay} IS NOT NULL")
    op.drop_index("tmp_place_pair", table_name="place")
    with op.batch_alter_table("op") as batch:
        for col, b, lay in _PAIRS:
            batch.drop_column(b)
            batch.drop_column(lay)
        batch.alter_column("place_id", existing_type=Id, existing_nullable=True,
                           comment="the report's block and layer (NULL: neither); the views give them as text")
        batch.alter_column("hist_place_id", existing_type=Id, existing_nullable=True,
                           comment="history attribution: the block and layer (see hist_how; NULL: neither)")
        batch.create_foreign_key(op.f("fk_op_place_id_place"), "place", ["place_id"], ["id"])
        batch.create_foreign_key(op.f("fk_op_hist_place_id_place"), "place", ["hist_place_id"], ["id"])


def downgrade() -> None:
    op.add_column("op", sa.Column("block", sa.Text(), nullable=True))
    op.add_column("op", sa.Column("layer", sa.Text(), nullable=True))
    op.add_column("op", sa.Column("hist_block", sa.Text(), nullable=True,
                                  comment="history attribution: the block (see hist_how)"))
    op.add_column("op", sa.Column("hist_layer", sa.Text(), nullable=True, comment="history attribution: the layer"))
    for col, b, lay in _PAIRS:
        op.execute(f"UPDATE op SET {b} = (SELECT NULLIF(p.block, '') FROM place p WHERE p.id = op.{col}), "
                   f"{lay} = (SELECT NULLIF(p.layer, '') FROM place p WHERE p.id = op.{col}) "
                   f"WHERE {col} IS NOT NULL")
    with op.batch_alter_table("op") as batch:
        batch.drop_constraint(op.f("fk_op_place_id_place"), type_="foreignkey")
        batch.drop_constraint(op.f("fk_op_hist_place_id_place"), type_="foreignkey")
        batch.drop_column("place_id")
        batch.drop_column("hist_place_id")
    op.drop_table("place")
