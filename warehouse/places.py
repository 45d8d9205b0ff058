"""The (block, layer) pairs that ops are attributed to, interned in ``place``: an op stores two small ids (its
report attribution and its history attribution) instead of four strings, about half of the op table's bytes."""
from __future__ import annotations

import json

from sqlalchemy import Connection, select

from warehouse import dialect
from warehouse import schema as t
from warehouse.csvfile import digest


def place_digest(block: str, layer: str) -> bytes:
    """The natural key of a pair ('' for a missing block or layer)."""
    return digest(json.dumps([block, layer], ensure_ascii=False))


class Places:
    """``places(block, layer)``: the pair's ``place`` id (inserted when new), None for neither; cached."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.ids: dict[tuple[str, str], int] = {}

    def __call__(self, block: str | None, layer: str | None) -> int | None:
        if not block and not layer:
            return None
        pair = (block or "", layer or "")
        i = self.ids.get(pair)
        if i is None:
            d = place_digest(*pair)
            self.conn.execute(dialect.insert_ignore(self.conn, t.place).values(digest=d, block=pair[0],
                                                                                layer=pair[1]))
            i = self.ids[pair] = self.conn.execute(select(t.place.c.id).where(t.place.c.digest == d)).scalar_one()
        return i
