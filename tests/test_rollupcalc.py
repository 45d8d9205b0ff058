"""The stored rollups that ingest computes with numpy (warehouse.analysis.rollupcalc) equal the rollups' SQL definition
(warehouse.analysis.rollups.build_sql) row for row, on every corpus capture (sections, replays, custom sections, several
devices, a device -1) and on both back ends; a grouping or metric numpy does not mirror falls back to the SQL."""
from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest
from sqlalchemy import text

from csvedit import read_lists
from conftest import BACKENDS, _new_url, make_invoke
from corpus import DATA, cases
from warehouse.capture import plan as budgets
from warehouse.registry import measures
from warehouse.analysis import rollupcalc, rollups
from warehouse.store.db import open_db


def _device_variant(folder: Path) -> Path:
    """dlv3_same with its ops on DEVICE ID 0 and 1 in turn, and a few on -1 (no device of its own); every op an
    op-to-op gap of its own (a section's and an iteration's first op too, whose gap the rollups leave out)."""
    src = cases()["dlv3_same"]
    rows = read_lists(src, encoding="utf-8-sig")
    dev, gap = rows[0].index("DEVICE ID"), rows[0].index("OP TO OP LATENCY [ns]")
    out = folder / "devices" / "ops_perf_results_2026_11_05_02_00_00.csv"
    out.parent.mkdir(parents=True)
    with out.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(rows[0])
        for k, r in enumerate(rows[1:]):
            if r[dev] != "":
                r = r[:dev] + [str(-1 if k % 17 == 0 else k % 2)] + r[dev + 1:]
                r[gap] = str(1000 + k)
            w.writerow(r)
    return out


@pytest.fixture(scope="module", params=BACKENDS)
def corpus_db(request, tmp_path_factory):
    """A warehouse holding every corpus capture, the extra real ones and a three-device variant."""
    folder = tmp_path_factory.mktemp("rollupcalc")
    urls = _new_url(request.param, folder)
    url = next(urls)
    files = [*cases().values(), *sorted((DATA / "ttperf_extra").glob("*.csv")), _device_variant(folder)]
    r = make_invoke(url)("ingest", *files)
    assert r.exit_code == 0, r.output
    eng = open_db(url, create=False)
    yield eng, request.param
    eng.dispose()
    urls.close()


def _sql_rows(conn, run_id: int, freq: float) -> dict[tuple, tuple]:
    return {tuple(r[:5]): tuple(r[5:]) for r in conn.execute(text(rollups._SQL), {"run": run_id, "freq": freq})}


def _numpy_rows(conn, run_id: int, freq: float) -> dict[tuple, tuple]:
    batches = rollupcalc.run_rows(conn, run_id, freq, rollups._BY_ID_SQL)
    assert batches is not None, "every stored grouping and metric is mirrored"
    rows = [row for batch in batches for row in batch]
    out = {tuple(r[:5]): tuple(r[5:]) for r in rows}
    assert len(out) == len(rows), "one row per run, section, grouping, key and device"
    return out


def test_numpy_rows_are_the_sql_rows(corpus_db):
    """Every row, every value: exactly on SQLite; on PostgreSQL, whose numeric division rounds once more,
    within a part in 1e12."""
    eng, backend = corpus_db
    kinds = set()
    with eng.connect() as c:
        runs = c.execute(text("SELECT id, freq_mhz FROM run ORDER BY id")).all()
        assert len(runs) == len(cases()) + 4
        for run_id, freq in runs:
            want, got = _sql_rows(c, run_id, float(freq)), _numpy_rows(c, run_id, float(freq))
            assert want.keys() == got.keys(), run_id
            for k, w in want.items():
                g = got[k]
                if backend == "sqlite":
                    assert g == w, (run_id, k)
                else:
                    assert g[:1] == w[:1] and all(
                        (a is None and b is None) or (a is not None and b is not None
                                                      and abs(a - float(b)) <= 1e-12 * max(1.0, abs(float(b))))
                        for a, b in zip(g[1:], w[1:])), (run_id, k, g, w)
            kinds |= {("device" if k[4] != -1 else "all", "replays" if w[0] > 1 else "one") for k, w in want.items()}
            kinds |= {("custom", "") for k in want if k[1] not in ("", "eager", "trace")}
    # (what the corpus exercises: per-device rows, sections replayed several times, custom sections)
    assert {("device", "one"), ("all", "replays"), ("custom", "")} <= kinds


