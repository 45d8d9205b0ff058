"""rollup key digests: a rollup key is looked up by an 8-byte digest, not by a unique index on its texts

The unique constraint on ``rollup_key (grouping, key)`` kept every key's texts a second time, in its index: half
of the table's bytes (1.6 of 3.0 MB on a realistic 100,000-op capture's first night). Keys get ``digest`` (the
first 8 bytes of md5(grouping, x'1f', key), as ``warehouse.store.dialect.key_digest`` computes it; written out here,
a migration must not follow the head's modules), unique, and the constraint on the texts goes.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02
"""
from __future__ import annotations

import hashlib

from alembic import op
import sqlalchemy as sa

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_COMMENT = "the first 8 bytes of md5(grouping, x'1f', key): what ingest looks a key up by"


def _digest(grouping: str, key: str) -> bytes:
    return hashlib.md5(f"{grouping}\x1f{key}".encode("utf-8", "surrogatepass")).digest()[:8]


def upgrade() -> None:
    with op.batch_alter_table("rollup_key") as batch:
        batch.add_column(sa.Column("digest", sa.LargeBinary(8), nullable=True, comment=_COMMENT))
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, grouping, key FROM rollup_key")).all()
    if rows:
        bind.execute(sa.text("UPDATE rollup_key SET digest = :d WHERE id = :i"),
                     [{"d": _digest(g, k), "i": i} for i, g, k in rows])
    with op.batch_alter_table("rollup_key") as batch:
        batch.drop_constraint("uq_rollup_key_grouping_key", type_="unique")
        batch.alter_column("digest", existing_type=sa.LargeBinary(8), nullable=False, existing_comment=_COMMENT)
        batch.create_unique_constraint("uq_rollup_key_digest", ["digest"])


def downgrade() -> None:
    with op.batch_alter_table("rollup_key") as batch:
        batch.drop_constraint("uq_rollup_key_digest", type_="unique")
        batch.drop_column("digest")
        batch.create_unique_constraint("uq_rollup_key_grouping_key", ["grouping", "key"])
