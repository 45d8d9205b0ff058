"""History's attribution written to the op rows: the corrections :class:`warehouse.capture.alignment.HistoryTracker`
makes once a file is read, and the run's count of ops per way of attribution (``warehouse runs`` shows it)."""
from __future__ import annotations

import json

from sqlalchemy import Connection, text

from warehouse.capture.alignment import ALIGNED, POSITION, SIGNPOST, UNMATCHED, Attributed
from warehouse.registry.codes import HIST_HOW, code
from warehouse.store import dialect


Written = tuple[int, int | None, int | None, int | None]  # (row, place id, iteration, position in it)


def apply(conn: Connection, run_id: int, fixes: list[tuple[int, Attributed]]) -> list[Written]:
    """Write corrections from :meth:`HistoryTracker.finish` (their places interned: they come after the file's
    last row). Returns what was written, per corrected op."""
    if not fixes:
        return []
    written = [(row, a.place or None, a.iteration, a.iter_pos) for row, a in fixes]
    dialect.bulk_update(conn, "op", {"run_id": run_id}, [("row_no", "bigint")],
                        [("hist_place_id", "bigint"), ("hist_how", "smallint"), ("iteration", "integer"),
                         ("iter_pos", "integer")],
                        [(row, p, code(HIST_HOW, a.how), i, ip) for (row, p, i, ip), (_, a) in zip(written, fixes)])
    return written


def summarize(conn: Connection, run_id: int, as_text: bool = False) -> None:
    """Record on the run how many ops each attribution gave (``warehouse runs`` shows it); ``as_text``: the
    schema before revision 0015 kept ``hist_how`` as text (the migrations before it call this)."""
    # One aggregate pass with a sum per kind, not a GROUP BY: SQLite would sort a million ops in memory for it
    # (its sorter takes up to the page cache's size, 30 MB of an ingest's peak).
    kinds = [SIGNPOST, POSITION, ALIGNED, UNMATCHED]
    stored = {k: f"'{k}'" if as_text else str(HIST_HOW[k]) for k in kinds}
    sums = ", ".join([f"SUM(CASE WHEN hist_how = {stored[k]} THEN 1 ELSE 0 END)" for k in kinds]
                     + ["SUM(CASE WHEN hist_how IS NULL THEN 1 ELSE 0 END)"])
    row = conn.execute(text(f"SELECT {sums} FROM op WHERE run_id = :r"), {"r": run_id}).one()
    counts = {k: int(n) for k, n in zip([*kinds, "none"], row) if n}
    conn.execute(text("UPDATE run SET attribution = :a WHERE id = :r"),
                 {"a": json.dumps(dict(sorted(counts.items()))), "r": run_id})
