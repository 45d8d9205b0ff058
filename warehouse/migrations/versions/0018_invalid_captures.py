"""invalid captures said at ingest: run_warning.invalid marks what makes a night no measurement

A capture cut short (a section that never closed, a padded last row, the last replay short of ops), or one whose
durations are negative, is an invalid capture whatever its history says: the gate exits 4 on it and every history
command leaves it out. Ingest now marks such warnings; the warnings stored before are marked here from their text
(the same sentences ingest wrote then).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_COMMENT = ("the file shows the capture is not a whole measurement (cut, never closed, negative durations): the gate "
            "exits 4 on it and history leaves the night out")
# the messages ingest wrote before this revision that make a capture invalid (written out: a migration must not
# follow the head's modules)
_INVALID = ("section 'eager'% never closed%", "section 'trace'% never closed%", "%padded with empty cells%", "%negative kernel durations%", "%negative FW durations%")


def upgrade() -> None:
    with op.batch_alter_table("run_warning") as batch:
        batch.add_column(sa.Column("invalid", sa.Boolean(), nullable=False, server_default=sa.false(),
                                   comment=_COMMENT))
    where = " OR ".join(f"message LIKE :p{i}" for i in range(len(_INVALID)))
    op.get_bind().execute(sa.text(f"UPDATE run_warning SET invalid = :t WHERE {where}"),
                          {"t": True, **{f"p{i}": p for i, p in enumerate(_INVALID)}})


def downgrade() -> None:
    with op.batch_alter_table("run_warning") as batch:
        batch.drop_column("invalid")