def test_ingest_stores_the_sql_rows(corpus_db):
    """What ingest stored (through rollupcalc) is what `check` recomputes with the SQL."""
    eng, _ = corpus_db
    with eng.connect() as c:
        assert rollups.check_rollups(c) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_rows_made_with_the_keys_ingest_interned(backend, tmp_path, monkeypatch):
    """Ingest interns a run's rollup keys as it writes its ops, and its rollup rows are made ready to insert with
    their keys' ids; keys it did not know (history's late corrections bring some; here the layers' are forgotten
    too) are found at the end. The stored rows are the SQL's on every corpus capture, on both back ends."""
    real_add, real_key_ids, real_build = rollups.KnownKeys.add, rollups._key_ids, rollups.build_rollups
    late: list[int] = []  # keys found at the end, by the run's rollups
    building = []

    def add(self, conn, combos, ops):
        real_add(self, conn, combos, ops)
        for k in [k for k in self.ids if k[0] == "layer"]:
            del self.ids[k]

    def key_ids(conn, keys, ids):
        if building and keys:
            late.append(len(keys))
        return real_key_ids(conn, keys, ids)

    def build(*a, **k):
        building.append(1)
        try:
            return real_build(*a, **k)
        finally:
            building.clear()
    monkeypatch.setattr(rollups.KnownKeys, "add", add)
    monkeypatch.setattr(rollups, "_key_ids", key_ids)
    import warehouse.runs.ingest as ingest
    monkeypatch.setattr(ingest, "build_rollups", build)
    urls = _new_url(backend, tmp_path)
    url = next(urls)
    files = [*cases().values(), _device_variant(tmp_path)]
    r = make_invoke(url)("ingest", *files)
    assert r.exit_code == 0, r.output
    eng = open_db(url, create=False)
    with eng.connect() as c:
        assert rollups.check_rollups(c) == []
        runs = c.execute(text("SELECT COUNT(*) FROM run WHERE op_count > 0")).scalar()
    eng.dispose()
    urls.close()
    assert len(late) >= runs  # (every run's layer keys found late)


def test_unmirrored_metric_falls_back_to_the_sql(corpus_db, monkeypatch):
    """A stored metric whose definition numpy does not know (here: kernel time redefined) is computed by the SQL:
    its rows are the SQL's, never numpy's old definition."""
    eng, _ = corpus_db
    changed = [dataclasses.replace(m, expr="SUM(kernel_ns) * 2") if m.key == "kernel" else m
               for m in measures.METRICS]
    assert rollupcalc.mirrored() and not rollupcalc.mirrored(metrics=changed)
    monkeypatch.setattr(rollupcalc, "METRICS", changed)
    monkeypatch.setattr(rollups, "METRICS", changed)
    sql = rollups.build_sql(metrics=changed)
    build_sql_stored = rollups._SQL
    with eng.begin() as c:
        run_id, freq = c.execute(text("SELECT id, freq_mhz FROM run ORDER BY op_count DESC LIMIT 1")).one()
        assert rollupcalc.run_rows(c, run_id, float(freq), rollups._BY_ID_SQL) is None
        monkeypatch.setattr(rollups, "_SQL", sql)
        rollups.build_rollups(c, run_id, float(freq))
        stored = c.execute(text("SELECT r.section, k.grouping, k.key, r.device, r.kernel_ns FROM rollup_row r "
                                "JOIN rollup_key k ON k.id = r.key_id WHERE r.run_id = :r"), {"r": run_id}).all()
        want = {tuple(r[1:5]): r[7] for r in c.execute(text(sql), {"run": run_id, "freq": float(freq)})}
        assert stored and {tuple(r[:4]): r[4] for r in stored} == want
        base = {tuple(r[1:5]): r[7] for r in c.execute(text(build_sql_stored), {"run": run_id, "freq": float(freq)})}
        assert any(want[k] != base[k] for k in want)  # (the fallback's rows are the new definition's)
        c.rollback()


