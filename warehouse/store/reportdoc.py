"""A stored run's OPT_BASELINE report document: the run's own facts and the parts stored at ingest. Plain SQL,
no SQLAlchemy (:mod:`warehouse.store.lite`): ``warehouse report`` reads a few rows and prints, and on the light path
that is all it pays for."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from warehouse.errors import NotFound
from warehouse.store.lite import fetch
from warehouse.capture.packing import unpack_text


def report_doc(conn: Any, run_id: int,
               compute: Callable[[Any, int, float], dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """The report of run ``run_id`` on ``conn`` (a SQLAlchemy connection or one of the light path). A run without
    stored parts gets them from ``compute(conn, run_id, freq_mhz)`` (from its ops), or None without it."""
    runs = fetch(conn, "SELECT source_path, columns, freq_mhz, trace_matches_eager FROM run WHERE id = :r",
                 {"r": run_id})
    if not runs:
        raise NotFound(f"no run {run_id}; `warehouse runs` lists them")
    run = runs[0]
    freq = float(run["freq_mhz"])
    stored = fetch(conn, "SELECT doc, raw_size FROM run_report WHERE run_id = :r", {"r": run_id})
    if stored:
        parts = json.loads(unpack_text(bytes(stored[0]["doc"]), stored[0]["raw_size"]))
    elif compute is not None:
        parts = compute(conn, run_id, freq)
    else:
        return None
    res: dict[str, Any] = {
        "csv": run["source_path"], "columns": json.loads(run["columns"]), "freq_mhz": freq,
        "trace_matches_eager_op_sequence": bool(run["trace_matches_eager"]),
    }
    res.update(parts)
    return res
