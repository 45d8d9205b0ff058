"""Triage that persists: what a person decided about a change, a gate finding or a night.

- **acknowledged** / **expected** step (a change from ``warehouse changes`` or a cause from ``warehouse
  regressions``): it becomes the new baseline. The gate's window for the nights from its first night on starts
  there (the old level no longer widens their noise), and on a night where the window would still be the old
  level, findings of the same key and direction are not reported.
- **invalid** night (``run:<id>``, or any finding of that night marked invalid): it leaves every baseline, as
  an invalid capture does.

Changes keep being listed (they happened), with their triage status beside them.
"""
from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, delete, select

from warehouse.store import schema as t
from warehouse.store.db import write_tx
from warehouse.errors import NotFound, UsageError

STATUSES = ("acknowledged", "expected", "invalid")
_RUN_REF = re.compile(r"run:(\d+)")  # (\d: any script's digits, which int() reads; the id is made of ASCII ones)
_FINDING = re.compile(r"[cr]-[0-9a-f]{1,40}")


def normalise(ident: str) -> str:
    """The one spelling of a triage id: ``run:<id>`` with the run's number as ``warehouse runs`` prints it, or a
    finding's ``c-``/``r-`` id in lower case; surrounding blanks dropped. Anything else is a usage error."""
    s = ident.strip()
    m = _RUN_REF.fullmatch(s)
    if m:
        n = int(m.group(1))
        if n >= 2 ** 63:
            raise NotFound(f"no run {n}; `warehouse runs` lists them")
        return f"run:{n}"
    low = s.lower()
    if low.isascii() and _FINDING.fullmatch(low):
        return low
    raise UsageError(f"{ident!r}: expected a change id (c-...), a gate finding id (r-...) or run:<id>")


def who_decides(who: str | None) -> str | None:
    """Who records a decision: as given, else the login name ($USER, else the account's name: a CI job or a
    container may have no $USER)."""
    if who:
        return who
    name = os.environ.get("USER") or os.environ.get("LOGNAME")
    if name:
        return name
    try:
        import getpass
        return getpass.getuser()
    except (KeyError, OSError, ImportError):
        return None


@dataclass
class Decision:
    """One triage record."""

    id: str
    run_id: int
    kind: str
    by: str
    key: str
    up: bool
    status: str
    note: str | None
    who: str | None
    decided_at: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def record(engine: Engine, ident: str, status: str, *, note: str | None = None, who: str | None = None,
           found: dict[str, Any] | None = None) -> Decision:
    """Record (or replace) the decision about ``ident``: ``run:<id>``, or a change or gate finding id whose
    finding is ``found`` (its run_id, kind, by, key and direction: :func:`warehouse.history.lookup.find`)."""
    if status not in STATUSES:
        raise UsageError(f"{status!r}: expected one of {', '.join(STATUSES)}", param="status")
    ident = normalise(ident)
    m = _RUN_REF.fullmatch(ident)
    if m:
        with engine.connect() as conn:
            rid = int(m.group(1))
            if conn.execute(select(t.run.c.id).where(t.run.c.id == rid)).scalar() is None:
                raise NotFound(f"no run {rid}; `warehouse runs` lists them")
        found = {"run_id": rid, "kind": "run", "by": "run", "key": "", "up": False}
    if found is None:
        raise UsageError(f"{ident}: the finding it names is needed (warehouse.history.lookup.find)")
    who = who_decides(who)
    d = Decision(ident, int(found["run_id"]), found["kind"], found["by"], found["key"], bool(found["up"]), status,
                 note, who, datetime.now(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="seconds"))
    with write_tx(engine) as conn:
        conn.execute(delete(t.triage).where(t.triage.c.id == ident))
        conn.execute(t.triage.insert().values(
            id=d.id, run_id=d.run_id, kind=d.kind, by=d.by, key=d.key, up=d.up, status=d.status, note=d.note,
            who=d.who, decided_at=datetime.fromisoformat(d.decided_at)))
    return d


def clear(engine: Engine, ident: str) -> Decision:
    """Remove the decision about ``ident``; the decision that was removed."""
    ident = normalise(ident)
    with write_tx(engine) as conn:
        found = [d for d in decisions(conn) if d.id == ident]
        if not found:
            raise NotFound(f"no decision about {ident}; `warehouse triage` lists them")
        conn.execute(delete(t.triage).where(t.triage.c.id == ident))
    return found[0]


def decisions(conn: Connection, run_ids: list[int] | None = None) -> list[Decision]:
    """Every decision (about ``run_ids`` only, when given), oldest night first."""
    q = select(t.triage).order_by(t.triage.c.run_id, t.triage.c.id)
    if run_ids is not None:
        if not run_ids:
            return []
        q = q.where(t.triage.c.run_id.in_(run_ids))
    return [Decision(r.id, r.run_id, r.kind, r.by, r.key, bool(r.up), r.status, r.note, r.who,
                     r.decided_at.isoformat(sep=" ", timespec="seconds")) for r in conn.execute(q)]


def invalid_runs(conn: Connection, run_ids: list[int]) -> dict[int, str]:
    """Nights a person called invalid: ``{run: why}``."""
    return {d.run_id: f"triaged invalid{': ' + d.note if d.note else ''}" for d in decisions(conn, run_ids)
            if d.status == "invalid"}


def accepted_steps(conn: Connection, run_ids: list[int]) -> list[Decision]:
    """Steps a person acknowledged or expects: the new baselines."""
    return [d for d in decisions(conn, run_ids) if d.status in ("acknowledged", "expected") and d.kind != "run"]