def test_a_big_run_is_left_to_the_sql(db_url, monkeypatch):
    """Runs over plan.NUMPY_MAX_OPS ops are written by the SQL alone (numpy's arrays would grow with the run):
    the same rows, and numpy is not asked."""
    monkeypatch.setattr(budgets, "NUMPY_MAX_OPS", 100)
    calls = []
    real = rollupcalc._Fine.__init__
    monkeypatch.setattr(rollupcalc._Fine, "__init__", lambda self, *a: (calls.append(a), real(self, *a))[1])
    wh = make_invoke(db_url)
    small = cases()["ttperfreport__bh20_oft_integral_image_trace"]  # (21 ops, beside 1,004)
    assert wh("ingest", cases()["segenc_notrace"], small).exit_code == 0
    eng = open_db(db_url, create=False)
    with eng.connect() as c:
        ops = dict(c.execute(text("SELECT id, op_count FROM run")).all())
        assert sorted(ops.values())[0] <= 100 < sorted(ops.values())[-1]  # (one run each way)
        assert len(calls) == 1 and rollups.check_rollups(c) == []
        assert c.execute(text("SELECT COUNT(DISTINCT run_id) FROM rollup_row")).scalar() == 2
    eng.dispose()


def _by_id_rows(cols: list, names: list[str]) -> list[tuple]:
    """By-id rows as comparable tuples: section names for their indexes, NaN as None."""
    rows = []
    for r in zip(*(c.tolist() for c in cols)):
        row = list(r)
        row[1] = names[row[1]]
        rows.append(tuple(None if isinstance(v, float) and v != v else v for v in row))
    return sorted(rows, key=repr)


@pytest.mark.parametrize("backend", BACKENDS)
def test_ingest_groups_the_ops_it_kept_as_the_by_id_sql(backend, tmp_path, monkeypatch):
    """Ingest computes a run's by-id rows from the op rows it wrote (rollupcalc.OpCapture), history's late
    corrections applied, instead of reading them back: on every corpus capture (replays whose attribution is
    corrected at the end, custom sections, several devices, device -1) they are the by-id SQL's rows, exactly."""
    urls = _new_url(backend, tmp_path)
    url = next(urls)
    compared: list[int] = []
    fixes: list[int] = []
    real_by_id, real_fix = rollupcalc.OpCapture.by_id, rollupcalc.OpCapture.fix

    def by_id(self, conn, run_id):
        cols, names = real_by_id(self, conn, run_id)
        assert _by_id_rows(cols, names) == _by_id_rows(*rollupcalc.read_by_id(conn, rollups._BY_ID_SQL, run_id))
        compared.append(run_id)
        return cols, names

    def fix(self, row_no, *a):
        fixes.append(row_no)
        return real_fix(self, row_no, *a)

    monkeypatch.setattr(rollupcalc.OpCapture, "fix", fix)
    monkeypatch.setattr(rollupcalc.OpCapture, "by_id", by_id)
    files = [*cases().values(), *sorted((DATA / "ttperf_extra").glob("*.csv")), _device_variant(tmp_path)]
    r = make_invoke(url)("ingest", *files)
    assert r.exit_code == 0, r.output
    eng = open_db(url, create=False)
    with eng.connect() as c:
        runs = c.execute(text("SELECT id FROM run WHERE op_count > 0")).scalars().all()
    eng.dispose()
    urls.close()
    assert sorted(compared) == sorted(runs)  # (every run with ops went through the kept ops)
    assert fixes  # (history corrected some ops' attribution after the stream)
