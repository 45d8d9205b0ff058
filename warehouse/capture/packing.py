"""Stored bytes by SQLite's ``sqlar`` convention: zlib-compressed exactly when the stored length differs from the
raw size, so that SQL reads them with ``sqlar_uncompress(data, raw_size)`` (the stock sqlite3 shell has it built
in). No SQLAlchemy here: the light read path (:mod:`warehouse.store.lite`) reads the report parts with it."""
from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable
from typing import Any

_deflate: Callable[[bytes, int], bytes | bytearray] | None
try:  # libdeflate: the same zlib streams, smaller and sooner (any zlib reads them: sqlar_uncompress, the shell's)
    from deflate import zlib_compress as _deflate
except ImportError:  # pragma: no cover - a core dependency; zlib makes the same format, a little larger
    _deflate = None

CHUNK_ROWS = 512  # rows per chunk: larger chunks compress little better and make a row's lookup dearer
# The chunks' level, measured on a realistic 100,000-op capture's (19.3 MB of JSON): libdeflate's level 4 gives
# 3.73 MB in 0.09 s where zlib's level 3 gave 4.17 MB in 0.13 s (its 1: 4.69 MB in 0.10 s; libdeflate's 6: 3.46 MB
# in 0.15 s). The reader process packs them, and its time is the stream's.
LEVEL = 4


def deflate_bytes(raw: bytes, level: int) -> bytes:
    """A zlib stream of ``raw`` (libdeflate's when it is installed, else zlib's)."""
    return bytes(_deflate(raw, level)) if _deflate is not None else zlib.compress(raw, level)


# What one inflated value may hold unless the caller says otherwise: a stored chunk is about 100 KiB, a run's report
# document a few MB (the largest captures' documents are read by unpack_text, with their own stored size).
INFLATE_LIMIT = 64 << 20


class InflateError(ValueError):
    """A stored value that does not inflate to its declared size, or would pass the limit."""


def sqlar_uncompress(data: bytes | None, size: int | None, limit: int | None = INFLATE_LIMIT) -> bytes | None:
    """SQLite shell's ``sqlar_uncompress(X, SZ)``: X when its length is SZ, else X inflated (zlib). Inflation stops
    at SZ bytes, and a SZ over ``limit`` is refused: SQL can hand this function any bytes and any size (a deflate
    stream of repeated blocks inflates a thousandfold), so memory is bounded by what was declared, never by what
    the stream would make."""
    if data is None or size is None:
        return data
    data = bytes(data)
    if size <= 0 or len(data) == size:
        return data
    if limit is not None and size > limit:
        raise InflateError(f"sqlar_uncompress: a declared size of {size:,} bytes is over the limit of {limit:,}")
    d = zlib.decompressobj()
    out = d.decompress(data, size)
    if d.unconsumed_tail and d.decompress(d.unconsumed_tail, 1):
        raise InflateError(f"sqlar_uncompress: the data inflates past its declared size of {size:,} bytes")
    return out


def pack_text(value: str, compress: bool) -> tuple[bytes, int]:
    """A text as stored by the sqlar convention: ``(bytes, raw_size)``, zlib-compressed (level 6: a document is
    written once and read often) when ``compress`` and it is smaller."""
    raw = value.encode("utf-8", "surrogatepass")
    if compress:
        packed = deflate_bytes(raw, 6)
        if len(packed) < len(raw):
            return packed, len(raw)
    return raw, len(raw)


def pack_pieces(pieces: Iterable[str]) -> tuple[bytes, int]:
    """:func:`pack_text` of the text ``pieces`` make, compressed as they come (zlib's level 6, a stream): a long
    text is never held whole, raw or encoded."""
    comp = zlib.compressobj(6)
    out: list[bytes] = []
    raw: list[bytes] | None = []  # (kept while short: a short text may not shrink, and is stored as it is)
    size = 0
    for piece in pieces:
        data = piece.encode("utf-8", "surrogatepass")
        size += len(data)
        out.append(comp.compress(data))
        if raw is not None:
            raw.append(data)
            if size > 1 << 20:
                raw = None
    out.append(comp.flush())
    packed = b"".join(out)
    if len(packed) < size:
        return packed, size
    assert raw is not None, "a text of over a MiB that does not shrink"  # (JSON always does)
    return b"".join(raw), size


def unpack_text(data: bytes, size: int) -> str:
    """The text that :func:`pack_text` stored (its own stored size bounds it: a run's document may be large)."""
    return (sqlar_uncompress(data, size, limit=None) or b"").decode("utf-8", "surrogatepass")


def pack_cells(row_nos: list[int], texts: list[str], compress: bool) -> dict[str, Any]:
    """One chunk's column values but ``static_ids``, from its rows' numbers and volatile JSON, in file order
    (what a file alone decides: ingest computes it away from the database, see :mod:`warehouse.capture.rowprep`)."""
    raw = ("[" + ",".join(texts) + "]").encode("utf-8", "surrogatepass")
    data = raw
    if compress:
        packed = deflate_bytes(raw, LEVEL)
        if len(packed) < len(raw):  # (never equal in length: that would read as uncompressed)
            data = packed
    first, last = row_nos[0], row_nos[-1]
    contiguous = last - first + 1 == len(row_nos)
    return {"first_row": first, "last_row": last, "row_nos": None if contiguous else json.dumps(row_nos),
            "raw_size": len(raw), "cells": data}


def cut_chunks(rows: list, final: bool) -> list[list]:
    """The whole chunks of ``CHUNK_ROWS`` rows at the front of ``rows`` (and the rest too when ``final``),
    taken out of it: the rows that remain wait for the next ones."""
    n = len(rows) if final else len(rows) - len(rows) % CHUNK_ROWS
    chunks = [rows[i:i + CHUNK_ROWS] for i in range(0, n, CHUNK_ROWS)]
    del rows[:n]
    return chunks
