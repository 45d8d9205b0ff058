"""packed report parts: run_report.doc compressed as the cell chunks are (sqlar convention)

A 100,000-op run's report parts are 4.3 MB of JSON (its per-layer tables); zlib packs them to about a tenth.
``doc`` becomes bytes with ``raw_size`` beside it: zlib-compressed on SQLite when its length differs from
``raw_size`` (``sqlar_uncompress(doc, raw_size)`` reads it in SQL), the UTF-8 text itself on PostgreSQL, which
compresses it itself (TOAST).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""
from __future__ import annotations

import zlib

from alembic import op
import sqlalchemy as sa

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_DOC = ("JSON: trace_ids, replay_sessions and the eager / trace sections of the OPT_BASELINE report; "
        "zlib-compressed when its length differs from raw_size: sqlar_uncompress(doc, raw_size)")
_OLD_DOC = "JSON: trace_ids, replay_sessions and the eager / trace sections of the OPT_BASELINE report"


def _pack(text: str, compress: bool) -> tuple[bytes, int]:
    # (a copy of warehouse.store.cells.pack_text as it is at this revision: a migration never follows later code)
    raw = text.encode("utf-8", "surrogatepass")
    if compress:
        packed = zlib.compress(raw, 6)
        if len(packed) < len(raw):
            return packed, len(raw)
    return raw, len(raw)


def _unpack(data: bytes, size: int) -> str:
    data = bytes(data)
    if len(data) != size:
        data = zlib.decompress(data)
    return data.decode("utf-8", "surrogatepass")


def upgrade() -> None:
    conn = op.get_bind()
    compress = conn.dialect.name == "sqlite"
    with op.batch_alter_table("run_report") as b:
        b.add_column(sa.Column("raw_size", sa.Integer(), nullable=True))
        b.add_column(sa.Column("packed", sa.LargeBinary(), nullable=True))
    for run_id, doc in conn.execute(sa.text("SELECT run_id, doc FROM run_report")).all():
        packed, size = _pack(doc, compress)
        conn.execute(sa.text("UPDATE run_report SET packed = :p, raw_size = :n WHERE run_id = :r"),
                     {"p": packed, "n": size, "r": run_id})
    with op.batch_alter_table("run_report") as b:
        b.drop_column("doc")
    with op.batch_alter_table("run_report") as b:
        b.alter_column("packed", new_column_name="doc", existing_type=sa.LargeBinary(), nullable=False,
                       comment=_DOC)
        b.alter_column("raw_size", existing_type=sa.Integer(), nullable=False,
                       comment="bytes of the document's JSON text")


def downgrade() -> None:
    conn = op.get_bind()
    with op.batch_alter_table("run_report") as b:
        b.add_column(sa.Column("text_doc", sa.Text(), nullable=True))
    for run_id, doc, size in conn.execute(sa.text("SELECT run_id, doc, raw_size FROM run_report")).all():
        conn.execute(sa.text("UPDATE run_report SET text_doc = :d WHERE run_id = :r"),
                     {"d": _unpack(doc, size), "r": run_id})
    with op.batch_alter_table("run_report") as b:
        b.drop_column("doc")
        b.drop_column("raw_size")
    with op.batch_alter_table("run_report") as b:
        b.alter_column("text_doc", new_column_name="doc", existing_type=sa.Text(), nullable=False,
                       comment=_OLD_DOC)
