"""Listing runs and resolving the ``RUN`` argument of commands (an id, or ``latest``)."""
from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from warehouse.errors import NotFound, UsageError

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Engine


def order_key() -> tuple[ColumnElement[Any], ...]:
    """Runs in capture order (ingest time when the file name has no capture time), then id."""
    from sqlalchemy import func

    from warehouse.store import schema as t
    return (func.coalesce(t.run.c.captured_at, t.run.c.ingested_at), t.run.c.id)


def resolve_run(conn: Any, ref: str, label: str | None = None) -> int:
    """The id of ``ref``: a number, or ``latest`` (the newest capture, optionally with ``label``). ``conn`` is a
    SQLAlchemy connection or one of the light path (:mod:`warehouse.store.lite`): the same SQL."""
    from warehouse.store.lite import fetch

    ref = str(ref).strip()
    if ref.lower() == "latest":
        where = " WHERE label = :label" if label is not None else ""
        found = fetch(conn, f"SELECT id FROM run{where} ORDER BY {_NEWEST} LIMIT 1", {"label": label})
        if not found:
            raise NotFound("no runs" + (f" with label {label!r}" if label else "") + "; ingest a CSV first")
        return int(found[0]["id"])
    # ASCII digits only: int() also takes other scripts' digits ('١' is 1) and '1_0'
    if not (ref.isascii() and ref.isdigit()):
        raise UsageError(f"RUN {ref!r}: expected a run id (see `warehouse runs`) or 'latest'")
    run_id = int(ref)
    if run_id >= 2 ** 63 or not fetch(conn, "SELECT id FROM run WHERE id = :r", {"r": run_id}):
        raise NotFound(f"no run {run_id}; `warehouse runs` lists them")
    return run_id


# Runs in capture order (ingest time when the file name has no capture time), then id: as SQL over ``run``.
_ORDER = "COALESCE(captured_at, ingested_at), id"
_NEWEST = "COALESCE(captured_at, ingested_at) DESC, id DESC"


@dataclass
class RunInfo:
    """A stored run: its capture (time, file, counts, frequency, architecture), label, tags, how its trace was
    attributed, and (when asked) the warnings recorded at ingest."""

    id: int
    captured_at: str | None  # from the file name (YYYY-MM-DD HH:MM:SS), when it has one
    ingested_at: str
    label: str | None
    file_name: str
    op_count: int
    signpost_count: int
    freq_mhz: float
    freq_source: str
    arch: str | None
    trace_matches_eager: bool
    export_exact: bool
    source_path: str
    attribution: dict[str, int]  # ops per history attribution (signpost, position, aligned, unmatched, none)
    tags: dict[str, str] = field(default_factory=dict)
    warnings: list[dict[str, Any]] | None = None  # {"row", "column", "message"}; None: not asked for

    @property
    def time(self) -> str:
        """The capture time, else the ingest time."""
        return self.captured_at or self.ingested_at

    def to_json(self) -> dict[str, Any]:
        """The run as ``runs --json`` prints it (``warnings`` only when asked for)."""
        out = asdict(self)
        if self.warnings is None:
            del out["warnings"]
        return out


_RUN_COLUMNS = ("id, captured_at, ingested_at, label, file_name, op_count, signpost_count, freq_mhz, freq_source, "
                "arch, trace_matches_eager, export_exact, source_path, attribution")


