"""The warehouse tables (SQLAlchemy Core). The summary views live in :mod:`warehouse.store.views`, not here.

One row of ``run`` per ingested CSV; ``op`` and ``signpost`` hold its rows with typed columns for what SQL
needs. Every cell of every row is kept for a byte-exact export: the cells of the *static* columns (attributes,
kernel sources, shapes, memory configs: the same for every call of a program) are interned as one
``cell_tuple`` shared by all rows and runs that have it, and strings longer than
:data:`warehouse.capture.csvfile.LONG_TEXT` inside it are interned once more in ``text_value``. The *volatile* cells
(durations, cycles, timestamps, counters) are stored in compressed chunks of rows, ``cell_chunk``.
"""
from __future__ import annotations

from sqlalchemy import (BigInteger, Boolean, Column, DateTime, Double, ForeignKey, ForeignKeyConstraint, Index,
                        Integer, LargeBinary, MetaData, SmallInteger, String, Table, Text, UniqueConstraint, false)

from warehouse.registry.codes import ATTRIBUTION, HIST_HOW, comment
from warehouse.registry.measures import METRICS

# Stable constraint names on every back end, so that migrations can name what they alter.
metadata = MetaData(naming_convention={
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
})

# 64-bit ids on PostgreSQL; SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
Id = BigInteger().with_variant(Integer(), "sqlite")


def interned_ref(column: str, parent: str) -> ForeignKeyConstraint:
    """A reference from a run's rows to an interned table (op codes, places, shapes, rollup keys: content-addressed,
    committed before use, never deleted). A constraint on SQLite, whose ingest skips it and whose ``check`` reads
    it (PRAGMA foreign_key_check). Not one on PostgreSQL: there every row inserted or moved fired one lookup per
    reference, over a third of the server's time of an ingest (the bench's 100,000-op captures: 5.3-5.6 -> 3.3-3.6
    s of the server's CPU, revision 0020), for rows that ingest writes only with ids it found or made; ``check``
    verifies them there with a query (:func:`warehouse.store.dialect.storage_problems`)."""
    return ForeignKeyConstraint([column], [f"{parent}.id"]).ddl_if(dialect="sqlite")


def _run_fk() -> Column:
    return Column("run_id", Id, ForeignKey("run.id", ondelete="CASCADE"), nullable=False)


