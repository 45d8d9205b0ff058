"""What ``warehouse sql`` lets through, on each back end: one read-only statement over the warehouse, nothing else.

SQLite: the connection is opened read-only (``mode=ro``, which SQL cannot undo) and an authorizer callback
allows only reading (SELECT, reading tables and views, functions, recursive CTEs, a few read-only PRAGMAs):
ATTACH, which would create a file anywhere, is refused before it runs. The driver runs one statement only.

PostgreSQL: the statement is parsed with PostgreSQL's own parser (pglast, libpg_query) and refused unless it is
exactly one SELECT (or EXPLAIN of one) that reads only the warehouse's own relations and calls no server-file,
admin, configuration or sequence function. It then runs in a transaction that is read-only from its first
statement, with a statement timeout. The real guard for a shared server is a SELECT-only role:
``warehouse db create-reader``.
"""
from __future__ import annotations

import re

import sqlite3
from typing import Any

from warehouse.errors import UsageError

# ------------------------------------------------------------------------------------------------ SQLite
_SQLITE_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
# PRAGMAs that only describe the schema (their argument names a table or index, never a value to set)
_SQLITE_PRAGMAS = {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list",
                   "table_list", "function_list", "collation_list", "pragma_list"}
_SQLITE_FUNCTIONS_DENIED = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}


_SQLITE_NAMES = {sqlite3.SQLITE_ATTACH: "ATTACH", sqlite3.SQLITE_DETACH: "DETACH", sqlite3.SQLITE_INSERT: "INSERT",
                 sqlite3.SQLITE_UPDATE: "UPDATE", sqlite3.SQLITE_DELETE: "DELETE", sqlite3.SQLITE_PRAGMA: "PRAGMA",
                 sqlite3.SQLITE_ALTER_TABLE: "ALTER TABLE", sqlite3.SQLITE_REINDEX: "REINDEX",
                 sqlite3.SQLITE_ANALYZE: "ANALYZE", sqlite3.SQLITE_CREATE_VTABLE: "CREATE VIRTUAL TABLE",
                 sqlite3.SQLITE_SAVEPOINT: "SAVEPOINT", sqlite3.SQLITE_FUNCTION: "the function"}


class SqliteAuthorizer:
    """``sqlite3.Connection.set_authorizer`` callback: reading is allowed, anything else denied; ``denied``
    names the first thing refused, for the error message."""

    def __init__(self) -> None:
        self.denied: str | None = None

    def __call__(self, action: int, arg1: Any, arg2: Any, _db: Any, _trigger: Any) -> int:
        if self._allowed(action, arg1, arg2):
            return sqlite3.SQLITE_OK
        if self.denied is None:
            what = _SQLITE_NAMES.get(action, "CREATE / DROP" if action <= 17 or action in (26, 27, 30, 32)
                                     else f"action {action}")
            detail = arg2 if action == sqlite3.SQLITE_FUNCTION else arg1
            self.denied = f"{what} {detail}".strip() if detail else what
        return sqlite3.SQLITE_DENY

    @staticmethod
    def _allowed(action: int, arg1: Any, arg2: Any) -> bool:
        if action == sqlite3.SQLITE_FUNCTION:
            return str(arg2).lower() not in _SQLITE_FUNCTIONS_DENIED
        if action in _SQLITE_ALLOWED or action == sqlite3.SQLITE_TRANSACTION:
            return True  # (transactions: the read transaction around the statement; the connection is read-only)
        return action == sqlite3.SQLITE_PRAGMA and str(arg1).lower() in _SQLITE_PRAGMAS


# ------------------------------------------------------------------------------------------------ PostgreSQL
# Function names (lower case) a reader never needs and that reach outside the warehouse: server files, other
# sessions, configuration, large objects, other databases, sequences, SQL run from a string.
_PG_DENIED = {"set_config", "current_setting", "nextval", "setval", "currval", "lastval", "query_to_xml",
              "query_to_xmlschema", "query_to_xml_and_xmlschema", "cursor_to_xml", "cursor_to_xmlschema",
              "table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema", "schema_to_xml",
              "database_to_xml", "database_to_xmlschema", "schema_to_xmlschema", "database_to_xml_and_xmlschema",
              "schema_to_xml_and_xmlschema", "txid_current", "inet_server_addr", "inet_server_port",
              "inet_client_addr", "inet_client_port", "version"}
_PG_DENIED_PREFIXES = ("pg_", "lo_", "dblink")
_PG_ALLOWED = {"pg_typeof", "pg_column_size", "pg_size_pretty", "pg_size_bytes"}
# Parse-tree nodes that make a SELECT write or lock, wherever they sit (a WITH can hold an UPDATE)
_PG_NODES_REFUSED = {"InsertStmt": "INSERT inside the query", "UpdateStmt": "UPDATE inside the query",
                     "DeleteStmt": "DELETE inside the query", "MergeStmt": "MERGE inside the query",
                     "IntoClause": "SELECT INTO", "LockingClause": "FOR UPDATE / FOR SHARE"}


def refused(what: str) -> UsageError:
    """The one error for a statement `warehouse sql` does not run."""
    return UsageError(f"`warehouse sql` runs one read-only SELECT over the warehouse; refused: {what}")


_BIND = re.compile(r"(?<![:\w]):\w+")


def check_postgres(sql: str) -> bool:
    """Refuse anything but one SELECT over the warehouse's relations (see the module docstring). Returns
    whether the statement can be read through a server-side cursor (a SELECT can, an EXPLAIN cannot)."""
    try:
        import pglast
        from pglast import ast
        from pglast.visitors import Visitor
    except ModuleNotFoundError:
        raise UsageError("`warehouse sql` on PostgreSQL needs pglast to check statements: "
                         "pip install 'tt-profile-warehouse[postgres]'") from None
    try:
        # `:name` bind parameters (the Python API's) are not PostgreSQL syntax; `$n` is, and means the same here
        stmts = pglast.parse_sql(_BIND.sub("$1", sql))
    except pglast.parser.ParseError as e:
        raise UsageError(f"SQL error: {e}") from None
    if len(stmts) != 1:
        raise refused(f"{len(stmts)} statements" if stmts else "an empty statement")
    stmt = stmts[0].stmt
    query = stmt.query if isinstance(stmt, ast.ExplainStmt) else stmt
    if not isinstance(query, ast.SelectStmt):
        raise refused(type(stmt).__name__.removesuffix("Stmt").upper() or "this statement")

    problems: list[str] = []

    class _Walk(Visitor):
        def visit_FuncCall(self, _ancestors, node) -> None:
            fn = node.funcname[-1].sval.lower()
            if fn not in _PG_ALLOWED and (fn in _PG_DENIED or fn.startswith(_PG_DENIED_PREFIXES)):
                problems.append(f"the function {fn}()")

        def visit_RangeVar(self, _ancestors, node) -> None:
            schema = (node.schemaname or "").lower()
            if schema not in ("", "public") or node.relname.lower().startswith("pg_"):
                problems.append(f"reading {'.'.join(filter(None, [node.schemaname, node.relname]))} "
                                "(outside the warehouse)")

        def visit(self, _ancestors, node) -> None:  # every other node: refused kinds by class name
            what = _PG_NODES_REFUSED.get(type(node).__name__)
            if what:
                problems.append(what)

    _Walk()(stmts)
    if problems:
        raise refused(problems[0])
    return not isinstance(stmt, ast.ExplainStmt)
