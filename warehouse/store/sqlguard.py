"""What ``warehouse sql`` lets through, on each back end: one read-only statement over the warehouse, nothing else.

Two layers on each back end, so that what one misses the other refuses:

- **SQLite**: the connection is opened read-only (``mode=ro``, which SQL cannot undo), and an authorizer callback
  allows only reading: SELECT, reading tables and views, recursive CTEs, a few PRAGMAs that describe the schema,
  and calls of the functions on an allow-list (pure SQL: string, math, date, JSON, aggregates, windows). ATTACH,
  which would create a file anywhere, is refused before it runs. The driver runs one statement only.
- **PostgreSQL**: the statement is parsed with PostgreSQL's own parser (pglast, libpg_query) and refused unless
  it is exactly one SELECT (or EXPLAIN of one) that reads only the warehouse's relations and calls only
  functions on an allow-list (a deny-list always misses one: ``ts_stat`` runs any SELECT given as a string).
  It then runs with the rights of a SELECT-only role (``SET LOCAL ROLE``, :mod:`warehouse.store.roles`) in a
  read-only REPEATABLE READ transaction with statement, lock and idle timeouts, and the connection is reset
  (``DISCARD ALL``: settings, advisory locks, prepared statements) before it goes back to the pool.
"""
from __future__ import annotations

import contextlib
import re
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from warehouse.errors import UsageError

# ------------------------------------------------------------------------------------------------ SQLite
_SQLITE_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
# PRAGMAs that only describe the schema (their argument names a table or index, never a value to set)
_SQLITE_PRAGMAS = {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list",
                   "table_list", "function_list", "collation_list", "pragma_list"}
# Functions a reader may call (lower case): SQLite's built-in scalar, aggregate, window, date, math and JSON
# functions that compute from their arguments alone, and the warehouse's own sqlar_uncompress (csv_cell). Not
# load_extension, fts3_tokenizer, readfile / writefile / edit (the shell's), sqlite_log and the like.
SQLITE_FUNCTIONS = frozenset("""
    -> ->> abs acos acosh asin asinh atan atan2 atanh avg ceil ceiling char coalesce concat concat_ws cos cosh count
    cume_dist current_date current_time current_timestamp date datetime degrees dense_rank exp first_value floor
    format glob group_concat hex ifnull iif instr json json_array json_array_length json_each json_extract
    json_group_array json_group_object json_insert json_object json_patch json_quote json_remove json_replace
    json_set json_tree json_type json_valid julianday lag last_value lead length like likelihood likely ln log
    log10 log2 lower ltrim max min mod nth_value ntile nullif octet_length percent_rank pi pow power printf quote
    radians random randomblob rank replace round row_number rtrim sign sin sinh soundex sqlite_version sqrt strftime
    string_agg substr substring sum tan tanh time timediff total trim trunc typeof unhex unicode unixepoch unlikely
    upper zeroblob sqlar_uncompress
""".split())
# A table-valued function (json_each, pragma_table_info...) is a virtual table that SQLite declares on its first
# use by a connection, which the authorizer sees as an UPDATE of these columns of sqlite_master; the connection is
# read-only, so nothing is written.
_SQLITE_VTAB_DECLARE = {"type", "name", "tbl_name", "rootpage", "sql"}


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
            return str(arg2).lower() in SQLITE_FUNCTIONS
        if action == sqlite3.SQLITE_UPDATE:
            return str(arg1).lower() == "sqlite_master" and str(arg2).lower() in _SQLITE_VTAB_DECLARE
        if action in _SQLITE_ALLOWED or action == sqlite3.SQLITE_TRANSACTION:
            return True  # (transactions: the read transaction around the statement; the connection is read-only)
        return action == sqlite3.SQLITE_PRAGMA and str(arg1).lower() in _SQLITE_PRAGMAS


# A user's statement may build values inside SQLite that no per-value limit reaches (json_group_array grows its
# buffer past SQLITE_LIMIT_LENGTH before it checks it: 2,000 rows of 1 MiB held 1 GB). SQLite's hard heap limit
# bounds everything SQLite allocates in this process, so while user SQL runs it is held at what was in use when the
# first statement started plus this budget (several statements at once, the dashboard's, share it). A statement
# that needs more fails with SQLite's out-of-memory error, which is said as a limit.
HEAP_BUDGET = 256 << 20
_heap_lock = threading.Lock()
_heap_users = 0
_heap_before = 0


