"""How a row's cells are stored as text for a lossless export: the volatile cells as a JSON array
(:func:`encode_volatile`,
with cells that a typed column holds marked :data:`NULL`), static cells inline, and the digests that key interned
texts."""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

_SEP = "\x1f"  # unit separator: never in tt-metal output; cells holding it fall back to JSON
_JSON = "\x1e"

# A cell that needs escaping in JSON (quote, backslash, control character) is rare: its chunk takes the slow path.
_NEEDS_ESCAPE = re.compile(r'[\\"\x00-\x1e]')  # \x1f separates the cells while building (counted below)


_TRAILING_EMPTY = re.compile(r'(?:,"")+(?=\])')


class _Null(str):
    """The type of :data:`NULL`: told from every cell read from a file by identity, never by its text."""


NULL = _Null("\x1d")


_NULL_MARK = '"\x1d"'


def encode_volatile(rows: Sequence[Sequence[str]], nulls: int = 0) -> list[str]:
    """The volatile cells of each row as a JSON array of strings that SQL can read (``json_extract`` on SQLite,
    ``->>`` on PostgreSQL; the view csv_cell), trailing empty cells left out; :data:`NULL` cells (``nulls`` of
    them in all) become JSON null. Built with joins, not an encoder: a chunk whose cells need no escaping (all
    of tt-metal's) costs little more than joining them."""
    if not rows:
        return []
    width = len(rows[0])
    joined = ["\x1f".join(r) for r in rows]
    whole = "".join(joined)
    # (a \x1d that is not one of the NULLs is a cell's own: such a chunk takes the slow path, by identity)
    if width and all(len(r) == width for r in rows) and whole.count("\x1f") == len(rows) * (width - 1) \
            and whole.count("\x1d") == nulls and not _NEEDS_ESCAPE.search(whole.replace("\x1d", "") if nulls
                                                                        else whole):
        text = '["' + '"]\n["'.join([j.rstrip("\x1f") for j in joined]) + '"]'
        # (no cell holds a quote: '[""]' can only be a row whose cells are all empty)
        text = text.replace("\x1f", '","').replace('[""]', "[]")
        if nulls:
            text = text.replace(_NULL_MARK, "null")
        return text.split("\n")
    return [_one(r) for r in rows]


def _one(row: Sequence[str]) -> str:
    cells = [None if c is NULL else c for c in row]
    text = _TRAILING_EMPTY.sub("", json.dumps(cells, ensure_ascii=False, separators=(",", ":")))
    return "[]" if text == '[""]' else text


def decode_volatile(text: str, n: int) -> list[str]:
    """Inverse of :func:`encode_volatile` for a row of ``n`` volatile cells."""
    cells = json.loads(text)
    if len(cells) < n:
        cells.extend([""] * (n - len(cells)))
    return cells


def encode_inline(cells: Sequence[str]) -> str:
    """The volatile cells of one row as one string (unit-separated; JSON when a cell holds a separator): the
    encoding before revision 0006, read only to convert it (see migration 0006)."""
    text = _SEP.join(cells)
    if text.count(_SEP) != len(cells) - 1 or text.startswith(_JSON):
        return _JSON + json.dumps(cells, ensure_ascii=False)
    return text


def decode_inline(text: str, n: int) -> list[str]:
    """Inverse of :func:`encode_inline` for a row of ``n`` volatile cells."""
    if text.startswith(_JSON):
        return json.loads(text[1:])
    if n == 0:
        return []
    return text.split(_SEP)


def digest(text: str) -> bytes:
    """16-byte content key of an interned string."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
