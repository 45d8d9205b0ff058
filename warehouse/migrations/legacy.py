"""Code that only migrations run, with the models of the intermediate schemas it reads (Alembic's cookbook: a
migration must not depend on the head's models, which move on). Revisions 0003 to 0007 kept each row's cells in
``row_cells`` (:data:`ROW_CELLS_V7`); 0005 to 0008 kept an op's block and layer as text. The live modules know
only the head's schema."""
from __future__ import annotations

import json
from collections.abc import Iterator

from sqlalchemy import Column, Connection, Integer, MetaData, Table, Text, bindparam, select, text, update

from warehouse.store import dialect
from warehouse.store import schema as t
from warehouse.store.cells import CHUNK_ROWS, ChunkWriter, compresses, iter_chunk_rows, pack_cells, unpack
from warehouse.registry.contract import EAGER, TRACE
from warehouse.capture.cellcodec import decode_inline, decode_volatile, encode_inline, encode_volatile
from warehouse.runs.export import iter_numbered_rows
from warehouse.capture.alignment import SIGNPOST, Attributed, HistoryTracker
from warehouse.store.attribution import summarize

from warehouse.store.perfstore import ShapeCache, column_rows, perf_arch



# The per-row table of revisions 0003 to 0007, for the migrations that read or convert it.
_legacy = MetaData()
ROW_CELLS_V7 = Table(
    "row_cells", _legacy,
    Column("run_id", Integer, primary_key=True),
    Column("row_no", Integer, primary_key=True),
    Column("static_id", Integer, nullable=False),
    Column("cells", Text, nullable=False),
)




def iter_legacy_rows(conn: Connection, run_id: int, batch: int = 20000) -> Iterator[tuple[int, int, str]]:
    """:func:`iter_chunk_rows` over the per-row table of revisions 0003 to 0007 (cells still as stored)."""
    c = ROW_CELLS_V7.c
    last = 0
    while True:
        rows = conn.execute(select(c.row_no, c.static_id, c.cells).where(c.run_id == run_id, c.row_no > last)
                            .order_by(c.row_no).limit(batch)).all()
        if not rows:
            return
        yield from rows
        last = rows[-1][0]




def to_chunks(conn: Connection) -> None:
    """Migration 0008: every run's per-row cells into chunks."""
    for run_id in conn.execute(select(t.run.c.id)).scalars().all():
        w = ChunkWriter(conn, run_id)
        batch: list[tuple[int, int, str]] = []
        for r in iter_legacy_rows(conn, run_id):
            batch.append(tuple(r))  # type: ignore[arg-type]
            if len(batch) >= 20 * CHUNK_ROWS:
                w.add(batch)
                batch = []
        w.add(batch, final=True)




def to_rows(conn: Connection) -> None:
    """Migration 0008 downgraded: every run's chunks back into per-row cells."""
    for run_id in conn.execute(select(t.run.c.id)).scalars().all():
        batch = []
        for row_no, static_id, cells in iter_chunk_rows(conn, run_id):
            batch.append({"run_id": run_id, "row_no": row_no, "static_id": static_id,
                          "cells": json.dumps(cells, ensure_ascii=False, separators=(",", ":"))})
            if len(batch) >= 5000:
                conn.execute(ROW_CELLS_V7.insert(), batch)
                batch = []
        if batch:
            conn.execute(ROW_CELLS_V7.insert(), batch)


def reencode_cells(conn: Connection, to_json: bool) -> None:
    """Convert every run's volatile cells between the JSON arrays of revision 0006 and the unit-separated text
    before it (migration 0006, both ways)."""
    c = ROW_CELLS_V7.c
    for run_id, static_columns, columns in conn.execute(select(t.run.c.id, t.run.c.static_columns,
                                                               t.run.c.columns)).all():
        nv = len(json.loads(columns)) - len(json.loads(static_columns))
        last = -1
        while True:
            rows = conn.execute(select(c.row_no, c.cells).where(c.run_id == run_id, c.row_no > last)
                                .order_by(c.row_no).limit(5000)).all()
            if not rows:
                break
            if to_json:
                new = encode_volatile([decode_inline(cells, nv) for _, cells in rows])
            else:
                new = [encode_inline(decode_volatile(cells, nv)) for _, cells in rows]
            conn.execute(ROW_CELLS_V7.update().where(c.run_id == bindparam("r"), c.row_no == bindparam("n"))
                         .values(cells=bindparam("v")),
                         [{"r": run_id, "n": n, "v": v} for (n, _), v in zip(rows, new)])
            last = rows[-1][0]




