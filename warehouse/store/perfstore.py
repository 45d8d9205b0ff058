"""Storing the per-op analysis facts: ``perf_shape`` rows interned per distinct static cell tuple, ``op.perf_shape_id``
and ``run.perf_arch``. Ingest calls :class:`ShapeCache` row by row; migration 0006 calls :func:`backfill` for runs
stored before it, from their cells (the same code, so both give the same facts)."""
from __future__ import annotations

from dataclasses import asdict

from sqlalchemy import Connection, select

from warehouse.store import dialect
from warehouse.store import schema as t
from warehouse.capture.perffacts import DEFAULT_ARCH, Analyzer, PerfShape, csv_format, normalize_arch


def perf_arch(header: list[str], first_arch: str | None) -> str | None:
    """tt-perf-report's architecture for a file: the first DEVICE ARCH of a v2.1 file, else wormhole (None: a
    name it does not know)."""
    if csv_format(header) == "v2.1" and first_arch:
        return normalize_arch(first_arch)
    return DEFAULT_ARCH


_TENSOR_KEYS = ["io", "idx", "w", "z", "y", "x", "w_pad", "z_pad", "y_pad", "x_pad", "layout", "datatype", "memory"]


def _columns(shape: PerfShape) -> dict:
    cols = asdict(shape)
    del cols["tensors"]  # rows of perf_tensor
    return cols


def column_rows(run_id: int, header: list[str], static_idx: list[int]) -> list[dict]:
    """The run_column rows of a run: each header position's name, kind and slot."""
    static = {i: k for k, i in enumerate(static_idx)}
    volatile = {i: k for k, i in enumerate(i for i in range(len(header)) if i not in static)}
    return [{"run_id": run_id, "position": i, "name": name, "kind": "static" if i in static else "volatile",
             "slot": static[i] if i in static else volatile[i]} for i, name in enumerate(header)]


class ShapeCache:
    """The perf shape digest of each row, computed once per distinct static cell tuple of a file; the shapes
    met since the last :meth:`resolve` are inserted (or found) in bulk."""

    MAX_CACHED = 20_000

    def __init__(self, header: list[str] | None = None):
        self.analyzer = Analyzer(header) if header is not None else None  # (ingest's shapes come computed)
        self.by_static: dict[int, bytes] = {}  # static tuple token (see warehouse.capture.rowprep) -> digest
        self.ids: dict[bytes, int] = {}
        self.pending: dict[bytes, PerfShape] = {}

    def learn(self, shapes: list[tuple[int, bytes, PerfShape]]) -> None:
        """Shapes computed elsewhere (:mod:`warehouse.capture.rowprep`): ``(token, digest, shape)``; :meth:`resolve`
        gives their ids."""
        for _, d, shape in shapes:
            if d not in self.ids:
                self.pending[d] = shape

    def digest(self, static_key: int, cells: list[str], op_code: str) -> bytes:
        """The digest of the row's shape; ``static_key`` names the row's static cells (op code included): rows
        with the same key have the same shape."""
        d = self.by_static.get(static_key)
        if d is None:
            assert self.analyzer is not None, "a ShapeCache made without a header only learns shapes"
            shape = self.analyzer.shape(cells, op_code)
            d = self.by_static[static_key] = shape.digest()
            if d not in self.ids:
                self.pending[d] = shape
        return d

    def resolve(self, conn: Connection) -> None:
        """Give every pending shape its ``perf_shape`` id (inserting the new ones, in digest order)."""
        if not self.pending:
            return
        keys = sorted(self.pending)
        c = t.perf_shape.c
        for k in range(0, len(keys), 500):
            part = keys[k:k + 500]
            self.ids.update(conn.execute(select(c.digest, c.id).where(c.digest.in_(part))).all())
            missing = [d for d in part if d not in self.ids]
            if missing:
                conn.execute(dialect.insert_ignore(conn, t.perf_shape),
                             [{"digest": d, **_columns(self.pending[d])} for d in missing])
                self.ids.update(conn.execute(select(c.digest, c.id).where(c.digest.in_(missing))).all())
            # Tensors of every shape met (not only the new ones): where interning commits apart, a process
            # stopped between the two inserts leaves a shape without tensors, and the next ingest completes it.
            tensors = [{"perf_shape_id": self.ids[d], **dict(zip(_TENSOR_KEYS, tensor))}
                       for d in part for tensor in self.pending[d].tensors]
            if tensors:
                conn.execute(dialect.insert_ignore(conn, t.perf_tensor), tensors)
        self.pending.clear()

    def trim(self) -> None:
        """Bound the digest -> id cache (after a batch's rows have taken their ids)."""
        if len(self.ids) > self.MAX_CACHED:
            self.ids.clear()


