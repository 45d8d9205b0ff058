"""Rows derived from a run's ops (rollups and their history series, stored report parts): written at ingest, and
built for runs stored before they existed when ``warehouse db upgrade`` reaches head (migrations/env.py), by the
head's code."""
from __future__ import annotations

from sqlalchemy import Connection, text

from warehouse.analysis.report import backfill_parts
from warehouse.analysis.rollups import build_rollups
from warehouse.store import runseries


def backfill(conn: Connection) -> None:
    """Rollups, history series and report parts for every run that lacks them."""
    for run_id, freq in conn.execute(text("SELECT id, freq_mhz FROM run WHERE id NOT IN "
                                          "(SELECT DISTINCT run_id FROM rollup_row) ORDER BY id")).all():
        build_rollups(conn, run_id, freq)
    for run_id in runseries.missing(conn):
        runseries.build(conn, run_id)
    backfill_parts(conn)