# The op table of revisions 0005 to 0008 (block and layer as text): migration 0005 attributes stored runs in it.
UPDATE_SQL_V8 = ("UPDATE op SET hist_block = {m}, hist_layer = {m}, hist_how = {m}, iteration = {m}, "
                 "iter_pos = {m} WHERE run_id = {m} AND row_no = {m}")




def attribute_run_v8(conn: Connection, run_id: int) -> None:
    """(Re)compute the history attribution of a run stored in the op table of revisions 0005 to 0008 (block and
    layer as text): migration 0005."""
    rows = conn.execute(text(
        "SELECT o.row_no, s.kind, o.pos, o.op_code_id, o.block, o.layer, o.replay_session "
        "FROM op o LEFT JOIN section s ON s.id = o.section_id WHERE o.run_id = :r ORDER BY o.row_no"),
        {"r": run_id}).all()
    tracker = HistoryTracker()
    values: list[tuple[int, Attributed]] = []
    # (the tracker takes places as ids: this schema's (block, layer) texts numbered here, 0 for neither)
    pairs: dict[tuple[str | None, str | None], int] = {}

    def place(block: str | None, layer: str | None) -> int:
        return pairs.setdefault((block, layer), len(pairs) + 1) if (block or layer) else 0
    # eager first (the trace learns from it), whatever the order in the file
    for _row, kind, _pos, code, block, layer, _ in rows:
        if kind == EAGER:
            tracker.eager_op(code, place(block, layer))
    for row_no, kind, pos, code, block, layer, replay in rows:
        if kind == TRACE:
            values.append((row_no, tracker.trace_op(row_no, code, replay or None, place(block, layer), pos)))
        else:  # (its own signposts)
            p = place(block, layer)
            values.append((row_no, Attributed(p, SIGNPOST if p else None, 0 if pos is not None else None, pos)))
    fixed = dict(tracker.finish())
    values = [(row, fixed.get(row, a)) for row, a in values]
    if values:
        texts = {i: pair for pair, i in pairs.items()}
        m = dialect.paramstyle_mark(conn)
        conn.exec_driver_sql(UPDATE_SQL_V8.format(m=m), [
            (*texts.get(a.place, (None, None)), a.how, a.iteration, a.iter_pos, run_id, row) for row, a in values])




def backfill_v8(conn: Connection) -> None:
    """History attribution for every stored run (migration 0005; the rollups are built at head, see
    :func:`warehouse.runs.derived.backfill`)."""
    for (run_id,) in conn.execute(text("SELECT id FROM run ORDER BY id")).all():
        attribute_run_v8(conn, run_id)
        summarize(conn, run_id, as_text=True)


def perf_backfill(conn: Connection) -> None:
    """Shapes and architecture for every stored run that lacks them (migration 0006), from the stored cells."""
    runs = conn.execute(select(t.run.c.id, t.run.c.columns, t.run.c.static_columns, t.run.c.name_column)
                        .where(t.run.c.perf_arch.is_(None))).all()
    for run_id, columns, static_columns, name_column in runs:
        header = json.loads(columns)
        static_idx = json.loads(static_columns)
        ops = set(conn.execute(select(t.op.c.row_no).where(t.op.c.run_id == run_id)).scalars())
        cache = ShapeCache(header)
        name_i = len(header) - 1 - header[::-1].index(name_column)
        arch_i = (len(header) - 1 - header[::-1].index("DEVICE ARCH")) if "DEVICE ARCH" in header else None
        first_arch = None
        rows_of: dict[bytes, list[int]] = {}
        tokens: dict[tuple, int] = {}
        legacy = iter_legacy_rows(conn, run_id)
        for row_no, cells in iter_numbered_rows(conn, run_id, len(header), static_idx, source=legacy):
            if row_no not in ops:
                continue
            if first_arch is None and arch_i is not None:
                first_arch = cells[arch_i].strip() or None
            key = tuple(cells[i] for i in static_idx)
            tok = tokens.setdefault(key, len(tokens))
            rows_of.setdefault(cache.digest(tok, cells, cells[name_i]), []).append(row_no)
        cache.resolve(conn)
        for d, row_nos in rows_of.items():
            for k in range(0, len(row_nos), 500):
                conn.execute(update(t.op).where(t.op.c.run_id == run_id, t.op.c.row_no.in_(row_nos[k:k + 500]))
                             .values(perf_shape_id=cache.ids[d]))
        conn.execute(update(t.run).where(t.run.c.id == run_id).values(perf_arch=perf_arch(header, first_arch)))
        conn.execute(t.run_column.delete().where(t.run_column.c.run_id == run_id))
        conn.execute(t.run_column.insert(), column_rows(run_id, header, static_idx))


