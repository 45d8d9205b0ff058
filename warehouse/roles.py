"""PostgreSQL roles for reading a shared warehouse: the real guard behind `warehouse sql` and `serve`."""
from __future__ import annotations

import re

from sqlalchemy import Engine, text

from warehouse.db import write_tx
from warehouse.errors import UsageError

_ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def create_reader(engine: Engine, role: str, password: str | None = None) -> None:
    """Create ``role`` (or refresh its grants): LOGIN, no superuser, SELECT on every table and view of the
    warehouse (and on those made later by this role), transactions read-only by default, a statement timeout."""
    if engine.dialect.name != "postgresql":
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
        db = conn.execute(text("SELECT current_database()")).scalar()
        conn.execute(text(f'GRANT CONNECT ON DATABASE "{db}" TO {role}'))
        conn.execute(text(f"GRANT USAGE ON SCHEMA public TO {role}"))
        conn.execute(text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"))
        conn.execute(text(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO {role}"))
        conn.execute(text(f"ALTER ROLE {role} SET default_transaction_read_only = on"))
        conn.execute(text(f"ALTER ROLE {role} SET statement_timeout = '300s'"))
