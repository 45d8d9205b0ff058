"""The typed op columns, declared once: for each, its CSV header, its kind (how a cell parses), its SQL home and
what it means. Ingest parses by it (:class:`warehouse.capture.rowprep._Cells`, in this order), the op table's columns
must match it (a test holds the models to it), and the README's table of typed columns is generated from it.
Every other cell stays in the lossless store and is read by name through the ``csv_cell`` view.

Positions in the typed tuple of an op row are named here (``AT.kernel_ns``), never written as numbers.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from collections.abc import Sequence

# The kinds of typed cells: how they parse and their SQL type (the models in warehouse.store.schema must agree).
FLOAT, INT64, INT32, TEXT = "float", "int64", "int32", "text"
SQL_TYPE = {FLOAT: "DOUBLE", INT64: "BIGINT", INT32: "INTEGER", TEXT: "TEXT"}


@dataclass(frozen=True)
class OpColumn:
    """One typed op column."""

    name: str  # the column of table ``op`` (its SQL home: op.<name>)
    csv: str  # the CSV header it is read from
    kind: str  # FLOAT | INT64 | INT32 | TEXT: empty or unparsable cells are NULL (a warning counts the latter)
    doc: str

    @property
    def home(self) -> str:
        """``op.<name>``."""
        return f"op.{self.name}"


OP_COLUMNS: tuple[OpColumn, ...] = (
    OpColumn("kernel_ns", "DEVICE KERNEL DURATION [ns]", FLOAT, "device kernel time (the report's kernel us x 1000)"),
    OpColumn("fw_ns", "DEVICE FW DURATION [ns]", FLOAT, "device firmware time"),
    OpColumn("op2op_ns", "OP TO OP LATENCY [ns]", FLOAT, "the gap since the previous op ended"),
    OpColumn("fw_start_cycle", "DEVICE FW START CYCLE", FLOAT, "firmware start, in device cycles (the span)"),
    OpColumn("fw_end_cycle", "DEVICE FW END CYCLE", FLOAT, "firmware end, in device cycles"),
    OpColumn("device_id", "DEVICE ID", INT32, "the device the op ran on"),
    OpColumn("global_call_count", "GLOBAL CALL COUNT", INT64, "the op's call number in the program"),
    OpColumn("host_start_ns", "HOST START TS", INT64, "host dispatch start (tt-perf-report's sort order)"),
    OpColumn("host_end_ns", "HOST END TS", INT64, "host dispatch end"),
    OpColumn("cores", "CORE COUNT", INT32, "Tensix cores the op used"),
    OpColumn("trace_id", "METAL TRACE ID", TEXT, "the captured trace the op replays (stripped)"),
    OpColumn("replay_session", "METAL TRACE REPLAY SESSION ID", TEXT, "the replay it belongs to (stripped)"),
)

# positions in the typed tuple: AT.kernel_ns == 0, ...
AT = SimpleNamespace(**{c.name: i for i, c in enumerate(OP_COLUMNS)})


def markdown_table() -> str:
    """The README's table: CSV header, SQL home, type, meaning."""
    rows = ["| CSV column | stored as | type | meaning |", "|---|---|---|---|"]
    rows += [f"| `{c.csv}` | `{c.home}` | {SQL_TYPE[c.kind]} | {c.doc} |" for c in OP_COLUMNS]
    return "\n".join(rows)


# ------------------------------------------------------------------------------------------- cells stored once
# A volatile cell of a typed numeric column is stored once, as the op's typed value, when the text is exactly
# what the value prints as (an integer without sign or leading zeros, or with a minus; within the digits the
# kind keeps exactly): the lossless store then holds JSON null in its place, and export and csv_cell print the
# value. Cycles, host times, call counts and durations are the cells that differ on every row: kept twice,
# they were half of the chunks' bytes.
DIGITS = {FLOAT: 15, INT64: 18, INT32: 9}  # (a double holds 15 digits exactly; 18 digits fit 63 bits)


@dataclass(frozen=True)
class StoredOnce:
    """A volatile column whose canonical cells are the op's typed value: its ``slot`` in the volatile cells and
    its typed ``column``."""

    slot: int
    column: OpColumn

    def canonical(self, cell: str) -> bool:
        """Whether ``cell`` is exactly what the typed value prints as (``str(int(value))``)."""
        digits = cell[1:] if cell[:1] == "-" else cell
        return (0 < len(digits) <= DIGITS[self.column.kind] and digits.isascii() and digits.isdigit()
                and (digits[0] != "0" or cell == "0"))


def stored_once(header: Sequence[str], volatile_idx: Sequence[int]) -> list[StoredOnce]:
    """The volatile columns of a header whose canonical cells are stored as typed values: each numeric typed
    column at the position ingest types it from (the last of its name, as ``csv.DictReader`` finds it)."""
    last = {name: i for i, name in enumerate(header)}
    slot_of = {pos: j for j, pos in enumerate(volatile_idx)}
    out = []
    for c in OP_COLUMNS:
        pos = last.get(c.csv)
        if c.kind in DIGITS and pos is not None and pos in slot_of:
            out.append(StoredOnce(slot_of[pos], c))
    return out


def typed_text(value: object) -> str:
    """The cell a stored-once typed value stands for."""
    return str(int(value))  # type: ignore[call-overload]


def typed_text_sql(name_expr: str, op_alias: str) -> str:
    """SQL giving, for the CSV column named by ``name_expr``, the text of its stored-once typed value of the op
    ``op_alias`` (NULL for other columns): what ``csv_cell`` reads where the lossless store holds null."""
    whens = " ".join(f"WHEN '{c.csv}' THEN CAST(CAST({op_alias}.{c.name} AS BIGINT) AS TEXT)"
                     for c in OP_COLUMNS if c.kind in DIGITS)
    return f"CASE {name_expr} {whens} END"
