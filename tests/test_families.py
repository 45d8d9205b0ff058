"""Every numeric column of every corpus era has a typed home (warehouse.registry.families, the typed op columns, or a
documented reason), and each family view gives every op's cells typed, exactly as the file has them, on both
back ends."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from corpus import DATA, cases, number
from warehouse.registry.families import FAMILIES, FLAG, NUMBER, TEXT, home_of

EXTRA = sorted((DATA / "ttperf_extra").glob("*.csv"))  # newer tt-metal: PROGRAM HASH, CACHE HIT, ERISC ...


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    return rows[0], [r for r in rows[1:] if r]


def test_every_numeric_column_of_every_era_has_a_home():
    """A column whose every non-empty cell is a number, in any corpus capture, is typed somewhere."""
    numeric: dict[str, str] = {}
    for path in [*cases().values(), *EXTRA]:
        header, data = _rows(path)
        for pos, name in enumerate(header):
            cells = [r[pos].strip() for r in data if pos < len(r) and r[pos].strip()]
            if cells and all(number(c) is not None for c in cells):
                numeric.setdefault(name, path.name)
    assert len(numeric) > 50
    homeless = {n: f for n, f in numeric.items() if home_of(n) is None}
    assert not homeless, homeless


def test_family_names_are_unique_and_known():
    """No CSV name has two homes; home_of names each family column's view and column."""
    seen: dict[str, str] = {}
    for fam in FAMILIES:
        for col in fam.columns:
            for name in col.csv:
                assert name not in seen, (name, seen.get(name))
                seen[name] = f"{fam.view}.{col.name}"
                assert home_of(name) == seen[name]
    assert home_of("NO SUCH COLUMN") is None


def _want(kind: str, cell: str | None) -> object:
    if cell is None or not cell.strip():
        return None
    if kind == NUMBER:
        return number(cell.strip())
    if kind == TEXT:
        return cell.strip()
    assert kind == FLAG
    return {"true": 1, "1": 1, "false": 0, "0": 0}.get(cell.strip().lower())


def _check_run(url: str, run: int, path: Path) -> int:
    """Every family column of every op row of ``run`` against the file's cells; returns the cells compared."""
    from warehouse.api import Warehouse

    header, data = _rows(path)
    last = {name: i for i, name in enumerate(header)}
    wh = Warehouse(url)
    op_rows = {r["row_no"] for r in wh.query("SELECT row_no FROM op WHERE run_id = :r", r=run)}
    compared = 0
    for fam in FAMILIES:
        got = {r["row_no"]: r for r in wh.query(f"SELECT * FROM {fam.view} WHERE run_id = :r", r=run)}
        assert set(got) == op_rows, fam.view  # every op row once, no signpost
        for col in fam.columns:
            pos = next((last[n] for n in col.csv if n in last), None)
            for row_no in op_rows:
                row = data[row_no - 1]
                cell = row[pos] if pos is not None and pos < len(row) else None
                want, have = _want(col.kind, cell), got[row_no][col.name]
                if isinstance(want, float):
                    assert have == pytest.approx(want, rel=1e-15), (path.name, row_no, col.name, cell)
                else:
                    assert have == want, (path.name, row_no, col.name, cell)
                compared += want is not None
    return compared


@pytest.mark.parametrize("case", sorted(cases()))
def test_family_views_equal_the_files_cells(corpus_wh, case):
    """Each family column of each op: the file's cell typed (NULL when empty or not of the kind)."""
    invoke, ids, url = corpus_wh
    assert _check_run(url, ids[case], cases()[case]) > 0


def test_family_views_of_newer_tt_metal(wh, db_url):
    """Program hash (past 2**63: text), cache hit (a flag), ERISC times: the newer captures' columns."""
    compared = 0
    for path in EXTRA:
        r = wh("ingest", path)
        assert r.exit_code == 0, r.output
        compared += _check_run(db_url, int(r.output.split(": run ")[1].split(":")[0]), path)
    from warehouse.api import Warehouse

    rows = Warehouse(db_url).query("SELECT program_hash, program_cache_hit FROM op_program "
                                   "WHERE program_hash IS NOT NULL ORDER BY run_id, row_no")
    assert rows and all(r["program_cache_hit"] in (0, 1) for r in rows)
    assert any(int(r["program_hash"]) >= 2 ** 63 for r in rows)
    assert compared > 500


def test_postgresql_sessions_never_compile_queries_with_jit(db_url):
    """The lossless views are wide (hundreds of expressions): with PostgreSQL's JIT on, once the planner's
    statistics called a capture big, compiling a family view's read cost 30x the read (99 s instead of 3 on a
    3,141-op capture in CI). Every warehouse session turns JIT off, read-only ones too, after the URL's own
    options, which still hold. And its server-side cursors are planned to be read whole (the warehouse reads
    every row it streams): planned for their first tenth, the history series' reads at ingest took nested loops
    (a 2,640-op capture's 0.13 s instead of 0.04)."""
    if not db_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's JIT")
    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    from warehouse.store.db import make_engine, open_db
    open_db(db_url).dispose()
    url = make_url(db_url).update_query_dict({"options": "-c statement_timeout=4321"})
    for readonly in (False, True):
        eng = make_engine(url, readonly=readonly)
        with eng.connect() as c:
            got = [c.execute(text(f"SHOW {s}")).scalar() for s in ("jit", "statement_timeout",
                                                                     "default_transaction_read_only",
                                                                     "cursor_tuple_fraction")]
        eng.dispose()
        assert got == ["off", "4321ms", "on" if readonly else "off", "1"], got


def test_postgresql_knows_a_new_runs_size_at_once(db_url):
    """A young warehouse's statistics name every run it had, so a run ingested since was estimated at one row and
    the lossless views joined its ops in nested loops (its cells read in 42 s instead of 2, in CI 71-103 s for the
    family views): an ingest that is a tenth of the op table or more refreshes the statistics itself."""
    if not db_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's planner statistics")
    from sqlalchemy import text

    from warehouse.api import Warehouse
    from warehouse.store.db import make_engine
    wh = Warehouse(db_url)
    wh.ingest([cases()["dlv3_same"], cases()["oft2025_noise"]])
    eng = make_engine(db_url)
    with eng.connect() as c:
        c.execute(text("ANALYZE"))  # (what autovacuum does a minute after the first nights)
        c.commit()
    got = wh.ingest(cases()["clip_replays3"])[0]
    with eng.connect() as c:
        plan = c.execute(text("EXPLAIN (FORMAT JSON) SELECT * FROM op WHERE run_id = :r"), {"r": got.run_id}).scalar()
    eng.dispose()
    estimated = plan[0]["Plan"]["Plan Rows"]
    assert estimated >= got.ops / 2, (estimated, got.ops)
