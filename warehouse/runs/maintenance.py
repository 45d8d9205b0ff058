"""Keeping a warehouse healthy: verify it (``check``), delete runs (``rm``)."""
from __future__ import annotations

import json
import os
from collections.abc import Callable

from sqlalchemy import Engine, delete, func, select, text

from warehouse.store import dialect
from warehouse.store import schema as t
from warehouse.store.cells import survey_chunks
from warehouse.store.db import read_snapshot, write_tx
from warehouse.errors import NotFound, WarehouseError
from warehouse.runs.export import export_conn
from warehouse.analysis.report import check_parts
from warehouse.analysis.rollups import check_rollups
from warehouse.store import runseries


def check_warehouse(engine: Engine, progress: Callable[[int, int], None] | None = None) -> list[str]:
    """Every problem found: storage integrity, each run's counts against its stored rows, orphan rows, and each
    run's rollups and report parts against its ops. ``progress(done, total)`` follows that last part, which
    takes most of the time (about 0.6 s per 100,000 ops of a run), and each run's export, hashed against the
    original file's sha256. Everything is read in one snapshot, so a run deleted meanwhile is not damage."""
    problems: list[str] = []
    with read_snapshot(engine) as conn:
        problems += dialect.storage_problems(conn)
        chunks = survey_chunks(conn)  # one read of every chunk: counts, cell tuples named, damage
        counts: dict[str, dict[int, int]] = {
            "op": dict(conn.execute(select(t.op.c.run_id, func.count()).group_by(t.op.c.run_id)).all()),
            "signpost": dict(conn.execute(select(t.signpost.c.run_id, func.count())
                                          .group_by(t.signpost.c.run_id)).all()),
            "cell": chunks.rows,
        }
        runs = conn.execute(select(t.run.c.id, t.run.c.op_count, t.run.c.signpost_count, t.run.c.row_count)).all()
        known = set()
        for rid, ops, sps, rows in runs:
            known.add(rid)
            for table, want in (("op", ops), ("signpost", sps), ("cell", rows)):
                got = counts[table].get(rid, 0)
                if got != want:
                    problems.append(f"run {rid}: {got} {table} rows stored, the run says {want}")
        for table, per_run in counts.items():
            for rid in set(per_run) - known:
                problems.append(f"{table}: {per_run[rid]} rows of run {rid}, which does not exist")
        orphans = {
            "op rows whose section is missing": "SELECT COUNT(*) FROM op o WHERE o.section_id IS NOT NULL AND "
                                                "NOT EXISTS (SELECT 1 FROM section s WHERE s.id = o.section_id)",
            "op rows whose op code is missing": "SELECT COUNT(*) FROM op o WHERE NOT EXISTS "
                                                "(SELECT 1 FROM op_code c WHERE c.id = o.op_code_id)",
            "sections of missing runs": "SELECT COUNT(*) FROM section s WHERE NOT EXISTS "
                                        "(SELECT 1 FROM run r WHERE r.id = s.run_id)",
            "tags of missing runs": "SELECT COUNT(*) FROM run_tag g WHERE NOT EXISTS "
                                    "(SELECT 1 FROM run r WHERE r.id = g.run_id)",
        }
        for what, sql in orphans.items():
            n = conn.execute(text(sql)).scalar()
            if n:
                problems.append(f"{n} {what}")
        gone = chunks.static_ids - set(conn.execute(select(t.cell_tuple.c.id)).scalars())
        if gone:
            problems.append(f"{len(gone)} cell tuples that stored rows name are missing")
        texts = set(conn.execute(select(t.text_value.c.id)).scalars())
        missing = 0
        for (cells,) in conn.execute(select(t.cell_tuple.c.cells)):
            missing += sum(1 for v in json.loads(cells) if isinstance(v, int) and v not in texts)
        if missing:
            problems.append(f"{missing} interned strings missing from text_value")
        problems += chunks.problems
        total, done = 3 * len(runs), 0

        def step() -> None:
            nonlocal done
            done += 1
            if progress:
                progress(done, total)
        problems += check_rollups(conn, step)
        problems += runseries.check(conn)
        problems += check_parts(conn, step)
        with open(os.devnull, "wb") as discard:  # the export is only hashed
            for rid, *_ in runs:
                try:
                    export_conn(conn, rid, discard)
                except WarehouseError as e:
                    problems.append(f"export: {e}")
                step()
    return problems


def rebuild_series(engine: Engine) -> int:
    """Build every run's ``run_series`` rows again from its ``rollup_row`` rows, in one transaction; how many
    runs."""
    with write_tx(engine) as conn:
        ids = list(conn.execute(select(t.run.c.id).order_by(t.run.c.id)).scalars())
        for run_id in ids:
            runseries.build(conn, run_id)
    return len(ids)


def remove_runs(engine: Engine, run_ids: list[int]) -> int:
    """Delete runs and everything that belongs to them, in one transaction; returns how many were deleted.
    Interned cells and op codes stay: other runs may share them."""
    with write_tx(engine) as conn:
        present = set(conn.execute(select(t.run.c.id).where(t.run.c.id.in_(run_ids))).scalars())
        missing = [r for r in run_ids if r not in present]
        if missing:
            raise NotFound(f"no run {', '.join(map(str, missing))}; `warehouse runs` lists them")
        # Children first: no reliance on ON DELETE CASCADE being enabled on the connection.
        for table in (t.run_series, t.rollup_row, t.run_report, t.cell_chunk, t.op, t.signpost, t.section, t.run_tag,
                      t.run_warning, t.triage):
            conn.execute(delete(table).where(table.c.run_id.in_(run_ids)))
        conn.execute(delete(t.run).where(t.run.c.id.in_(run_ids)))
    return len(run_ids)
