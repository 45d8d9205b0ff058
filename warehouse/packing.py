"""Stored bytes by SQLite's ``sqlar`` convention: zlib-compressed exactly when the stored length differs from the
raw size, so that SQL reads them with ``sqlar_uncompress(data, raw_size)`` (the stock sqlite3 shell has it built
in). No SQLAlchemy here: the light read path (:mod:`warehouse.lite`) reads the report parts with it."""
from __future__ import annotations

import zlib


def sqlar_uncompress(data: bytes | None, size: int | None) -> bytes | None:
    """SQLite shell's ``sqlar_uncompress(X, SZ)``: X when its length is SZ, else X inflated (zlib)."""
    if data is None or size is None:
        return data
    data = bytes(data)
    if size <= 0 or len(data) == size:
        return data
    return zlib.decompress(data, bufsize=size)


def pack_text(value: str, compress: bool) -> tuple[bytes, int]:
    """A text as stored by the sqlar convention: ``(bytes, raw_size)``, zlib-compressed (level 6: a document is
    written once and read often) when ``compress`` and it is smaller."""
    raw = value.encode("utf-8", "surrogatepass")
    if compress:
        packed = zlib.compress(raw, 6)
        if len(packed) < len(raw):
            return packed, len(raw)
    return raw, len(raw)


def unpack_text(data: bytes, size: int) -> str:
    """The text that :func:`pack_text` stored."""
    return (sqlar_uncompress(data, size) or b"").decode("utf-8", "surrogatepass")
