"""Folder ingest on several cores (`warehouse ingest --jobs N`, warehouse/runs/folder.py) stores exactly what a
sequential ingest stores: every table, compared through natural keys (ids differ only where interned rows were
already there), run ids in file order, the same errors and duplicates."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from sqlalchemy import text

from conftest import BACKENDS, _new_url, make_invoke
from corpus import DATA
from warehouse.store import schema as t
from warehouse.store.db import open_db
from warehouse.runs.folder import AUTO_MIN_BYTES, MERGED_TABLES, auto_jobs

pytestmark = pytest.mark.slow  # (the slow tier: folders on every core)

FILES = [DATA / "real" / n for n in ("ttperfreport__bh20_oft.csv",
                                      "ttperfreport__ops_perf_results_2025_09_18_11_39_20.csv",
                                      "ttnnvis__ops_perf_results_SEG_ENCODER_2024_10_04_01_36_08.csv")]
FILES += sorted((DATA / "ttperf_extra").glob("*.csv"))  # 8 devices, an older era on 2, a decode window
# blocks and layers: two captures with different (block, layer) pairs, so that a scratch warehouse's place ids
# differ from the warehouse's and the merge must map them
FILES += [next((DATA / "seedfmt" / c).glob("*.csv")) for c in ("dlv3_same", "segenc_notrace")]


def _folder(tmp: Path) -> Path:
    """Real captures (sections, custom pairs, 8 devices, a decode window, blocks and layers), one of them twice,
    and a bad file."""
    d = tmp / "nightly"
    d.mkdir()
    for i, src in enumerate(FILES):
        shutil.copyfile(src, d / f"ops_perf_results_{i}.csv")
    (d / "ops_perf_results_8_bad.csv").write_bytes(b"\x00\x01 not a profile\n")
    shutil.copyfile(FILES[0], d / "ops_perf_results_9_again.csv")
    return d


# Every stored row through natural keys: what a user's query or the export can see.
DUMP = {
    "run": "SELECT sha256, file_name, row_count, op_count, signpost_count, columns, static_columns, name_column, "
           "newline, final_newline, bom, export_exact, captured_at, freq_mhz, freq_source, arch, label, "
           "trace_matches_eager, attribution, perf_arch FROM run ORDER BY id",
    "op": "SELECT r.sha256, o.row_no, s.name, s.kind, s.ordinal, o.pos, pl.block, pl.layer, o.attribution, "
          "o.occurrence, o.marker_row, c.name, o.device_id, o.global_call_count, o.kernel_ns, o.fw_ns, o.op2op_ns, "
          "o.fw_start_cycle, o.fw_end_cycle, o.host_start_ns, o.host_end_ns, o.cores, o.trace_id, "
          "o.replay_session, hp.block, hp.layer, o.hist_how, o.iteration, o.iter_pos, ps.digest "
          "FROM op o JOIN run r ON r.id = o.run_id JOIN op_code c ON c.id = o.op_code_id "
          "LEFT JOIN section s ON s.id = o.section_id LEFT JOIN perf_shape ps ON ps.id = o.perf_shape_id "
          "LEFT JOIN place pl ON pl.id = o.place_id LEFT JOIN place hp ON hp.id = o.hist_place_id "
          "ORDER BY r.id, o.row_no",
    "cells": "SELECT r.sha256, x.row_no, x.column_name, x.value FROM csv_cell x JOIN run r ON r.id = x.run_id "
             "ORDER BY r.id, x.row_no, x.position",
    "signpost": "SELECT r.sha256, s.row_no, s.name, s.message, s.host_ts, s.kind FROM signpost s "
                "JOIN run r ON r.id = s.run_id ORDER BY r.id, s.row_no",
    "section": "SELECT r.sha256, s.name, s.kind, s.ordinal, s.start_row, s.end_row FROM section s "
               "JOIN run r ON r.id = s.run_id ORDER BY r.id, s.ordinal, s.kind, s.name",
    "warning": "SELECT r.sha256, w.row_no, w.column_name, w.message FROM run_warning w JOIN run r ON r.id = w.run_id "
               "ORDER BY r.id, w.id",
    "column": "SELECT r.sha256, c.position, c.name, c.kind, c.slot FROM run_column c JOIN run r ON r.id = c.run_id "
              "ORDER BY r.id, c.position",
    "tag": "SELECT r.sha256, g.key, g.value FROM run_tag g JOIN run r ON r.id = g.run_id ORDER BY r.id, g.key",
    "rollup": "SELECT r.sha256, x.section, x.grouping, x.key, x.device, x.iterations, x.ops, x.kernel_us, "
              "x.op2op_us, x.fw_us, x.span_us FROM rollup x JOIN run r ON r.id = x.run_id "
              "ORDER BY r.id, x.section, x.grouping, x.key, x.device",
    "report": "SELECT r.sha256, x.doc FROM run_report x JOIN run r ON r.id = x.run_id ORDER BY r.id",
    "shape": "SELECT p.digest, p.label, p.flop_count, p.dram_bytes, t.io, t.idx, t.w, t.x_pad, t.memory "
             "FROM perf_shape p LEFT JOIN perf_tensor t ON t.perf_shape_id = p.id ORDER BY p.digest, t.io, t.idx",
}


def _dump(url: str) -> dict[str, list[tuple]]:
    engine = open_db(url, create=False)
    try:
        with engine.connect() as conn:
            return {k: [tuple(r) for r in conn.execute(text(q))] for k, q in DUMP.items()}
    finally:
        engine.dispose()


@pytest.fixture(scope="module", params=BACKENDS)
def two(request, tmp_path_factory):
    """The same folder ingested with 2 worker processes and sequentially, into two fresh warehouses."""
    tmp = tmp_path_factory.mktemp("par")
    folder = _folder(tmp)
    gens = [_new_url(request.param, tmp / "a"), _new_url(request.param, tmp / "b")]
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    urls = [next(g) for g in gens]
    runs = [make_invoke(u)("ingest", folder, "--label", "nightly", "--tag", "commit=abc", "--jobs", j)
            for u, j in zip(urls, ("2", "1"))]
    yield urls, runs, request.param
    for g in gens:
        for _ in g:
            pass


def test_parallel_stores_what_sequential_stores(two):
    (par, seq), _, backend = two
    a, b = _dump(par), _dump(seq)
    if backend == "postgresql":  # workers commit straight into PostgreSQL, in the order they finish
        a, b = ({k: sorted(v, key=repr) for k, v in d.items()} for d in (a, b))
    assert len(a["run"]) == len(FILES) and a["op"] and a["cells"] and a["rollup"] and a["report"]
    for table in DUMP:
        if table == "rollup":  # PostgreSQL adds a rollup's floats in any order: equal to the last bits
            assert [r[:7] for r in a[table]] == [r[:7] for r in b[table]]
            assert all(x == pytest.approx(y, rel=1e-12) for ra, rb in zip(a[table], b[table])
                       for x, y in zip(ra[7:], rb[7:]) if x is not None or y is not None)
            continue
        assert a[table] == b[table], table


def test_parallel_output_errors_and_duplicates(two):
    _, (p, s), backend = two
    assert p.exit_code == s.exit_code == 1  # the bad file
    assert "ops_perf_results_8_bad.csv" in p.output and p.output.count("Error:") == 1
    assert "ops_perf_results_9_again.csv: already ingested as run " in p.output
    assert f"1 of {len(FILES) + 2} path(s) failed" in p.output
    # the same lines, in the same (file) order, but for the seconds each file took
    def lines(out: str) -> list[str]:
        got = [x.split(" ops,")[0] if ": run " in x else x for x in out.splitlines()]
        if backend == "postgresql":  # run ids in the order the workers commit
            got = [re.sub(r"run \d+", "run N", x) for x in got]
        return got
    assert lines(p.output) == lines(s.output)


def test_every_table_is_merged():
    assert set(t.metadata.tables) == MERGED_TABLES


def test_auto_jobs():
    assert auto_jobs([AUTO_MIN_BYTES]) == 1  # one file
    assert auto_jobs([10, 10]) == 1  # too little work to pay for worker start-up
    assert auto_jobs([AUTO_MIN_BYTES, 1]) >= 1


def test_api_jobs(tmp_path):
    from warehouse.api import Warehouse

    folder = _folder(tmp_path)
    res = Warehouse(str(tmp_path / "api.db")).ingest(folder, jobs=2)
    n = len(FILES)
    assert [r.run_id for r in res] == [*range(1, n + 1), None, 1]  # file order; the bad file; the copy
    assert res[n].error and res[n + 1].existing


def test_a_merge_that_fails_is_that_file_only(tmp_path, monkeypatch):
    """A database error while a run moves in (locked past the busy timeout, disk full) is one file's error."""
    import sqlite3

    from sqlalchemy.exc import OperationalError

    import warehouse.runs.folder as par
    from warehouse.api import Warehouse

    real = par.merge_run
    calls = []

    def flaky(engine, src, result):
        calls.append(result.path)
        if len(calls) == 2:
            raise OperationalError("INSERT", None, sqlite3.OperationalError("database is locked"))
        return real(engine, src, result)

    monkeypatch.setattr(par, "merge_run", flaky)
    folder = _folder(tmp_path)
    res = Warehouse(str(tmp_path / "w.db")).ingest(folder, jobs=2)
    errors = [r.error for r in res if r.error]
    assert len(errors) == 2 and "locked" in errors[0] and "ops_perf_results_1.csv" in errors[0]
    assert [r.run_id for r in res if r.run_id][:2] == [1, 2]  # the next file takes the next id
