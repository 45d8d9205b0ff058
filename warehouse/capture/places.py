"""The (block, layer) pairs that ops are attributed to, interned in ``place``: an op stores two small ids (its
report attribution and its history attribution) instead of four strings, about half of the op table's bytes."""
from __future__ import annotations

import json

from warehouse.capture.cellcodec import digest


def place_digest(block: str, layer: str) -> bytes:
    """The natural key of a pair ('' for a missing block or layer)."""
    return digest(json.dumps([block, layer], ensure_ascii=False))
