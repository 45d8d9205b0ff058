"""PostgreSQL roles for reading a shared warehouse: the server-side half of `warehouse sql`'s guard.

Two roles, both able to SELECT from the warehouse's tables and views and nothing else:

- the **sandbox** (:data:`SANDBOX_ROLE`, NOLOGIN): `warehouse sql` and the dashboard's `/sql` switch to it with
  ``SET LOCAL ROLE`` for the user's statement when they are connected as a role that could write (the owner, a
  superuser). It is created by the first writing command or `warehouse sql` that has the right to, and granted
  SELECT on each warehouse database it serves.
- **readers** (`warehouse db create-reader ROLE`): logins for dashboards and people, which never need the
  sandbox because they cannot write in the first place.
"""
from __future__ import annotations

import re

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

from warehouse.store import dialect
from warehouse.store.db import write_tx
from warehouse.errors import UsageError

_ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
SANDBOX_ROLE = "warehouse_sql_reader"
# Functions PUBLIC may run by default that let a role keep something past its statement: large objects (stored
# in the database), advisory locks (held by the session), notifications. Revoked from PUBLIC when the owner may
# (a superuser owns pg_catalog's functions), and granted back to the role that runs the warehouse's commands.
_SESSION_FUNCTIONS = ("lo_from_bytea(oid, bytea)", "lo_create(oid)", "lo_creat(integer)", "lo_import(text)",
                      "lo_import(text, oid)", "lo_put(oid, bigint, bytea)", "lo_unlink(oid)",
                      "pg_advisory_lock(bigint)", "pg_advisory_lock(integer, integer)",
                      "pg_advisory_lock_shared(bigint)", "pg_advisory_lock_shared(integer, integer)",
                      "pg_try_advisory_lock(bigint)", "pg_try_advisory_lock(integer, integer)",
                      "pg_try_advisory_lock_shared(bigint)", "pg_try_advisory_lock_shared(integer, integer)",
                      "pg_notify(text, text)")


def _grant_select(conn: Connection, role: str) -> None:
    db = conn.execute(text("SELECT current_database()")).scalar()
    conn.execute(text(f'GRANT CONNECT ON DATABASE "{db}" TO {role}'))
    conn.execute(text(f"GRANT USAGE ON SCHEMA public TO {role}"))
    conn.execute(text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"))
    conn.execute(text(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO {role}"))


def _harden_database(conn: Connection) -> list[str]:
    """Take from PUBLIC what a SELECT-only role could still use to keep something (temp tables, large objects,
    advisory locks); returns what could not be taken (the owner is not a superuser)."""
    db = conn.execute(text("SELECT current_database()")).scalar()
    me = conn.execute(text("SELECT current_user")).scalar()
    left = []
    conn.execute(text(f'REVOKE TEMPORARY ON DATABASE "{db}" FROM PUBLIC'))
    conn.execute(text(f'GRANT TEMPORARY ON DATABASE "{db}" TO "{me}"'))
    if conn.execute(text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")).scalar():
        for fn in _SESSION_FUNCTIONS:
            conn.execute(text(f"REVOKE EXECUTE ON FUNCTION pg_catalog.{fn} FROM PUBLIC"))
            conn.execute(text(f'GRANT EXECUTE ON FUNCTION pg_catalog.{fn} TO "{me}"'))
    else:
        left.append("large objects, advisory locks and NOTIFY (revoking them from PUBLIC needs a superuser)")
    return left


def ensure_sandbox(engine: Engine) -> bool:
    """Create the sandbox role when missing and grant it SELECT on this warehouse; False when the connected role
    may not (no CREATEROLE, not the tables' owner). Safe to race: a concurrent creation is not an error."""
    with engine.connect() as conn:
        if _sandbox_ready(conn):
            return True
    try:
        with write_tx(engine) as conn:
            exists = conn.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": SANDBOX_ROLE}).scalar()
            if not exists:
                conn.execute(text(f"CREATE ROLE {SANDBOX_ROLE} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE "
                                  "NOINHERIT NOREPLICATION"))
            _grant_select(conn, SANDBOX_ROLE)
            if not conn.execute(text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")).scalar():
                conn.execute(text(f"GRANT {SANDBOX_ROLE} TO CURRENT_USER"))
    except DBAPIError:
        # another process created it first (a duplicate), or this role may not: look again
        with engine.connect() as conn:
            return _sandbox_ready(conn)
    return True


def _sandbox_ready(conn: Connection) -> bool:
    return bool(conn.execute(text(
        "SELECT r.oid IS NOT NULL AND pg_has_role(current_user, r.oid, 'USAGE') "
        "AND has_table_privilege(r.oid, 'run', 'SELECT') "
        "FROM (SELECT (SELECT oid FROM pg_roles WHERE rolname = :r) AS oid) r"), {"r": SANDBOX_ROLE}).scalar())


def can_write(conn: Connection) -> bool:
    """Whether the connected role could change the warehouse (a superuser, an owner, or a role with a write
    privilege): such a role runs user SQL as the sandbox."""
    return bool(conn.execute(text(
        "SELECT rolsuper OR pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = 'run'::regclass), "
        "'USAGE') OR has_table_privilege('run', 'INSERT, UPDATE, DELETE, TRUNCATE') "
        "OR has_database_privilege(current_database(), 'CREATE, TEMPORARY') "
        "FROM pg_roles WHERE rolname = current_user")).scalar())


def create_reader(engine: Engine, role: str, password: str | None = None) -> list[str]:
    """Create ``role`` (or refresh its grants): LOGIN, no superuser, SELECT on every table and view of the
    warehouse (and on those made later by this role), transactions read-only by default, a statement timeout, no
    temporary tables; large objects, advisory locks and NOTIFY revoked from PUBLIC when the owner is a superuser.
    Returns what stays possible for the role (see the README)."""
    if not dialect.is_postgres(engine):
        raise UsageError("create-reader is for PostgreSQL; a SQLite warehouse is read-only for `warehouse sql` "
                         "already (and a file's permissions guard it)")
    if not _ROLE.match(role):
        raise UsageError(f"role {role!r}: expected a lower-case name of letters, digits and _")
    with write_tx(engine) as conn:
        exists = conn.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": role}).scalar()
        if not exists:
            conn.execute(text(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION"))
        if password is not None:
            # the password is a literal the server needs in the statement; quote it as PostgreSQL does
            lit = "'" + password.replace("'", "''") + "'"
            conn.exec_driver_sql(f"ALTER ROLE {role} PASSWORD {lit}".replace("%", "%%"))
        _grant_select(conn, role)
        conn.execute(text(f"ALTER ROLE {role} SET default_transaction_read_only = on"))
        conn.execute(text(f"ALTER ROLE {role} SET statement_timeout = '300s'"))
        conn.execute(text(f"ALTER ROLE {role} SET idle_in_transaction_session_timeout = '600s'"))
        return _harden_database(conn)