def _sqlite_lib() -> Any:
    """The SQLite library the ``sqlite3`` module runs on (for the two calls it does not expose), or None."""
    import ctypes
    import ctypes.util
    import _sqlite3

    try:
        lib = ctypes.CDLL(_sqlite3.__file__)  # (its symbols include the library's when it is linked statically)
        lib.sqlite3_hard_heap_limit64  # noqa: B018 - looked up to see whether it is there
    except (OSError, AttributeError):
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
            lib.sqlite3_hard_heap_limit64  # noqa: B018
        except (OSError, AttributeError):
            return None
    lib.sqlite3_hard_heap_limit64.restype = ctypes.c_int64
    lib.sqlite3_hard_heap_limit64.argtypes = [ctypes.c_int64]
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    return lib


_LIB: Any = None if sys.platform == "win32" else False  # False: not looked up yet


@contextlib.contextmanager
def sqlite_heap_bound(budget: int = HEAP_BUDGET) -> Iterator[None]:
    """SQLite's heap in this process bounded at what it uses now plus ``budget`` while the block runs (nested and
    concurrent blocks share the first one's bound; the limit there before is put back when the last one ends)."""
    global _LIB, _heap_users, _heap_before
    if _LIB is False:
        _LIB = _sqlite_lib()
    lib = _LIB
    if lib is None:
        yield
        return
    with _heap_lock:
        if _heap_users == 0:
            _heap_before = lib.sqlite3_hard_heap_limit64(-1)
            bound = lib.sqlite3_memory_used() + budget
            lib.sqlite3_hard_heap_limit64(min(bound, _heap_before) if _heap_before > 0 else bound)
        _heap_users += 1
    try:
        yield
    finally:
        with _heap_lock:
            _heap_users -= 1
            if _heap_users == 0:
                lib.sqlite3_hard_heap_limit64(_heap_before)


# printf's width and precision repeat a character (printf('%.*c', 2000000000, 'x')): SQLite stops storing at the
# value limit but goes on counting for seconds, in one call that no progress handler interrupts. The warehouse's
# printf and format check them first, then let SQLite's own format the value.
_SPEC = re.compile(r"%[-+ 0#,!]*(\*|\d+)?(?:\.(\*|\d*))?l{0,2}(.)", re.S)


def bounded_printf(bound: int) -> Callable[..., Any]:
    """SQLite's ``printf(FORMAT, ...)``, refused when a width or precision is over ``bound``."""
    private = sqlite3.connect(":memory:", check_same_thread=False)
    private.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, bound)

    def as_int(v: Any) -> int:
        try:
            return abs(int(float(v)))
        except (TypeError, ValueError, OverflowError):
            return 0

    def printf(fmt: Any, *args: Any) -> Any:
        if isinstance(fmt, str):
            i = 0
            for m in _SPEC.finditer(fmt):
                for part in (m.group(1), m.group(2)):
                    if part == "*":
                        n = as_int(args[i]) if i < len(args) else 0
                        i += 1
                    else:
                        n = int(part) if part else 0
                    if n > bound:
                        raise ValueError(f"printf: a width or precision of {n:,}, over the value limit of {bound:,}")
                if m.group(3) != "%":
                    i += 1
        marks = ", ".join("?" * (1 + len(args)))
        return private.execute(f"SELECT printf({marks})", (fmt, *args)).fetchone()[0]
    return printf