run = Table(
    "run", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("sha256", String(64), nullable=False, unique=True),
    Column("source_path", Text, nullable=False),
    Column("file_name", Text, nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("row_count", Integer, nullable=False, comment="data rows in the file (ops + signposts)"),
    Column("op_count", Integer, nullable=False),
    Column("signpost_count", Integer, nullable=False),
    Column("columns", Text, nullable=False, comment="JSON list: the header, in file order"),
    Column("static_columns", Text, nullable=False, comment="JSON list of header indexes interned in cell_tuple"),
    Column("name_column", String(16), nullable=False, comment="OP CODE or OP NAME"),
    Column("newline", String(2), nullable=False),
    Column("final_newline", Boolean, nullable=False),
    Column("bom", Boolean, nullable=False),
    Column("export_exact", Boolean, nullable=False, comment="export reproduces the file byte for byte"),
    Column("captured_at", DateTime, nullable=True, comment="from _YYYY_MM_DD_HH_MM_SS in the file name"),
    Column("ingested_at", DateTime, nullable=False),
    Column("freq_mhz", Double, nullable=False),
    Column("freq_source", Text, nullable=False, comment="option | default | path of profile_log_device.csv"),
    Column("arch", Text, nullable=True),
    Column("label", Text, nullable=True),
    Column("trace_matches_eager", Boolean, nullable=False),
    Column("seconds", Double, nullable=True, comment="ingest wall time"),
    Column("attribution", Text, nullable=True,
           comment="JSON: ops per history attribution (signpost, position, aligned, unmatched, none)"),
    Column("perf_arch", Text, nullable=True,
           comment="tt-perf-report's architecture for `warehouse perf` (NULL: one it does not know)"),
    sqlite_autoincrement=True,  # a deleted run's id is never given to another run
)
Index("ix_run_label_captured", run.c.label, run.c.captured_at)

run_tag = Table(
    "run_tag", metadata,
    _run_fk(),
    Column("key", Text, nullable=False),
    Column("value", Text, nullable=False),
    UniqueConstraint("run_id", "key"),
)

triage = Table(
    "triage", metadata,
    Column("id", Text, primary_key=True, comment="the finding's id (c-..., r-...) or run:<id> for a night"),
    Column("run_id", Id, ForeignKey("run.id", ondelete="CASCADE"), nullable=False,
           comment="the night it names (a change: the first night of its new level)"),
    Column("kind", Text, nullable=False, comment="step, creep, regression, improvement, run"),
    Column("by", Text, nullable=False, comment="section, device, block, layer, op-code; run for a night"),
    Column("key", Text, nullable=False),
    Column("up", Boolean, nullable=False, comment="the change made it slower"),
    Column("status", Text, nullable=False, comment="acknowledged, expected or invalid"),
    Column("note", Text, nullable=True),
    Column("who", Text, nullable=True),
    Column("decided_at", DateTime, nullable=False),
)

warehouse_meta = Table(
    "warehouse_meta", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

run_warning = Table(
    "run_warning", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    _run_fk(),
    Column("row_no", Integer, nullable=True),
    Column("column_name", Text, nullable=True),
    Column("message", Text, nullable=False),
    Column("invalid", Boolean, nullable=False, server_default=false(),
           comment="the file shows the capture is not a whole measurement (cut, never closed, negative durations): "
                   "the gate exits 4 on it and history leaves the night out"),
)
Index("ix_run_warning_run", run_warning.c.run_id)

section = Table(
    "section", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    _run_fk(),
    Column("name", Text, nullable=False, comment="eager, trace, or the base name of a custom pair"),
    Column("kind", String(16), nullable=False, comment="eager | trace | custom"),
    Column("ordinal", Integer, nullable=False, comment="order of the section's start in the file"),
    Column("start_row", Integer, nullable=False),
    Column("end_row", Integer, nullable=True, comment="NULL: never closed"),
)
Index("ix_section_run", section.c.run_id, section.c.kind)

text_value = Table(
    "text_value", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("digest", LargeBinary(16), nullable=False, unique=True),
    Column("value", Text, nullable=False),
)

cell_tuple = Table(
    "cell_tuple", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("digest", LargeBinary(16), nullable=False, unique=True),
    Column("cells", Text, nullable=False, comment="JSON list: a string is a cell, an integer a text_value id"),
)

# The (block, layer) pairs that ops are attributed to, stored once: an op names its pair by id (a run repeats a
# few hundred pairs over its ops; as text they were half of the op table's bytes).
place = Table(
    "place", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("digest", LargeBinary(16), nullable=False, unique=True),
    Column("block", Text, nullable=False, comment="the model block ('' when none)"),
    Column("layer", Text, nullable=False, comment="the layer ('' when none)"),
)

op_code = Table(
    "op_code", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("name", Text, nullable=False, unique=True),
    Column("category", Text, nullable=False),
    Column("is_compute", Boolean, nullable=False, comment="conv / matmul: compute in the layer cost split"),
)

# Where each CSV column of a run is stored: the view csv_cell reads every cell by its column name through it.
run_column = Table(
    "run_column", metadata,
    Column("run_id", Id, ForeignKey("run.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True, comment="0-based index in the header"),
    Column("name", Text, nullable=False, comment="the CSV column name"),
    Column("kind", String(8), nullable=False, comment="static (in cell_tuple) | volatile (in cell_chunk)"),
    Column("slot", Integer, nullable=False, comment="index in the cell tuple or in the volatile array"),
)
Index("ix_run_column_name", run_column.c.name, run_column.c.run_id)

# The static facts of ops for tt-perf-report's per-op analysis (warehouse.capture.perffacts.PerfShape), interned.
perf_shape = Table(
    "perf_shape", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("digest", LargeBinary(16), nullable=False, unique=True),
    Column("category", Text, nullable=False, comment="tt-perf-report's: Compute, DM, CCL, TM, Host, Other"),
    Column("is_host", Boolean, nullable=False, comment="a host fallback op ((torch) in the op code)"),
    Column("label", Text, nullable=False, comment="the op code with the matmul / conv problem size or config"),
    Column("analysis", String(16), nullable=False, comment="full (matmul) | flops_only (conv) | none"),
    Column("peak_fidelity", Text, nullable=True,
           comment="MATH FIDELITY when tt-perf-report knows its peak: HiFi4, HiFi3, HiFi2, LoFi"),
    Column("math_fidelity", Text, nullable=True, comment="the Math Fidelity text: fidelity and datatypes"),
    Column("flop_count", Double, nullable=True, comment="floating-point operations of one call"),
    Column("dram_bytes", Double, nullable=True, comment="bytes a matmul reads from and writes to DRAM"),
    Column("dram_sharded", Boolean, nullable=False),
    Column("cores", Integer, nullable=True, comment="CORE COUNT"),
    Column("available_cores", Integer, nullable=True, comment="AVAILABLE WORKER CORE COUNT"),
    Column("sub_device", Text, nullable=True, comment="SUB DEVICE ID"),
    Column("in0_dtype", Text, nullable=True),
    Column("in1_dtype", Text, nullable=True),
    Column("out_dtype", Text, nullable=True),
    Column("in0_memory", Text, nullable=True),
    Column("inner_block", Integer, nullable=True, comment="in0_block_w of the program config"),
    Column("subblock_h", Integer, nullable=True),
    Column("subblock_w", Integer, nullable=True),
    Column("op_type", Text, nullable=False, comment="OP TYPE"),
    Column("fidelity", Text, nullable=True, comment="MATH FIDELITY (stripped)"),
    Column("input0_shape", Text, nullable=False, comment="logical W x Z x Y x X of input 0 (the report's)"),
    Column("input0_memory", Text, nullable=True, comment="INPUT_0_MEMORY (stripped)"),
    Column("output0_memory", Text, nullable=True, comment="OUTPUT_0_MEMORY (stripped)"),
)

# The input / output tensors of an interned perf_shape (static cells: the same for every call of a program).
perf_tensor = Table(
    "perf_tensor", metadata,
    Column("perf_shape_id", Id, ForeignKey("perf_shape.id", ondelete="CASCADE"), primary_key=True),
    Column("io", String(8), primary_key=True, comment="input | output"),
    Column("idx", Integer, primary_key=True, comment="the N of INPUT_N / OUTPUT_N"),
    *[Column(d, BigInteger, nullable=True, comment=f"logical {d.upper()}") for d in "wzyx"],
    *[Column(f"{d}_pad", BigInteger, nullable=True, comment=f"padded {d.upper()}") for d in "wzyx"],
    Column("layout", Text, nullable=True),
    Column("datatype", Text, nullable=True),
    Column("memory", Text, nullable=True),
)

signpost = Table(
    "signpost", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    _run_fk(),
    Column("row_no", Integer, nullable=False, comment="1-based data row in the file"),
    Column("name", Text, nullable=False),
    Column("message", Text, nullable=True, comment="the ATTRIBUTES cell"),
    Column("host_ts", BigInteger, nullable=True),
    Column("kind", String(16), nullable=False,
           comment="section_start | section_end | block | layer | marker"),
    UniqueConstraint("run_id", "row_no"),
)

op = Table(
    "op", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    _run_fk(),
    Column("row_no", Integer, nullable=False, comment="1-based data row in the file"),
    Column("section_id", Id, ForeignKey("section.id", ondelete="CASCADE"), nullable=True,
           comment="the eager / trace section (the oracle's); custom sections: view op_custom_section"),
    Column("pos", Integer, nullable=True, comment="index among the run's ops of the same section name"),
    Column("place_id", Id, nullable=True,
           comment="the report's block and layer (NULL: neither); the views give them as text"),
    Column("attribution", SmallInteger, nullable=True,
           comment=f"the report's: {comment(ATTRIBUTION)} (warehouse.registry.codes; op_detail gives the text)"),
    Column("occurrence", Integer, nullable=True,
           comment="index among the run's ops of the same section, block, layer, op code"),
    Column("marker_row", Integer, nullable=True, comment="row_no of the last marker signpost before"),
    Column("op_code_id", Id, nullable=False),
    Column("device_id", Integer, nullable=True),
    Column("global_call_count", BigInteger, nullable=True),
    Column("kernel_ns", Double, nullable=True),
    Column("fw_ns", Double, nullable=True),
    Column("op2op_ns", Double, nullable=True),
    Column("fw_start_cycle", Double, nullable=True),
    Column("fw_end_cycle", Double, nullable=True),
    Column("host_start_ns", BigInteger, nullable=True),
    Column("host_end_ns", BigInteger, nullable=True),
    Column("cores", Integer, nullable=True),
    Column("trace_id", Text, nullable=True, comment="METAL TRACE ID, stripped"),
    Column("replay_session", Text, nullable=True, comment="METAL TRACE REPLAY SESSION ID, stripped"),
    Column("hist_place_id", Id, nullable=True,
           comment="history attribution: the block and layer (see hist_how; NULL: neither)"),
    Column("hist_how", SmallInteger, nullable=True,
           comment=f"how history attributed it: {comment(HIST_HOW)} (NULL: no signpost; op_history gives the text)"),
    Column("iteration", Integer, nullable=True, comment="trace: the replay (0, 1, ...) the op belongs to"),
    Column("iter_pos", Integer, nullable=True, comment="trace: the op's position within its replay"),
    Column("perf_shape_id", Id, nullable=True,
           comment="the op's static facts for the per-op analysis (view op_perf)"),
    interned_ref("place_id", "place"), interned_ref("op_code_id", "op_code"),
    interned_ref("hist_place_id", "place"), interned_ref("perf_shape_id", "perf_shape"),
)
Index("ix_op_run_row", op.c.run_id, op.c.row_no, unique=True)

# The cells of every row (op or signpost) for export, apart from the typed tables so that scans of ``op`` stay
# narrow, in compressed chunks of consecutive rows (see warehouse.store.cells; the view csv_cell reads them).
cell_chunk = Table(
    "cell_chunk", metadata,
    Column("run_id", Id, ForeignKey("run.id", ondelete="CASCADE"), primary_key=True),
    Column("first_row", Integer, primary_key=True, comment="row_no of the chunk's first row"),
    Column("last_row", Integer, nullable=False, comment="row_no of its last row"),
    Column("row_nos", Text, nullable=True,
           comment="JSON list of the rows' row_no, when they are not first_row .. last_row"),
    Column("static_ids", Text, nullable=False, comment="JSON list: each row's cell_tuple id"),
    Column("raw_size", Integer, nullable=False, comment="bytes of the cells' JSON text"),
    Column("cells", LargeBinary, nullable=False,
           comment="the rows' volatile cells, a JSON array of arrays of strings (trailing empty cells left out); "
                   "zlib-compressed when its length differs from raw_size: sqlar_uncompress(cells, raw_size)"),
    sqlite_with_rowid=False,
)
Index("ix_op_section_pos", op.c.section_id, op.c.pos)

# Per-run figures for history (see warehouse.analysis.rollups): runs x keys, never ops. The view ``rollup`` reads them
# with their grouping and key as text and times in us; stored, a key is an id shared by every run that has it (a
# night of a model seen before adds no key text) and times are whole ns (integers: half the bytes of a double).
rollup_key = Table(
    "rollup_key", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("grouping", String(32), nullable=False, comment="section | block | layer | op-code | category ..."),
    Column("key", Text, nullable=False),
    # (the lookup of a key: a unique index on the two texts held them a second time, half the table's bytes)
    Column("digest", LargeBinary(8), nullable=False, unique=True,
           comment="the first 8 bytes of md5(grouping, x'1f', key): what ingest looks a key up by"),
)


def _rollup_metric_columns() -> list[Column]:

    cols = []
    for m in METRICS:
        cols.append(Column(m.stored_column, Double, nullable=True,
                           comment=f"{m.label} per iteration (mean over replays), {m.stored_unit}"))
        cols.append(Column(m.stored_spread_column, Double, nullable=True,
                           comment=f"max - min over replays (NULL: one), {m.stored_unit}"))
    return cols


rollup_row = Table(
    "rollup_row", metadata,
    Column("run_id", Id, ForeignKey("run.id", ondelete="CASCADE"), primary_key=True),
    Column("section", Text, primary_key=True, comment="eager, trace, a custom section's name, '' the whole run"),
    Column("key_id", Id, primary_key=True),
    Column("device", Integer, primary_key=True, comment="-1: all devices together"),
    Column("iterations", Integer, nullable=False, comment="replays the figures are averaged over"),
    Column("ops", Double, nullable=False, comment="ops per iteration"),
    *_rollup_metric_columns(),
    interned_ref("key_id", "rollup_key"),
    sqlite_with_rowid=False,
)

# The rollups again as typed arrays, one row per run, section and grouping (warehouse.store.runseries): what
# history reads (a year of a big model is millions of rollup rows; read as SQL rows they cost most of its time).
run_series = Table(
    "run_series", metadata,
    Column("run_id", Id, ForeignKey("run.id", ondelete="CASCADE"), primary_key=True),
    Column("section", Text, primary_key=True, comment="as rollup_row.section"),
    Column("grouping", String(32), primary_key=True, comment="as rollup_key.grouping"),
    Column("figure", String(32), primary_key=True,
           comment="key_ids (rollup_key ids), devices (-1: all) or a column of the view rollup"),
    Column("row_count", Integer, nullable=False, comment="how many rows (keys x devices) the arrays have"),
    Column("data", LargeBinary, nullable=False,
           comment="the array, little-endian: ids int32 (int64 past 2^31), devices int32 (empty: all -1), values "
                   "float64 in the view's units (NaN: NULL), or int32 whole stored units, or one float64 for all "
                   "rows, or empty for NULL on every row (warehouse.store.runseries.decode)"),
    sqlite_with_rowid=False,
)

# The report's parts computed from ops, stored at ingest (warehouse.analysis.report.store_parts).
run_report = Table(
    "run_report", metadata,
    Column("run_id", Id, ForeignKey("run.id", ondelete="CASCADE"), primary_key=True),
    Column("raw_size", Integer, nullable=False, comment="bytes of the document's JSON text"),
    Column("doc", LargeBinary, nullable=False,
           comment="JSON: trace_ids, replay_sessions and the eager / trace sections of the OPT_BASELINE report; "
                   "zlib-compressed when its length differs from raw_size: sqlar_uncompress(doc, raw_size)"),
)

# One line per table: `warehouse schema`, PostgreSQL's table comments and the README (scripts/gen_docs.py) read it.
TABLE_DOCS = {
    "warehouse_meta": "facts about the warehouse itself: `id`, made once when it is created, which a Parquet lake's "
                      "manifest names so that no other warehouse exports into it",
    "triage": "what a person decided about a change or a night (`warehouse triage`): acknowledged or expected "
              "steps become the new baseline, invalid nights leave every baseline",
    "run": "one ingested CSV: sha256 (unique: re-ingest is idempotent), path, header, frequency and its source, "
           "arch, label, capture / ingest time, `trace_matches_eager`, the history attribution's counts",
    "run_tag": "`--tag key=value` pairs of a run (`warehouse tag` changes them)",
    "run_warning": "what ingest noticed and tolerated, per row (short rows, unclosed sections, implausible values...)",
    "section": "`eager` / `trace` sections (the oracle's) and custom `S` .. `S_end` pairs, with start and end rows",
    "signpost": "every signpost row: name, message (`ATTRIBUTES`), host time, kind (`section_start`, "
                "`section_end`, `block`, `layer`, `marker`)",
    "op": "one row per device op: section, position, the report's block / layer (`place_id`) and "
          "`attribution`, history's (`hist_place_id`, `hist_how`), replay `iteration` and `iter_pos`, `occurrence`, "
          "`marker_row`, op code, device, durations, cycles, host times, cores, trace ids, its static facts "
          "(`perf_shape_id`: op type, fidelity, shapes, memory)",
    "place": "the (block, layer) pairs ops are attributed to, stored once ('' for none); `op.place_id` and "
             "`op.hist_place_id` name them, the views give them as text",
    "op_code": "op codes with their report category and whether they are compute (conv / matmul)",
    "rollup_key": "the grouping and key of rollup rows (a block, a layer, an op code...), stored once, shared by "
                  "runs",
    "rollup_row": "per run, section, key and device: per-iteration kernel / op-to-op / FW time (ns) and span (us) "
                  "and their spread over replays (what history reads; the view `rollup` gives keys as text and "
                  "times in us)",
    "run_series": "per run, section, grouping and figure: the rollup rows as one typed array per figure (key ids, "
                  "devices, each column of the view `rollup` in its units), what history reads; derived from "
                  "`rollup_row`, rebuilt by `warehouse check --repair`",
    "run_report": "per run, the OPT_BASELINE report's parts computed from its ops (trace ids, sections, group "
                  "tables, top ops), stored at ingest so that `report` reads kilobytes, not ops",
    "perf_shape": "the static facts of ops, stored once, shared by ops and runs: the report's (op type, fidelity, "
                  "input 0 shape and memory, output 0 memory) and the per-op analysis's (category, problem size, "
                  "FLOPs and DRAM bytes of one call, datatypes)",
    "run_column": "per run, each CSV column's name and where its cells are stored (view csv_cell reads them)",
    "perf_tensor": "the input / output tensors of a perf_shape: W, Z, Y, X logical and padded, layout, datatype, "
                   "memory",
    "cell_chunk": "every row's cells for export, in compressed chunks of consecutive rows: each row's `cell_tuple` "
                  "id and its volatile cells (durations, cycles...)",
    "cell_tuple": "the static cells of rows (attributes, shapes, memory...), stored once, shared by rows and runs",
    "text_value": "long strings inside cell tuples (ATTRIBUTES, kernel sources), stored once",
}

# The same docs as table comments: PostgreSQL stores them (views.create_views writes them at head), and
# `alembic check` compares them with the database.
for _name, _doc in TABLE_DOCS.items():
    metadata.tables[_name].comment = _doc
