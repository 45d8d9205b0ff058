"""Interning at ingest: op codes, places, long strings and static cell tuples are stored once and named by id;
each batch of rows resolves its new ones in bulk (and, where the back end needs it, on a connection of its own so
that concurrent ingests never wait on each other's uncommitted keys)."""
from __future__ import annotations

import json
from array import array

from sqlalchemy import Connection, Table

from warehouse.capture.cellcodec import digest
from warehouse.capture.csvfile import LONG_TEXT
from warehouse.capture.places import place_digest
from warehouse.registry.categories import category, is_compute
from warehouse.store import dialect
from warehouse.store import schema as t

def tuple_json(cells: list[str | int]) -> str:
    """A static cell tuple as stored (``cell_tuple.cells``): compact JSON, trailing empty cells left out (readers
    take a missing cell as empty, as the volatile arrays' readers do): a signpost row's tuple is its name and
    then a hundred empty cells, and the signposts of a model with thousands of layers are a tuple each."""
    end = len(cells)
    while end and cells[end - 1] == "":
        end -= 1
    return json.dumps(cells[:end], ensure_ascii=False, separators=(",", ":"))


class Interner:
    """Ids of interned op codes, places, long strings and static cell tuples, resolved in bulk per batch of rows.

    Static cell tuples arrive as tokens (see :mod:`warehouse.capture.rowprep`): ``ids[token]`` is the tuple's
    ``cell_tuple`` id once :meth:`resolve_pending` has run. Caches are bounded (a file whose every row has new
    static cells must not grow memory with its length), and on back ends where
    :func:`warehouse.store.dialect.interns_apart` says so, interning commits on a connection of its own, in digest
    order, so that concurrent ingests never wait on each other's uncommitted keys."""

    MAX_CACHED = 20_000  # entries of each cache; cleared whole when passed (cheap, and rare in real files)

    def __init__(self, conn: Connection):
        self.main = conn
        self.texts: dict[str, int] = {}
        self.ids = array("q")  # token -> cell_tuple id (-1 until resolved): 8 bytes a token, never cleared
        self.codes: dict[str, int] = {}
        self.code_names: dict[int, str] = {}  # (op code id -> name)
        self.places_cache: dict[tuple[str, str], int] = {}
        self.pair_of: dict[int, tuple[str, str]] = {}  # (the cached places' pairs, by id, for the rollup keys)
        self.keep_pairs = True
        self.pending: list[tuple[int, tuple[str, ...]]] = []  # (token, static cells) not yet resolved
        self._apart = dialect.interns_apart(conn)
        self._conn: Connection | None = None

    def connection(self) -> Connection:
        if not self._apart:
            return self.main
        if self._conn is None:
            self._conn = self.main.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _resolve(self, table: Table, key_col: str, values: dict[object, dict]) -> dict[object, int]:
        """``{key: id}`` for rows keyed by ``key_col``, inserting the missing ones (in key order)."""
        return {k: v[0] for k, v in dialect.resolve_ids(self.connection(), table, key_col, values).items()}

    def op_code(self, name: str) -> int:
        i = self.codes.get(name)
        if i is None:
            i = self.codes[name] = self._resolve(
                t.op_code, "name", {name: {"name": name, "category": category(name),
                                           "is_compute": is_compute(name)}})[name]
            self.code_names[i] = name
        return i

    def place(self, block: str | None, layer: str | None) -> int | None:
        """The ``place`` id of a (block, layer) pair; None when the op has neither."""
        return self.places({(block, layer)})[(block, layer)]

    def places(self, pairs: set[tuple[str | None, str | None]]) -> dict[tuple[str | None, str | None], int | None]:
        """:meth:`place` of many pairs, the new ones interned in one go."""
        want = {(b or "", lay or "") for b, lay in pairs if b or lay}
        missing = want - self.places_cache.keys()
        if missing:
            if len(self.places_cache) + len(missing) > self.MAX_CACHED:
                self.places_cache.clear()
                self.pair_of.clear()
                missing = want
            by_digest = {place_digest(*pair): pair for pair in missing}
            ids = self._resolve(t.place, "digest", {d: {"digest": d, "block": pair[0], "layer": pair[1]}
                                                    for d, pair in by_digest.items()})
            self.places_cache.update((pair, ids[d]) for d, pair in by_digest.items())
            if self.keep_pairs:
                self.pair_of.update((ids[d], pair) for d, pair in by_digest.items())
        cache = self.places_cache
        return {pr: (cache[(pr[0] or "", pr[1] or "")] if (pr[0] or pr[1]) else None) for pr in pairs}

    def learn(self, first_token: int, keys: list[tuple[str, ...]]) -> None:
        """Static tuples met for the first time, tokens ``first_token`` onwards (consecutive)."""
        missing = first_token + len(keys) - len(self.ids)
        if missing > 0:
            self.ids.extend([-1] * missing)
        self.pending += zip(range(first_token, first_token + len(keys)), keys)

    def add_key(self, key: tuple[str, ...]) -> int:
        """A token of its own for one static tuple (the parallel merge re-interns stored tuples)."""
        tok = len(self.ids)
        self.learn(tok, [key])
        return tok

    def resolve_pending(self) -> None:
        """Intern the static tuples met since the last call (and their long strings), in bulk."""
        if not self.pending:
            return
        pending = [key for _, key in self.pending]
        longs = {c for key in pending for c in key if len(c) > LONG_TEXT and c not in self.texts}
        if longs:
            by_digest = {digest(c): c for c in longs}
            ids = self._resolve(t.text_value, "digest", {d: {"digest": d, "value": c} for d, c in by_digest.items()})
            self.texts.update((c, ids[d]) for d, c in by_digest.items())
        enc = [tuple_json([self.texts[c] if len(c) > LONG_TEXT else c for c in key]) for key in pending]
        digests = [digest(e) for e in enc]
        ids = self._resolve(t.cell_tuple, "digest", {d: {"digest": d, "cells": e} for d, e in zip(digests, enc)})
        for (tok, _), d in zip(self.pending, digests):
            self.ids[tok] = ids[d]
        self.pending.clear()

    def trim(self) -> None:
        """Bound the long-string cache (after a batch's rows have taken their ids)."""
        if len(self.texts) > self.MAX_CACHED:
            self.texts.clear()
