"""The upkeep results as the CLI prints them: the runs table, one line per ingested file, triage decisions and
the schema."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from warehouse.render import rows as rowfmt

if TYPE_CHECKING:
    from warehouse.api import IngestOutcome
    from warehouse.store.listing import RunInfo
    from warehouse.history.triage import Decision

RUN_COLUMNS = ["id", "captured", "label", "tags", "file", "ops", "history attribution"]
DECISION_COLUMNS = ["id", "run", "status", "kind", "by", "key", "who", "when", "note"]


def runs(rows: list[RunInfo], fmt: str = "table", warnings: bool = False) -> str:
    """:meth:`warehouse.Warehouse.runs` as JSON or a table (with a line per recorded warning after it)."""
    if fmt == "json":
        return rowfmt.to_json([r.to_json() for r in rows])
    data = [[r.id, r.captured_at or "", r.label or "", " ".join(f"{k}={v}" for k, v in r.tags.items()),
             r.file_name, r.op_count, " ".join(f"{k} {v}" for k, v in r.attribution.items())] for r in rows]
    out = [rowfmt.table(RUN_COLUMNS, data)]
    if warnings:
        for r in rows:
            for w in r.warnings or []:
                where = f"row {w['row']}: " if w["row"] is not None else ""
                out.append(f"run {r.id}: {where}{w['message']}")
    return "\n".join(out)


def ingest_line(o: IngestOutcome, shown: str, label: str | None) -> str:
    """One stored file: its run and counts, or the run that already holds its bytes (and, when another label
    was asked for, the label it keeps and the command that changes it)."""
    if o.existing:
        kept = ""
        if o.kept_label is not None:
            kept = (f" (it keeps its label {o.kept_label!r}; `warehouse tag {o.run_id} --label {label}` changes it)"
                    if o.kept_label else f" (it has no label; `warehouse tag {o.run_id} --label {label}` sets it)")
        rank = f"; rank {o.rank} of the multi-host capture {o.host}" if o.rank is not None else ""
        return f"{shown}: already ingested as run {o.run_id}{kept}{rank}"
    warn = f", {len(o.warnings)} warning(s)" if o.warnings else ""
    rank = f"; rank {o.rank} of the multi-host capture {o.host}" if o.rank is not None else ""
    return (f"{shown}: run {o.run_id}: {o.ops} ops, {o.sections} sections, {o.signposts} signposts, "
            f"{o.seconds:.2f} s{warn}{rank}")


def decisions(ds: list[Decision], fmt: str = "table") -> str:
    """Triage decisions as JSON or a table."""
    if fmt == "json":
        return rowfmt.to_json([d.to_json() for d in ds])
    return rowfmt.table(DECISION_COLUMNS, [[d.id, d.run_id, d.status, d.kind, d.by, d.key, d.who, d.decided_at,
                                            d.note] for d in ds])


def decision(d: Decision, fmt: str = "table") -> str:
    """One recorded decision: JSON, or ``c-...: acknowledged: block B (first night: run 12)``."""
    if fmt == "json":
        return rowfmt.to_json(d.to_json())
    what = f"run {d.run_id}" if d.kind == "run" else f"{d.kind} {d.by} {d.key} (first night: run {d.run_id})"
    return f"{d.id}: {d.status}: {what}"


def schema(objs: list[dict[str, Any]], fmt: str = "text") -> str:
    """:meth:`warehouse.Warehouse.schema` as JSON or text (an object a line, its columns indented)."""
    if fmt == "json":
        return rowfmt.to_json(objs)
    out = []
    for o in objs:
        doc = f"  -- {o['doc']}" if o["doc"] else ""
        out.append(f"{o['type']} {o['name']}{doc}")
        out += [f"    {c['name']} {c['type']}" for c in o["columns"]]
    return "\n".join(out)