# ------------------------------------------------------------------------------------------------ PostgreSQL
# Functions a reader may call (lower case, in pg_catalog): pure SQL, string, math, date, JSON, array, aggregate
# and window functions, which compute from their arguments alone. Nothing that reads a file, a setting, another
# session, a large object or a sequence, takes a lock, or runs SQL given as a string (ts_stat, query_to_xml...);
# nor those whose result's size is a number argument rather than their input's (repeat, lpad, rpad, array_fill:
# repeat('x', 500000000) takes 500 MB of the server's memory in one call).
PG_FUNCTIONS = frozenset("""
    abs acos acosd acosh asin asind asinh atan atan2 atan2d atand atanh cbrt ceil ceiling cos cosd cosh cot cotd
    degrees div erf erfc exp factorial floor gcd lcm ln log log10 min_scale mod pi power radians random round scale
    sign sin sind sinh sqrt tan tand tanh trim_scale trunc width_bucket
    ascii bit_length btrim char_length character_length chr concat concat_ws format initcap left length lower
    ltrim md5 normalize is_normalized octet_length overlay position regexp_count regexp_instr regexp_like
    regexp_match regexp_matches regexp_replace regexp_split_to_array regexp_split_to_table regexp_substr
    replace reverse right rtrim split_part starts_with string_to_array string_to_table strpos substr substring
    to_hex translate upper quote_ident quote_literal quote_nullable encode decode sha224 sha256 sha384 sha512
    similar_to_escape unistr textlen
    age date_bin date_part date_trunc extract isfinite justify_days justify_hours justify_interval make_date
    make_interval make_time make_timestamp make_timestamptz now clock_timestamp statement_timestamp
    transaction_timestamp timeofday to_char to_date to_number to_timestamp timezone
    to_json to_jsonb array_to_json row_to_json json_build_array jsonb_build_array json_build_object
    jsonb_build_object json_object jsonb_object json_array_elements json_array_elements_text jsonb_array_elements
    jsonb_array_elements_text json_array_length jsonb_array_length json_each json_each_text jsonb_each
    jsonb_each_text json_extract_path json_extract_path_text jsonb_extract_path jsonb_extract_path_text
    json_object_keys jsonb_object_keys json_typeof jsonb_typeof jsonb_pretty jsonb_set jsonb_set_lax jsonb_insert
    json_strip_nulls jsonb_strip_nulls jsonb_path_exists jsonb_path_match jsonb_path_query jsonb_path_query_array
    jsonb_path_query_first json_populate_record jsonb_populate_record json_to_record jsonb_to_record
    json_to_recordset jsonb_to_recordset
    array_append array_cat array_dims array_length array_lower array_ndims array_position
    array_positions array_prepend array_remove array_replace array_to_string array_upper cardinality trim_array
    unnest generate_series generate_subscripts
    avg count max min sum bool_and bool_or every array_agg string_agg json_agg jsonb_agg json_object_agg
    jsonb_object_agg stddev stddev_pop stddev_samp variance var_pop var_samp corr covar_pop covar_samp regr_avgx
    regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy percentile_cont
    percentile_disc mode bit_and bit_or bit_xor range_agg range_intersect_agg
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
    num_nonnulls num_nulls pg_typeof pg_column_size pg_size_pretty pg_size_bytes
    int4range int8range numrange tsrange tstzrange daterange lower_inc upper_inc lower_inf upper_inf isempty
    range_merge
""".split())
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
        def visit_FuncCall(self, _ancestors: Any, node: Any) -> None:
            names = [n.sval.lower() for n in node.funcname]
            fn, schema = names[-1], names[:-1]
            if fn not in PG_FUNCTIONS or schema not in ([], ["pg_catalog"]):
                problems.append(f"the function {'.'.join(names)}() (not on the list of functions `warehouse sql` "
                                "allows: string, math, date, JSON, array, aggregate and window functions)")

        def visit_RangeVar(self, _ancestors: Any, node: Any) -> None:
            schema = (node.schemaname or "").lower()
            if schema not in ("", "public") or node.relname.lower().startswith("pg_"):
                problems.append(f"reading {'.'.join(filter(None, [node.schemaname, node.relname]))} "
                                "(outside the warehouse)")

        def visit(self, _ancestors: Any, node: Any) -> None:  # every other node: refused kinds by class name
            what = _PG_NODES_REFUSED.get(type(node).__name__)
            if what:
                problems.append(what)

    _Walk()(stmts)
    if problems:
        raise refused(problems[0])
    return not isinstance(stmt, ast.ExplainStmt)