def list_runs(source: Any, label: str | None = None, warnings: bool = False, run_id: int | None = None
              ) -> list[RunInfo]:
    """Every run (oldest capture first; only ``run_id`` when given) with its tags, and its warnings when asked.
    ``source`` is an engine, or an open connection of the light path (:mod:`warehouse.store.lite`): the same SQL."""
    from warehouse.store.lite import fetch, timestamp

    where, params = [], {"label": label, "run": run_id}
    if label is not None:
        where.append("label = :label")
    if run_id is not None:
        where.append("id = :run")
    cond = f" WHERE {' AND '.join(where)}" if where else ""
    only = " WHERE run_id = :run" if run_id is not None else ""
    with _connected(source) as conn:
        runs = fetch(conn, f"SELECT {_RUN_COLUMNS} FROM run{cond} ORDER BY {_ORDER}", params)
        if label is not None and not runs:
            raise NotFound(f"no runs with label {label!r}; `warehouse runs` lists every label")
        tags: dict[int, dict[str, str]] = {}
        for r in fetch(conn, f"SELECT run_id, key, value FROM run_tag{only} ORDER BY run_id, key", params):
            tags.setdefault(r["run_id"], {})[r["key"]] = r["value"]
        warn: dict[int, list[dict[str, Any]]] = {}
        if warnings:
            for w in fetch(conn, f"SELECT run_id, row_no, column_name, message FROM run_warning{only} ORDER BY id",
                           params):
                warn.setdefault(w["run_id"], []).append(
                    {"row": w["row_no"], "column": w["column_name"], "message": w["message"]})
    out = []
    for r in runs:
        r["tags"] = tags.get(r["id"], {})
        r["attribution"] = json.loads(r["attribution"]) if r["attribution"] else {}
        r["captured_at"], r["ingested_at"] = timestamp(r["captured_at"]), timestamp(r["ingested_at"])
        r["trace_matches_eager"], r["export_exact"] = bool(r["trace_matches_eager"]), bool(r["export_exact"])
        r["freq_mhz"] = float(r["freq_mhz"])
        out.append(RunInfo(**r, warnings=warn.get(r["id"], []) if warnings else None))
    return out


@contextlib.contextmanager
def _connected(source: Any) -> Iterator[Any]:
    """A connection of ``source``: an engine's (opened and closed here), or the open connection given."""
    if hasattr(source, "connect"):
        with source.connect() as conn:
            yield conn
    else:
        yield source


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_names(label: str | None, tags: dict[str, str] | None) -> None:
    """A label, tag key or tag value is one line of printable text (a newline would break every table and
    comment that shows it)."""
    for what, v in [("--label", label)] + [(f"--tag {k}", k) for k in tags or {}] + \
            [(f"--tag {k}", v) for k, v in (tags or {}).items()]:
        if v is not None and _CONTROL.search(v):
            raise UsageError(f"{what}: {v!r} holds a control character (a newline, a tab...); use printable "
                             "text")


def retag(engine: Engine, ref: str, *, label: str | None = None, tags: dict[str, str] | None = None,
          untag: list[str] | None = None) -> dict[str, Any]:
    """Change a run's label (``''`` removes it) and tags; returns ``{"id", "label", "tags"}`` after."""
    from sqlalchemy import delete, select

    from warehouse.store import schema as t
    from warehouse.store.db import write_tx
    from warehouse.store.dialect import insert_ignore

    check_names(label, tags)
    with write_tx(engine) as conn:
        run_id = resolve_run(conn, ref)
        if label is not None:
            conn.execute(t.run.update().where(t.run.c.id == run_id).values(label=label or None))
        for k in untag or []:
            conn.execute(delete(t.run_tag).where(t.run_tag.c.run_id == run_id, t.run_tag.c.key == k))
        for k, v in (tags or {}).items():
            conn.execute(delete(t.run_tag).where(t.run_tag.c.run_id == run_id, t.run_tag.c.key == k))
            conn.execute(insert_ignore(conn, t.run_tag).values(run_id=run_id, key=k, value=v))
        new_label = conn.execute(select(t.run.c.label).where(t.run.c.id == run_id)).scalar()
        new_tags = dict(conn.execute(select(t.run_tag.c.key, t.run_tag.c.value)
                                     .where(t.run_tag.c.run_id == run_id).order_by(t.run_tag.c.key)).all())
    return {"id": run_id, "label": new_label, "tags": new_tags}
