"""The rollups ingest writes on SQLite come from numpy (warehouse.rollupcalc), not from the rollups' SQL
(warehouse.rollups.build_sql), which stays their definition: the two give the same rows, value for value."""
from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from sqlalchemy import text

from corpus import DATA, cases
from warehouse import measures
from warehouse.db import open_db
from warehouse.ingest import ingest_file
from warehouse.rollupcalc import compute
from warehouse.rollups import _SQL, _stored_columns

# every capture the project keeps: the corpus cases, and the extra ones (8 devices, 2 devices, a broken trace)
CAPTURES = [*cases().values(), *sorted((DATA / "ttperf_extra").glob("*.csv"))]
_STORED = ", ".join(f"r.{c}" for c in ["iterations", "ops", *_stored_columns()])


def _odd_capture(folder) -> Path:
    """The replayed capture with what the corpus lacks: a gap on the first op of every section and replay (the
    rollups count it as 0), FW cycles of 0 and below (not a start or an end), empty kernel times, a second
    device and a negative one, and fractional durations."""
    src = cases()["clip_replays3"]
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    col = {name: head.index(name) for name in ("OP TYPE", "OP TO OP LATENCY [ns]", "DEVICE FW START CYCLE",
                                               "DEVICE FW END CYCLE", "DEVICE ID", "DEVICE KERNEL DURATION [ns]")}
    for i, row in enumerate(rows[1:]):
        if row[col["OP TYPE"]] == "signpost":
            continue
        row[col["OP TO OP LATENCY [ns]"]] = str(100 + i)
        if i % 7 == 3:
            row[col["DEVICE FW START CYCLE"]] = "0"
        if i % 11 == 5:
            row[col["DEVICE FW END CYCLE"]] = "-5"
        if i % 5 == 1:
            row[col["DEVICE ID"]] = "1"
        elif i % 19 == 6:  # (no device: in the all-devices rows only)
            row[col["DEVICE ID"]] = "-1"
        if i % 13 == 2:
            row[col["DEVICE KERNEL DURATION [ns]"]] = ""
        if i % 17 == 4:
            row[col["DEVICE KERNEL DURATION [ns]"]] = "1234.5"
    out = folder / "odd" / "ops_perf_results_2026_01_01_00_00_00.csv"
    out.parent.mkdir()
    with open(out, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    return out


@pytest.fixture(scope="module")
def warehouse_of_everything(tmp_path_factory):
    folder = tmp_path_factory.mktemp("all")
    eng = open_db(str(folder / "w.db"))
    ingest_file(eng, _odd_capture(folder))
    for src in CAPTURES:
        dst = folder / src.parent.name / src.name
        dst.parent.mkdir(exist_ok=True)
        shutil.copyfile(src, dst)
        log = src.parent / "profile_log_device.csv"
        if log.exists():
            shutil.copyfile(log, dst.parent / log.name)
        ingest_file(eng, dst)
    yield eng
    eng.dispose()


def _sql_rows(c, run_id: int, freq: float) -> dict[tuple, tuple]:
    return {tuple(r[1:5]): tuple(r[5:]) for r in c.execute(text(_SQL), {"run": run_id, "freq": freq})}


def test_numpy_rollups_equal_the_sql_on_every_capture(warehouse_of_everything):
    """Every run's rows, from numpy and from the SQL, are the same keys with the same values to the bit
    (whole-ns sums are exact in any order); what ingest stored is numpy's. The captures hold what the rollups
    distinguish: trace replays (iterations and their spread), several devices, custom sections, ops outside
    any section, ops without cycles."""
    seen = {"iterations": False, "devices": False, "custom": False}
    with warehouse_of_everything.connect() as c:
        runs = c.execute(text("SELECT id, freq_mhz FROM run ORDER BY id")).all()
        assert len(runs) == len(CAPTURES) + 1
        for run_id, freq in runs:
            ref = _sql_rows(c, run_id, float(freq))
            mine = {tuple(r[1:5]): tuple(r[5:]) for r in compute(c, run_id, float(freq))}
            assert ref.keys() == mine.keys(), run_id
            bad = [k for k in ref if repr(tuple(map(_num, ref[k]))) != repr(tuple(map(_num, mine[k])))]
            assert not bad, (run_id, bad[:3], [(ref[k], mine[k]) for k in bad[:3]])
            stored = {tuple(r[:4]): tuple(r[4:]) for r in c.execute(text(
                f"SELECT r.section, k.grouping, k.key, r.device, {_STORED} FROM rollup_row r "
                "JOIN rollup_key k ON k.id = r.key_id WHERE r.run_id = :r"), {"r": run_id})}
            assert stored.keys() == mine.keys()
            assert all(tuple(map(_num, stored[k])) == tuple(map(_num, mine[k])) for k in mine)
            seen["iterations"] |= any(v[0] > 1 for v in mine.values())
            seen["devices"] |= any(k[3] >= 0 for k in mine)
        seen["custom"] = bool(c.execute(text("SELECT COUNT(*) FROM section WHERE kind = 'custom'")).scalar())
    assert all(seen.values()), seen


def _num(v):
    """A value as the REAL column keeps it (1 and 1.0 are one value)."""
    return None if v is None else float(v)


def test_the_registry_declares_each_metric_once_for_both_engines():
    """A metric's SQL (``expr``) and its numpy aggregation (``agg``, ``of``) say the same thing."""
    for m in measures.METRICS:
        assert m.agg in ("sum", "span"), m.key
        if m.agg == "sum":
            assert m.expr == f"SUM({m.of})", m.key
        else:
            assert m.expr == "(MAX(last_cycle) - MIN(first_cycle)) / MAX(freq_mhz)", m.key


def test_a_run_without_ops_has_no_rollups(tmp_path):
    eng = open_db(str(tmp_path / "w.db"))
    try:
        with eng.begin() as c:
            assert compute(c, 12345, 1000.0) == []
    finally:
        eng.dispose()


def test_a_run_past_the_limit_gets_its_rollups_from_the_sql(tmp_path, monkeypatch, corpus_copy):
    """Past NUMPY_MAX_OPS (arrays of ~100 bytes an op) the SQL computes the rows, its sorts bounded in memory:
    the same rows."""
    from warehouse import rollupcalc, rollups

    path = corpus_copy("clip_replays3")
    eng = open_db(str(tmp_path / "w.db"))
    try:
        run = ingest_file(eng, path).run_id
        with eng.connect() as c:
            first = sorted(map(repr, c.execute(text("SELECT * FROM rollup_row WHERE run_id = :r"), {"r": run})))
        monkeypatch.setattr(rollups, "NUMPY_MAX_OPS", 10)
        monkeypatch.setattr(rollupcalc, "compute", lambda *a: pytest.fail("numpy used past the limit"))
        with eng.begin() as c:
            rollups.build_rollups(c, run, float(c.execute(text("SELECT freq_mhz FROM run")).scalar_one()))
            again = sorted(map(repr, c.execute(text("SELECT * FROM rollup_row WHERE run_id = :r"), {"r": run})))
        assert again == first and len(first) > 100
    finally:
        eng.dispose()
