"""Stored bytes by SQLite's ``sqlar`` convention: zlib-compressed exactly when the stored length differs from the
raw size, so that SQL reads them with ``sqlar_uncompress(data, raw_size)`` (the stock sqlite3 shell has it built
in). No SQLAlchemy here: the light read path (:mod:`warehouse.lite`) reads the report parts with it."""
from __future__ import annotations

import zlib
from collections.abc import Iterable


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


def pack_pieces(pieces: Iterable[str], compress: bool, keep: int = 1 << 16) -> tuple[bytes, int]:
    """:func:`pack_text` of the pieces joined, compressed as they come so that the whole text is never held. The
    raw bytes are kept (in case the text does not compress) only up to ``keep`` bytes: a longer text is stored
    compressed when ``compress``, whatever its ratio (JSON of figures always shrinks)."""
    if not compress:
        raw = "".join(pieces).encode("utf-8", "surrogatepass")
        return raw, len(raw)
    z = zlib.compressobj(6)
    out: list[bytes] = []
    head: list[bytes] | None = []
    size = 0
    for piece in pieces:
        b = piece.encode("utf-8", "surrogatepass")
        size += len(b)
        out.append(z.compress(b))
        if head is not None:
            head.append(b)
            if size > keep:
                head = None
    out.append(z.flush())
    packed = b"".join(out)
    if head is not None and len(packed) >= size:
        return b"".join(head), size
    return packed, size


def unpack_text(data: bytes, size: int) -> str:
    """The text that :func:`pack_text` stored."""
    return (sqlar_uncompress(data, size) or b"").decode("utf-8", "surrogatepass")
