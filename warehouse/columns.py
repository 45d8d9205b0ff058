"""The typed op columns, declared once: for each, its CSV header, its kind (how a cell parses), its SQL home and
what it means. Ingest parses by it (:class:`warehouse.rowprep._Cells`, in this order), the op table's columns
must match it (a test holds the models to it), and the README's table of typed columns is generated from it.
Every other cell stays in the lossless store and is read by name through the ``csv_cell`` view.

Positions in the typed tuple of an op row are named here (``AT.kernel_ns``), never written as numbers.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

# The kinds of typed cells: how they parse and their SQL type (the models in warehouse.schema must agree).
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
