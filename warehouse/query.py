"""Read-only SQL over the warehouse, and the schema listing.

The connection itself is read-only (SQLite ``mode=ro``, PostgreSQL ``default_transaction_read_only``), so a
statement that writes fails in the database, whatever its spelling; no keyword filter is involved.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import DBAPIError, ResourceClosedError, SQLAlchemyError

from warehouse.errors import UsageError
from warehouse.schema import TABLE_DOCS
from warehouse.views import VIEWS


def run_sql(engine: Engine, sql: str, params: dict[str, Any] | None = None) -> tuple[list[str], list[tuple]]:
    """Run one statement on a read-only engine; ``(column names, rows)``."""
    if not sql.strip():
        raise UsageError("no SQL given (pass it as an argument or on standard input)")
    try:
        with engine.connect() as conn:
            result = conn.execute(text(sql), params or {})
            try:
                cols = list(result.keys())
                rows = [tuple(r) for r in result]
            except ResourceClosedError:
                cols, rows = [], []
            conn.rollback()
    except DBAPIError as e:
        msg = str(e.orig).strip().splitlines()[0] if e.orig is not None else str(e)
        if "readonly" in msg.replace(" ", "").lower() or "read-only" in msg.lower():
            raise UsageError(f"the warehouse is read-only through `warehouse sql` ({msg}); "
                             "use the warehouse commands to change it") from None
        raise UsageError(f"SQL error: {msg}") from None
    except SQLAlchemyError as e:
        raise UsageError(f"SQL error: {e}") from None
    return cols, rows


def describe_schema(engine: Engine) -> list[dict[str, Any]]:
    """Tables and views with their columns: ``[{"name", "type": table|view, "doc", "columns": [...]}]``."""
    docs = {name: doc for name, doc, _ in VIEWS}
    insp = inspect(engine)
    out = []
    for kind, names in (("table", insp.get_table_names()), ("view", insp.get_view_names())):
        for name in sorted(names):
            if name == "alembic_version":
                continue
            cols = [{"name": c["name"], "type": str(c["type"]) if c.get("type") is not None else ""}
                    for c in insp.get_columns(name)]
            out.append({"name": name, "type": kind, "doc": docs.get(name, TABLE_DOCS.get(name, "")),
                        "columns": cols})
    return out