# The typed op columns whose canonical cells revision 0013 stores once, as null in the chunks (CSV header -> op
# column), as they were at that revision.
STORED_ONCE_V13 = {"DEVICE KERNEL DURATION [ns]": "kernel_ns", "DEVICE FW DURATION [ns]": "fw_ns",
                   "OP TO OP LATENCY [ns]": "op2op_ns", "DEVICE FW START CYCLE": "fw_start_cycle",
                   "DEVICE FW END CYCLE": "fw_end_cycle", "DEVICE ID": "device_id",
                   "GLOBAL CALL COUNT": "global_call_count", "HOST START TS": "host_start_ns",
                   "HOST END TS": "host_end_ns"}


def fill_stored_once(conn: Connection) -> int:
    """Migration 0013's downgrade: every cell stored once (null in a chunk) printed from its op's typed value
    again, as the revisions before keep every cell as text; returns how many chunks were rewritten."""
    c = t.cell_chunk.c
    compress = compresses(conn)
    rewritten = 0
    for run_id, columns, static_columns in conn.execute(
            select(t.run.c.id, t.run.c.columns, t.run.c.static_columns)).all():
        header, static = json.loads(columns), set(json.loads(static_columns))
        volatile = [i for i in range(len(header)) if i not in static]
        last = {name: i for i, name in enumerate(header)}
        slots = {volatile.index(last[h]): col for h, col in STORED_ONCE_V13.items()
                 if h in last and last[h] not in static}
        if not slots:
            continue
        op_cols = [t.op.c.row_no] + [t.op.c[col] for col in slots.values()]
        for first, row_nos, static_ids, raw_size, cells in conn.execute(
                select(c.first_row, c.row_nos, c.static_ids, c.raw_size, c.cells)
                .where(c.run_id == run_id).order_by(c.first_row)).all():
            rows = unpack(first, row_nos, static_ids, raw_size, cells)
            if not any(None in r[2] for r in rows):
                continue
            values = {r[0]: r[1:] for r in conn.execute(select(*op_cols).where(
                t.op.c.run_id == run_id, t.op.c.row_no >= rows[0][0], t.op.c.row_no <= rows[-1][0]))}
            texts = []
            for row_no, _, row in rows:
                row = list(row)
                for k, slot in enumerate(slots):
                    if slot < len(row) and row[slot] is None:
                        row[slot] = str(int(values[row_no][k]))
                texts.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
            packed = pack_cells([r[0] for r in rows], texts, compress)
            conn.execute(t.cell_chunk.update().where(c.run_id == run_id, c.first_row == first)
                         .values(raw_size=packed["raw_size"], cells=packed["cells"]))
            rewritten += 1
    return rewritten


def store_layer_op_code_rollups(conn: Connection) -> None:
    """Revision 0013's rollups of the grouping ``layer/op-code`` for every run (0014 stopped storing them),
    computed from the ops by the head's rollup SQL for that one grouping, keys and rows."""
    from warehouse.registry.measures import GROUPINGS
    from warehouse.analysis.rollups import build_sql

    grouping = next(g for g in GROUPINGS if g.key == "layer/op-code")
    sql = build_sql([grouping])
    metric_cols = [c.name for c in t.rollup_row.columns
                   if c.name not in ("run_id", "section", "key_id", "device", "iterations", "ops")]
    for run_id, freq in conn.execute(text("SELECT id, freq_mhz FROM run ORDER BY id")).all():
        rows = conn.execute(text(sql), {"run": run_id, "freq": float(freq)}).all()
        keys = sorted({r[3] for r in rows})
        known = dict(conn.execute(text("SELECT key, id FROM rollup_key WHERE grouping = 'layer/op-code'")).all())
        new = [{"grouping": "layer/op-code", "key": k} for k in keys if k not in known]
        if new:
            conn.execute(t.rollup_key.insert(), new)
            known = dict(conn.execute(text("SELECT key, id FROM rollup_key WHERE grouping = 'layer/op-code'"))
                         .all())
        if rows:
            conn.execute(t.rollup_row.insert(), [
                {"run_id": run_id, "section": r[1], "key_id": known[r[3]], "device": r[4], "iterations": r[5],
                 "ops": r[6], **dict(zip(metric_cols, r[7:]))} for r in rows])
