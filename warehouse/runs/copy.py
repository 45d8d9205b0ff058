"""Copy runs between warehouses (a local SQLite file into the team's PostgreSQL, say): lossless, idempotent.

Each run travels as what it is, its CSV: exported from the source, ingested into the destination with the
source's hash, paths, capture and ingest times, frequency, label, tags and warnings. A run whose hash the
destination already holds is skipped, so copying again copies nothing.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable

from sqlalchemy import Engine, select

from warehouse.store import schema as t
from warehouse.errors import WarehouseError
from warehouse.store.db import read_snapshot
from warehouse.runs.export import export_conn
from warehouse.runs.ingest import ingest_file
from warehouse.store.listing import resolve_run

# Run columns kept as they are in the source (the rest is recomputed by ingest and must come out equal).
KEPT = ("sha256", "source_path", "file_name", "size_bytes", "captured_at", "ingested_at", "freq_mhz", "freq_source",
        "arch", "newline", "final_newline", "bom", "export_exact", "seconds")


@dataclass
class Copied:
    """One run's fate: copied as ``dst_id``, already there as ``dst_id``, or not copied (``error``)."""

    src_id: int
    dst_id: int | None
    existing: bool
    ops: int
    error: str | None = None  # why this run was not copied (the others still are)


def copy_runs(src: Engine, dst: Engine, refs: list[str] | None = None,
              progress: Callable[[Copied], None] | None = None) -> list[Copied]:
    """Copy the runs ``refs`` (ids or 'latest'; all when empty) from ``src`` to ``dst``."""
    with src.connect() as conn:
        ids = ([resolve_run(conn, r) for r in refs] if refs else
               list(conn.execute(select(t.run.c.id).order_by(t.run.c.id)).scalars()))
    out = []

    def done(c: Copied) -> None:
        out.append(c)
        if progress:
            progress(c)

    with tempfile.TemporaryDirectory(prefix="warehouse-copy-") as tmp:
        # A fixed name inside our own temporary folder: never a path built from stored data (a file_name could
        # be absolute or hold '..'). The run keeps its file name through ``meta``.
        path = Path(tmp) / "run.csv"
        for run_id in ids:
            try:
                # the run, its tags, warnings and rows from one snapshot, checked against its row count and hash
                with read_snapshot(src) as conn:
                    run = conn.execute(select(t.run).where(t.run.c.id == run_id)).mappings().first()
                    if run is None:
                        done(Copied(run_id, None, False, 0, error=f"run {run_id} was deleted from the source"))
                        continue
                    with dst.connect() as dconn:
                        there = dconn.execute(select(t.run.c.id).where(t.run.c.sha256 == run["sha256"])).scalar()
                    if there is not None:
                        done(Copied(run_id, there, True, run["op_count"]))
                        continue
                    tags = dict(conn.execute(select(t.run_tag.c.key, t.run_tag.c.value)
                                             .where(t.run_tag.c.run_id == run_id)).all())
                    warnings = [tuple(w) for w in conn.execute(
                        select(t.run_warning.c.row_no, t.run_warning.c.column_name, t.run_warning.c.message)
                        .where(t.run_warning.c.run_id == run_id).order_by(t.run_warning.c.id)).all()]
                    with open(path, "wb") as f:
                        export_conn(conn, run_id, f)
                meta = {k: run[k] for k in KEPT}
                meta["warnings"] = warnings
                r = ingest_file(dst, path, label=run["label"], tags=tags, freq_mhz=run["freq_mhz"], meta=meta)
            except WarehouseError as e:
                done(Copied(run_id, None, False, 0, error=str(e).replace(str(path), f"run {run_id}")))
                continue
            finally:
                path.unlink(missing_ok=True)
            done(Copied(run_id, r.run_id, r.existing, r.ops))
    return out
