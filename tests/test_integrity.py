"""Integrity, round 3 (the hostile review's findings, numbered as in the issue): privilege rather than parsing for
user SQL, consistent reads and verified copies, a gate that never passes a broken capture, per-file isolation,
bounds, and the rest of the list. Each test failed against the code before its fix."""
from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from conftest import make_invoke
from csvedit import read_lists
from corpus import cases
from warehouse.store import dialect
from warehouse.store.db import open_db
from warehouse.errors import UsageError
from warehouse.store.query import stream_sql

SMALL = "ttperfreport__bh20_oft_integral_image_trace"


def _errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("Error: ")]


# ================================================================================ 1. privilege for user SQL
ISSUE_ATTACKS = [
    "SELECT word FROM ts_stat('SELECT to_tsvector(''simple'', pg_read_file(''/etc/hostname''))')",
    "SELECT ts_rewrite('a'::tsquery, 'SELECT rolname::tsquery, rolpassword::tsquery FROM pg_authid')",
    "SELECT * FROM pg_ls_dir('.')",
    "SELECT name, setting FROM pg_settings",
    "SELECT pg_terminate_backend(1)",
    "SELECT pg_reload_conf()",
    "SELECT pg_advisory_lock(2003333733)",
    "SELECT lo_from_bytea(0, 'x')",
    "SELECT pg_catalog.pg_read_file('/etc/hostname')",
    "SELECT public.lower('x')",
    "SELECT current_setting('data_directory')",
]


@pytest.fixture(scope="module")
def pg_owned(tmp_path_factory):
    """A PostgreSQL warehouse owned by the superuser of the test server, holding one small run."""
    from conftest import PG_URL, _pg_database
    if not PG_URL:
        pytest.skip("needs WAREHOUSE_TEST_PG_URL (CI starts a server)")
    gen = _pg_database()
    url = next(gen)
    assert make_invoke(url)("ingest", cases()[SMALL], "--label", "keep").exit_code == 0
    yield url
    for _ in gen:
        pass


@pytest.mark.parametrize("attack", ISSUE_ATTACKS)
def test_pg_sql_refuses_what_reaches_outside(pg_owned, attack):
    r = make_invoke(pg_owned)("sql", attack)
    assert r.exit_code == 2 and "refused" in r.output and len(_errors(r.output)) == 1, r.output


def test_pg_user_sql_runs_as_a_select_only_role_and_leaves_nothing(pg_owned):
    wh = make_invoke(pg_owned)
    r = wh("sql", "SELECT current_user AS u, COUNT(*) AS n FROM op", "--format", "csv")
    assert r.exit_code == 0 and r.output.splitlines()[1] == "warehouse_sql_reader,21", r.output
    eng = open_db(pg_owned, create=False)
    try:
        # the role the statement runs as is refused by the server what the parser would let through
        with eng.connect() as c:
            c.exec_driver_sql("SET ROLE warehouse_sql_reader")
            for stmt in ("SELECT pg_read_file('/etc/hostname')", "SELECT * FROM pg_authid",
                         "UPDATE run SET label = 'x'"):
                with pytest.raises(Exception, match="permission denied"):
                    with c.begin_nested():
                        c.exec_driver_sql(stmt)
            c.rollback()
        # a pooled connection that ran user SQL keeps nothing: same role, settings back, no locks
        for _ in range(3):
            with stream_sql(eng, "SELECT COUNT(*) FROM run", timeout_s=2) as res:
                assert list(res.rows) == [(1,)]
        with eng.connect() as c:
            assert c.exec_driver_sql("SELECT current_user").scalar() == make_url(pg_owned).username
            assert c.exec_driver_sql("SHOW statement_timeout").scalar() == "0"
            assert c.exec_driver_sql("SHOW transaction_read_only").scalar() == "off"
            # (this warehouse's database only: a test on another core may hold one of its own meanwhile)
            assert c.exec_driver_sql(
                "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())").scalar() == 0
    finally:
        eng.dispose()


_TEXTY = {"text", "character varying", "character", "name", "cstring"}


def test_every_text_taking_function_of_pg_proc_stays_inside_the_warehouse(pg_owned):
    """Every function of pg_proc with a text-like argument, called through `warehouse sql` on a warehouse owned by a
    superuser with payloads that name a query over a table outside the warehouse, a server file and a setting:
    nothing it returns holds their secret, nothing outside changes, no lock survives the request."""
    marker = "wh" + uuid.uuid4().hex
    admin = create_engine(pg_owned, isolation_level="AUTOCOMMIT")
    secret_file = tempfile.NamedTemporaryFile("w", prefix="warehouse-secret-", dir="/tmp", delete=False)
    secret_file.write(marker + "\n")
    secret_file.close()
    os.chmod(secret_file.name, 0o644)
    db = make_url(pg_owned).database
    try:
        with admin.connect() as c:
            c.exec_driver_sql("CREATE SCHEMA outside")
            c.exec_driver_sql("CREATE TABLE outside.secret (v text)")
            c.exec_driver_sql(f"INSERT INTO outside.secret VALUES ('{marker}')")
            c.exec_driver_sql(f"ALTER DATABASE \"{db}\" SET warehouse_test.secret = '{marker}'")
            funcs = c.execute(text(
                "SELECT p.proname, n.nspname, p.prokind, ARRAY(SELECT format_type(t, NULL) FROM "
                "unnest(p.proargtypes::oid[]) t) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE p.prokind IN ('f', 'a', 'w') AND EXISTS (SELECT 1 FROM unnest(p.proargtypes::oid[]) t "
                "WHERE format_type(t, NULL) = ANY(:texty)) ORDER BY 1, 2"), {"texty": sorted(_TEXTY)}).all()
        assert len(funcs) > 400, len(funcs)
        payloads = ["SELECT v FROM outside.secret", secret_file.name, "warehouse_test.secret"]
        eng = open_db(pg_owned, create=False, readonly=True)
        ran = refused = 0
        for name, schema, kind, argtypes in funcs:
            for payload in payloads:
                lit = "'" + payload.replace("'", "''") + "'"
                args = [f"{lit}::{t}" if t in _TEXTY else f"NULL::{t}" for t in argtypes]
                call = f'{schema}."{name}"({", ".join(args)})' + (" OVER ()" if kind == "w" else "")
                try:
                    with stream_sql(eng, f"SELECT {call}", timeout_s=5) as res:
                        out = repr(list(res.rows))
                    ran += 1
                    assert marker not in out, (call, out)
                except UsageError as e:
                    refused += 1
                    assert marker not in str(e), (call, str(e))
        eng.dispose()
        assert ran > 50 and refused > 1000, (ran, refused)  # both halves were exercised
        with admin.connect() as c:
            assert c.exec_driver_sql("SELECT array_agg(v) FROM outside.secret").scalar() == [marker]
            # (this warehouse's database only: a test on another core may hold one of its own meanwhile)
            assert c.exec_driver_sql(
                "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())").scalar() == 0
            assert c.exec_driver_sql("SELECT COUNT(*) FROM pg_largeobject_metadata").scalar() == 0
            assert c.exec_driver_sql("SELECT label FROM run").scalar() == "keep"
    finally:
        os.unlink(secret_file.name)
        with admin.connect() as c:
            c.exec_driver_sql("DROP SCHEMA IF EXISTS outside CASCADE")
            c.exec_driver_sql(f"ALTER DATABASE \"{db}\" RESET warehouse_test.secret")
        admin.dispose()


def test_pg_reader_role_keeps_nothing(pg_owned):
    """`db create-reader`: no temp tables, no large objects, no advisory locks, even after switching read-only off
    (the owner here is a superuser, so all three are revoked); its `sql` still works."""
    wh = make_invoke(pg_owned)
    r = wh("db", "create-reader", "wh_reader_keep")
    assert r.exit_code == 0, r.output
    reader_url = make_url(pg_owned).set(username="wh_reader_keep").render_as_string(hide_password=False)
    r = make_invoke(reader_url)("sql", "SELECT current_user AS u, COUNT(*) AS n FROM op", "--format", "csv")
    assert r.exit_code == 0 and r.output.splitlines()[1] == "wh_reader_keep,21", r.output
    eng = create_engine(reader_url, isolation_level="AUTOCOMMIT")
    try:
        for stmt in ("CREATE TEMP TABLE t (a int)", "SELECT lo_from_bytea(0, 'x')", "SELECT pg_advisory_lock(7)",
                     "SELECT pg_try_advisory_lock(7)", "INSERT INTO run_tag VALUES (1, 'a', 'b')"):
            with eng.connect() as c:
                c.exec_driver_sql("SET default_transaction_read_only = off")
                with pytest.raises(Exception, match="permission denied"):
                    c.exec_driver_sql(stmt)
    finally:
        eng.dispose()


# ================================================================================ 2. consistent reads
MID = "ttperfreport__bh_64_clip_encoder_1"


def _rm_midway(monkeypatch, url: str, after_rows: int):
    """Make the export read one chunk at a time and, after ``after_rows`` rows, delete the run it reads from
    another connection (committed while the export goes on)."""
    import warehouse.runs.export as ex
    from warehouse.store.cells import iter_chunk_rows
    from warehouse.runs.maintenance import remove_runs

    def chunks(conn, run_id, batch=16):
        for i, row in enumerate(iter_chunk_rows(conn, run_id, batch=1)):
            if i == after_rows:
                other = open_db(url, create=False)
                remove_runs(other, [run_id])
                other.dispose()
            yield row
    monkeypatch.setattr(ex, "iter_chunk_rows", chunks)


@pytest.mark.parametrize("try_no", range(20))
def test_export_and_copy_racing_rm_are_whole_or_an_error(db_url, tmp_path, monkeypatch, try_no):
    """20 tries (the delete lands after a different number of rows each time): the export is the complete file,
    equal to its sha256, or an Error with nothing written; the copy stores the whole run or nothing."""
    import hashlib
    src = cases()[MID]
    wh = make_invoke(db_url)
    assert wh("ingest", src).exit_code == 0
    want = hashlib.sha256(src.read_bytes()).hexdigest()
    _rm_midway(monkeypatch, db_url, after_rows=37 + 101 * try_no)
    out = tmp_path / "back.csv"
    r = wh("export", "1", "-o", out)
    if r.exit_code == 0:
        assert hashlib.sha256(out.read_bytes()).hexdigest() == want
    else:
        assert len(_errors(r.output)) == 1 and not out.exists(), r.output
    monkeypatch.undo()
    # the copy: ingest again, then copy to a second warehouse while the source run is deleted midway
    assert wh("ingest", src).exit_code == 0
    dst = str(tmp_path / "dst.db")
    _rm_midway(monkeypatch, db_url, after_rows=37 + 101 * try_no)
    r = make_invoke(dst)("copy", "--from", db_url, "--to", dst)
    monkeypatch.undo()
    dwh = make_invoke(dst)
    eng = open_db(dst, create=False)
    with eng.connect() as c:
        shas = c.execute(text("SELECT sha256 FROM run")).scalars().all()
    eng.dispose()
    assert shas in ([], [want]), (shas, r.output)
    if shas:
        back = tmp_path / "dst.csv"
        assert dwh("export", "latest", "-o", back).exit_code == 0
        assert hashlib.sha256(back.read_bytes()).hexdigest() == want
    assert dwh("check").exit_code == 0


def test_export_of_a_damaged_run_is_an_error_and_check_names_it(db_url, tmp_path):
    wh = make_invoke(db_url)
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    eng = open_db(db_url, create=False)
    with eng.begin() as c:  # one op's stored cells lose a row: the chunk still parses
        c.execute(text("UPDATE run SET row_count = row_count + 1"))
    eng.dispose()
    out = tmp_path / "x.csv"
    r = wh("export", "1", "-o", out)
    assert r.exit_code == 1 and "rows read back" in r.output and not out.exists(), r.output
    r = wh("check")
    assert r.exit_code == 1 and "export: run 1" in r.output, r.output



@pytest.mark.parametrize("column, parent", [("op_code_id", "op_code"), ("place_id", "place"),
                                            ("perf_shape_id", "perf_shape")])
def test_check_names_an_op_whose_interned_reference_points_nowhere(db_url, column, parent):
    """References to interned tables are constraints on SQLite only (schema.interned_ref): `check` finds one that
    points nowhere on both back ends, and names the table, column and parent."""
    wh = make_invoke(db_url)
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    assert wh("check").exit_code == 0
    eng = open_db(db_url, create=False)
    with eng.connect() as c, dialect.foreign_keys_off(c), c.begin():  # (SQLite: as its ingest writes)
        c.execute(text(f"UPDATE op SET {column} = 987654 WHERE id = (SELECT MIN(id) FROM op)"))
    eng.dispose()
    r = wh("check")
    assert r.exit_code == 1 and "foreign key" in r.output and parent in r.output, r.output
    if db_url.startswith("postgresql"):
        assert f"1 op row(s) whose {column} is in no {parent} row (first: 987654)" in r.output, r.output

# ================================================================================ 3. capture-quality gate
def _broken_variants(good: Path, out: Path) -> dict[str, Path]:
    """Broken copies of a good night, each with a later capture time: what a crashed or cut capture looks like."""
    import csv as _csv
    rows = read_lists(good, encoding="utf-8-sig")
    head, body = rows[0], rows[1:]
    typ, code = head.index("OP TYPE"), head.index("OP CODE")
    kern = head.index("DEVICE KERNEL DURATION [ns]")
    variants = {
        "header_only": [],
        "only_signposts": [r for r in body if r[typ] == "signpost"],
        "nan_durations": [r if r[typ] == "signpost" else r[:kern] + ["nan"] + r[kern + 1:] for r in body],
        "empty_durations": [r if r[typ] == "signpost" else r[:kern] + [""] + r[kern + 1:] for r in body],
        "zero_durations": [r if r[typ] == "signpost" else r[:kern] + ["0"] + r[kern + 1:] for r in body],
        "first_half": body[: len(body) // 2],
        "no_trace": body[: next(i for i, r in enumerate(body) if r[code] == "trace")],
    }
    paths = {}
    for k, (name, rs) in enumerate(variants.items()):
        p = out / name / f"ops_perf_results_2026_11_{k + 21:02d}_02_00_00.csv"
        p.parent.mkdir(parents=True)
        with p.open("w", newline="") as f:
            _csv.writer(f).writerows([head] + rs)
        paths[name] = p
    return paths


def test_gate_never_passes_a_broken_capture(db_url, tmp_path):
    import json
    import subprocess
    import sys
    nights = tmp_path / "nights"
    subprocess.run([sys.executable, str(Path(__file__).parent / "mkseries.py"), str(cases()["dlv3_same"]),
                    str(nights), "--runs", "8", "--seed", "5"], check=True, capture_output=True)
    wh = make_invoke(db_url)
    assert wh("ingest", nights, "--label", "m").exit_code == 0
    good = sorted(nights.glob("*.csv"))
    assert wh("regressions", "--label", "m").exit_code == 0
    for name, path in _broken_variants(good[-1], tmp_path / "broken").items():
        r = wh("ingest", path, "--label", "m")
        assert r.exit_code in (0, 1), r.output
        if r.exit_code == 1:  # refused at ingest: nothing stored, nothing to gate
            continue
        r = wh("regressions", "--label", "m", "--format", "json")
        assert r.exit_code == 4, (name, r.output[:2000])
        res = json.loads(r.stdout)
        assert res["invalid"] and res["invalid"][0]["problems"], (name, res["invalid"])
        assert not res["regressions"] and not res["improvements"]
        text_out = wh("regressions", "--label", "m").output
        assert "INVALID CAPTURE" in text_out, (name, text_out)
        # a good night after it: the broken one is in no window
        later = tmp_path / "later" / name / "ops_perf_results_2026_11_30_02_00_00.csv"
        later.parent.mkdir(parents=True)
        later.write_bytes(good[-2].read_bytes() + b"\n")
        assert wh("ingest", later, "--label", "m").exit_code == 0
        r = wh("regressions", "--label", "m", "--format", "json")
        res = json.loads(r.stdout)
        bad_id = max(x["id"] for x in json.loads(wh("runs", "--json").output)) - 1
        assert r.exit_code == 0 and bad_id not in res["checked"][0]["window"], (name, r.output[:2000])
        ids = [str(x["id"]) for x in json.loads(wh("runs", "--json").output)][-2:]
        assert wh("rm", *ids, "--yes").exit_code == 0


def test_a_history_of_broken_captures_is_no_baseline(db_url, tmp_path):
    import json
    wh = make_invoke(db_url)
    variants = _broken_variants(cases()["dlv3_same"], tmp_path / "b")
    assert wh("ingest", variants["header_only"], "--label", "z").exit_code == 0
    later = tmp_path / "ops_perf_results_2026_11_29_02_00_00.csv"
    later.write_bytes(cases()["dlv3_same"].read_bytes())
    assert wh("ingest", later, "--label", "z").exit_code == 0
    r = wh("regressions", "--label", "z", "--format", "json")
    res = json.loads(r.stdout)
    assert not res["checked"] and any("no earlier valid run" in w for w in res["warnings"]), r.output


# ================================================================================ 4. per-file isolation
def test_device_minus_one_is_its_files_warning_not_the_commands_end(db_url, tmp_path):
    """A capture whose ops sit on DEVICE ID -1 and 0 (two devices, one of them -1, which is the rollups' "all
    devices") goes in with a warning; the next file of the folder goes in too."""
    import csv as _csv
    src = cases()["dlv3_same"]
    rows = read_lists(src, encoding="utf-8-sig")
    dev = rows[0].index("DEVICE ID")
    folder = tmp_path / "nightly"
    folder.mkdir()
    with (folder / "ops_perf_results_2026_11_01_02_00_00.csv").open("w", newline="") as f:
        w = _csv.writer(f)
        w.writerow(rows[0])
        for k, r in enumerate(rows[1:]):
            if r[dev] != "":
                r = r[:dev] + ["-1" if k % 2 else "0"] + r[dev + 1:]
            w.writerow(r)
    (folder / "ops_perf_results_2026_11_02_02_00_00.csv").write_bytes(cases()[SMALL].read_bytes())
    wh = make_invoke(db_url)
    r = wh("ingest", folder)
    assert r.exit_code == 0 and r.output.count(": run ") == 2, r.output
    assert "negative device id" in wh("runs", "--warnings").output
    assert wh("check").exit_code == 0


def test_an_unexpected_failure_is_one_files_error(db_url, tmp_path, monkeypatch):
    """Any exception while one file is ingested (here: a bug, simulated) is that file's one Error: line naming
    it; the other files still go in, and nothing of the failed one is stored."""
    import warehouse.runs.ingest as ing
    real = ing.build_rollups
    calls = {"n": 0}

    def flaky(conn, run_id, freq, **kw):
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyError("boom")
        return real(conn, run_id, freq, **kw)
    monkeypatch.setattr(ing, "build_rollups", flaky)
    a, b = tmp_path / "a" / "ops_perf_results_x.csv", tmp_path / "b" / "ops_perf_results_y.csv"
    for p, case in ((a, SMALL), (b, "dlv3_same")):
        p.parent.mkdir()
        p.write_bytes(cases()[case].read_bytes())
    wh = make_invoke(db_url)
    r = wh("ingest", a, b)
    errs = _errors(r.output)
    assert r.exit_code == 1 and len(errs) == 1 and str(a) in errs[0] and "KeyError" in errs[0], r.output
    assert "1 of 2 path(s) failed; the others were ingested" in r.output
    eng = open_db(db_url, create=False)
    with eng.connect() as c:
        assert c.execute(text("SELECT COUNT(*) FROM run")).scalar() == 1
        assert c.execute(text("SELECT COUNT(*) FROM op WHERE run_id NOT IN (SELECT id FROM run)")).scalar() == 0
    eng.dispose()
    monkeypatch.setattr(ing, "build_rollups", lambda *a: (_ for _ in ()).throw(KeyError("again")))
    c_ = tmp_path / "c" / "ops_perf_results_z.csv"
    c_.parent.mkdir()
    c_.write_bytes(cases()["oft_mismatch"].read_bytes())
    r = wh("ingest", c_)
    assert r.exit_code == 1 and "1 path(s) failed; nothing was ingested" in r.output, r.output


def test_scratch_folders_of_a_killed_parallel_ingest_are_cleaned(tmp_path):
    import subprocess
    import time as _time
    from warehouse.runs.folder import SCRATCH_PREFIX, clean_scratch
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"{SCRATCH_PREFIX}{dead.pid}-abc"
    live = tmp_path / f"{SCRATCH_PREFIX}{os.getpid()}-def"
    old = tmp_path / f"{SCRATCH_PREFIX}xyz"
    young = tmp_path / f"{SCRATCH_PREFIX}uvw"
    for d in (stale, live, old, young):
        d.mkdir()
        (d / "empty.db").write_bytes(b"")
    os.utime(old, (_time.time() - 2 * 86400,) * 2)
    removed = clean_scratch(str(tmp_path))
    assert sorted(removed) == sorted([str(stale), str(old)])
    assert live.exists() and young.exists() and not stale.exists()


# ================================================================================ 5. bounds
def test_a_header_past_the_column_cap_is_one_error(db_url, tmp_path):
    from warehouse.capture.csvfile import MAX_COLUMNS
    p = tmp_path / "ops_perf_results_wide.csv"
    cols = ["OP CODE", "OP TYPE"] + [f"C{i}" for i in range(MAX_COLUMNS)]
    p.write_text(",".join(cols) + "\n" + ",".join(["x", "tt_dnn_device"] + ["1"] * MAX_COLUMNS) + "\n")
    r = make_invoke(db_url)("ingest", p)
    assert r.exit_code == 1 and "columns, over the limit" in r.output and len(_errors(r.output)) == 1, r.output


def test_distinct_attributes_cost_one_analysis_per_distinct_shape(tmp_path, monkeypatch):
    """Rows that differ only in an ATTRIBUTES that the per-op analysis ignores share one computed shape (a
    capture whose every row has its own ATTRIBUTES was 5 times slower than the same rows repeated)."""
    from warehouse.capture.perffacts import Analyzer
    rows = read_lists(cases()["ttperfreport__bh_64_clip_encoder_1"], encoding="utf-8-sig")
    head = rows[0]
    a_i, c_i, t_i = head.index("ATTRIBUTES"), head.index("OP CODE"), head.index("OP TYPE")
    ops = [r for r in rows[1:] if r[t_i] != "signpost"]
    calls = {"n": 0}
    real = Analyzer._shape

    def counting(self, cells, op_code):
        calls["n"] += 1
        return real(self, cells, op_code)
    monkeypatch.setattr(Analyzer, "_shape", counting)
    an = Analyzer(head)
    plain = [r for r in ops if "Matmul" not in r[c_i] and "Conv" not in r[c_i] and "Halo" not in r[c_i]
             and "program_config" not in r[a_i]]
    distinct_static = {tuple(c for i, c in enumerate(r) if i != a_i) + (r[c_i],) for r in plain}
    for k in range(5):
        for r in plain:
            cells = list(r)
            cells[a_i] = f"{r[a_i]}; 'seed': {k}"
            assert an.shape(cells, r[c_i]) == real(an, r, r[c_i])
    assert calls["n"] <= len(distinct_static), (calls["n"], len(distinct_static))


def test_sql_value_and_result_bounds(db_url):
    wh = make_invoke(db_url)
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    big = "zeroblob(300000000)" if not db_url.startswith("postgresql") else \
        "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 1000000) i)"
    r = wh("sql", f"SELECT {big} AS b")
    assert r.exit_code == 2 and len(_errors(r.output)) == 1 and "limit" in r.output, r.output[:500]
    r = wh("sql", "SELECT row_no FROM op", "--max-result-bytes", "100")
    assert r.exit_code == 2 and "passed 100 bytes" in r.output, r.output[:500]
    r = wh("sql", "SELECT COUNT(*) AS n FROM json_each('[1,2,3]')" if not db_url.startswith("postgresql")
           else "SELECT COUNT(*) AS n FROM json_array_elements('[1,2,3]')", "--format", "csv")
    assert r.exit_code == 0 and r.output.splitlines()[1] == "3", r.output


# ================================================================================ 6. the rest of the list
def _files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_a_warehouse_in_an_unwritable_folder_is_readable(tmp_path, monkeypatch):
    """Every reading command works on a warehouse whose folder cannot be written (WAL cannot make its -shm
    there): opened immutable, nothing is created beside it."""
    import warehouse.store.db as dbmod
    folder = tmp_path / "share"
    folder.mkdir()
    db = str(folder / "warehouse.db")
    wh = make_invoke(db)
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    before = _files(folder)
    real_access = os.access
    monkeypatch.setattr(dbmod.os, "access", lambda p, mode: False if mode == os.W_OK else real_access(p, mode))
    for args in (["runs"], ["report", "latest", "-q"], ["sql", "SELECT COUNT(*) FROM op"], ["check"],
                 ["export", "1", "-o", str(tmp_path / "x.csv")], ["trend", "--by", "op-code"]):
        r = wh(*args)
        assert r.exit_code == 0, (args, r.output)
    assert _files(folder) == before, _files(folder) - before


def test_a_warehouse_on_a_read_only_mount(tmp_path):
    """The same on a real read-only file system (a read-only bind mount, as a share is): every reading command
    works, a writing one is one Error: line, nothing is created."""
    import shutil
    import subprocess
    import sys
    src, mnt = tmp_path / "src", tmp_path / "mnt"
    src.mkdir()
    mnt.mkdir()
    assert make_invoke(str(src / "warehouse.db"))("ingest", cases()[SMALL]).exit_code == 0
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root for a read-only bind mount (CI runs as root)")
    if subprocess.run(["mount", "--bind", str(src), str(mnt)], capture_output=True).returncode != 0:
        pytest.skip("bind mounts are not allowed here")
    try:
        assert subprocess.run(["mount", "-o", "remount,bind,ro", str(mnt)], capture_output=True).returncode == 0
        db = mnt / "warehouse.db"
        before = _files(src)
        for args in (["runs"], ["report", "latest", "-q"], ["sql", "SELECT COUNT(*) FROM op"], ["check"]):
            r = subprocess.run([sys.executable, "-m", "warehouse", "--db", str(db), *args], capture_output=True,
                               text=True)
            assert r.returncode == 0, (args, r.stdout, r.stderr)
        r = subprocess.run([sys.executable, "-m", "warehouse", "--db", str(db), "ingest", str(cases()["dlv3_same"])],
                           capture_output=True, text=True)
        assert r.returncode == 1 and r.stderr.count("Error:") == 1, r.stderr
        assert _files(src) == before
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_dashboard_checks_the_host_header_and_never_sniffs(tmp_path):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient
    from warehouse.web.app import allowed_hosts_for, create_app
    db = str(tmp_path / "w.db")
    assert make_invoke(db)("ingest", cases()[SMALL]).exit_code == 0
    client = TestClient(create_app(db, allowed_hosts_for("127.0.0.1")), base_url="http://127.0.0.1:8000")
    r = client.get("/")
    assert r.status_code == 200 and r.headers["x-content-type-options"] == "nosniff"
    r = client.get("/sql", params={"q": "SELECT 1 AS a", "format": "csv"})
    assert r.status_code == 200 and r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["content-disposition"].startswith("attachment")
    # DNS rebinding: a page on evil.example whose name now points at 127.0.0.1
    r = client.get("/sql", params={"q": "SELECT 1"}, headers={"host": "evil.example:8000"})
    assert r.status_code == 400
    assert allowed_hosts_for("0.0.0.0") == ["*"] and "dash.lab" in allowed_hosts_for("dash.lab")


def test_impossible_file_name_dates_are_warned_about(db_url, tmp_path):
    p = tmp_path / "ops_perf_results_2026_02_30_02_00_00.csv"
    p.write_bytes(cases()[SMALL].read_bytes())
    wh = make_invoke(db_url)
    assert wh("ingest", p).exit_code == 0
    assert "2026_02_30_02_00_00 is not a real date" in wh("runs", "--warnings").output


def test_db_current_on_a_future_revision_says_to_install_the_newer_version(db_url):
    wh = make_invoke(db_url)
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    eng = open_db(db_url, create=False)
    with eng.begin() as c:
        c.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    eng.dispose()
    r = wh("db", "current")
    assert "newer warehouse" in r.output and "db upgrade" not in r.output, r.output


def test_rfc4180_quoted_newline_is_a_cell_and_exports_exactly(db_url, tmp_path):
    p = tmp_path / "ops_perf_results_q.csv"
    p.write_bytes(b'OP CODE,OP TYPE,GLOBAL CALL COUNT,ATTRIBUTES,DEVICE KERNEL DURATION [ns]\n'
                  b'Matmul,tt_dnn_device,1,"{a\nb}",1000\nMatmul,tt_dnn_device,2,x,1000\n')
    wh = make_invoke(db_url)
    r = wh("ingest", p)
    assert r.exit_code == 0 and ": 2 ops" in r.output, r.output
    out = tmp_path / "back.csv"
    assert wh("export", "1", "-o", out).exit_code == 0 and out.read_bytes() == p.read_bytes()
    r = wh("sql", "SELECT value FROM csv_cell WHERE run_id = 1 AND column_name = 'ATTRIBUTES' AND row_no = 1",
           "--format", "json")
    assert "{a\\nb}" in r.output, r.output


def test_sqlite_table_valued_pragmas_are_allowed(sqlite_db):
    wh = make_invoke(sqlite_db)
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    r = wh("sql", "SELECT name FROM pragma_table_info('run') WHERE name = 'sha256'", "--format", "csv")
    assert r.exit_code == 0 and r.output.splitlines() == ["name", "sha256"], r.output
    r = wh("sql", "SELECT sqlite_compileoption_get(0)")
    assert r.exit_code == 2 and "refused" in r.output


def test_outputs_are_made_with_the_umask_not_0600(db_url, tmp_path):
    wh = make_invoke(db_url)
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    old = os.umask(0o022)
    try:
        assert wh("report", "latest", "-q", "--json", tmp_path / "r.json").exit_code == 0
        assert wh("export", "1", "-o", tmp_path / "x.csv").exit_code == 0
    finally:
        os.umask(old)
    for name in ("r.json", "x.csv"):
        assert oct(os.stat(tmp_path / name).st_mode & 0o777) == oct(0o644), name


def test_labels_are_one_line_and_tables_stay_one_row_a_line(db_url):
    from warehouse import render
    wh = make_invoke(db_url)
    for bad in ("a\nb", "a\rb", "x\x1b[31m"):
        r = wh("ingest", cases()[SMALL], "--label", bad)
        assert r.exit_code == 2 and "control character" in r.output, r.output
        r = wh("ingest", cases()[SMALL], "--tag", f"commit={bad}")
        assert r.exit_code == 2, r.output
    assert render.table(["label"], [["a\nb"]]).splitlines()[2] == "a\\nb"


def _oracle_case(tmp_path, name, mutate, bom=False):
    import csv as _csv
    src = cases()["dlv3_same"]
    rows = read_lists(src, encoding="utf-8-sig")
    head, body = mutate(rows[0], rows[1:])
    p = tmp_path / f"ops_perf_results_{name}.csv"
    with p.open("w", newline="", encoding="utf-8-sig" if bom else "utf-8") as f:
        _csv.writer(f).writerows([head] + body)
    return p


def test_where_the_report_is_saner_than_the_oracle(db_url, tmp_path):
    """The tour's list of the report's deliberate differences from the oracle, each as the warehouse does it."""
    import json as _json
    import math

    def nan_kernels(h, body):
        k, t = h.index("DEVICE KERNEL DURATION [ns]"), h.index("OP TYPE")
        return h, [r if r[t] == "signpost" or i % 7 else r[:k] + ["nan"] + r[k + 1:] for i, r in enumerate(body)]
    wh = make_invoke(db_url)
    docs = {}
    for name, mutate, bom in (("nan", nan_kernels, False), ("bom", lambda h, b: (h, b), True),
                              ("header", lambda h, b: (h, []), False),
                              ("dup", lambda h, b: (h + ["OP CODE"], [r + ["X"] for r in b]), False)):
        p = _oracle_case(tmp_path, name, mutate, bom)
        assert wh("ingest", p).exit_code == 0, name
        out = tmp_path / f"{name}.json"
        assert wh("report", "latest", "-q", "--json", out).exit_code == 0
        docs[name] = _json.loads(out.read_text())
    eager = docs["nan"]["eager"]
    assert all(math.isfinite(v) for v in eager.values() if isinstance(v, float)), eager  # counted as 0
    assert docs["bom"]["columns"][0] == "OP CODE" and docs["bom"]["eager"]["ops"] > 0
    assert len(docs["header"]["columns"]) == len(docs["bom"]["columns"])
    assert docs["dup"]["columns"][-1] == "OP CODE" and len(docs["dup"]["columns"]) == len(docs["bom"]["columns"]) + 1


def test_check_racing_rm_reports_no_damage(db_url, monkeypatch):
    """`check` reads one snapshot: a run removed while it runs is not corruption (PostgreSQL said so 3 of 8 tries)."""
    import warehouse.runs.maintenance as mt
    from warehouse.runs.maintenance import check_warehouse, remove_runs
    wh = make_invoke(db_url)
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    assert wh("ingest", cases()["dlv3_same"]).exit_code == 0
    real = mt.check_rollups

    def racing(conn, step=None):
        other = open_db(db_url, create=False)
        remove_runs(other, [1])  # committed while check is half-way
        other.dispose()
        return real(conn, step)
    monkeypatch.setattr(mt, "check_rollups", racing)
    eng = open_db(db_url, create=False)
    assert check_warehouse(eng) == []
    eng.dispose()


def test_negative_zero_durations(db_url, tmp_path):
    """A '-0.0' kernel duration (tt-metal writes none): the group sums start at 0.0 as the oracle's do, so a key
    whose every kernel is -0.0 sums to 0.0 on both back ends; an op's own kernel_us in top_ops reads back as
    stored, -0.0 on PostgreSQL and 0.0 on SQLite (which reads -0.0 back as 0.0), where the oracle prints -0.0."""
    import json

    head = "OP CODE,OP TYPE,DEVICE KERNEL DURATION [ns],DEVICE FW DURATION [ns],OP TO OP LATENCY [ns],CORE COUNT"
    ops = ["Relu,tt_dnn_device,-0.0,5,0,64", "Matmul,tt_dnn_device,1500,2000,10,120"]
    body = ["eager,signpost,,,,", "c:l0,signpost,,,,", *ops, "eager_end,signpost,,,,", "trace,signpost,,,,", *ops,
            "trace_end,signpost,,,,"]
    f = tmp_path / "ops_perf_results_negzero.csv"
    f.write_text("\n".join([head, *body]) + "\n")
    wh = make_invoke(db_url)
    assert wh("ingest", f).exit_code == 0
    out = tmp_path / "r.json"
    assert wh("report", "latest", "-q", "--json", out).exit_code == 0
    doc = json.loads(out.read_text())
    relu = [r for r in doc["trace"]["by_op"] if r["key"] == "Relu"][0]
    assert json.dumps(relu["kernel_us"]) == "0.0"
    top = [r for r in doc["trace"]["top_ops"] if r["op"] == "Relu"][0]
    assert json.dumps(top["kernel_us"]) == ("0.0" if db_url.endswith(".db") else "-0.0")


def test_interned_values_get_the_ids_they_are_stored_with(db_url):
    """dialect.resolve_ids gives every key the id of its stored row: existing rows found, missing ones inserted
    (on SQLite with the next ids, given without reading them back) on both back ends; and on SQLite a row stored
    meanwhile by another writer under one of those keys (the insert then adds fewer rows than it was given) is
    read back, not given an id of ours."""
    from sqlalchemy import text

    from warehouse.store import dialect
    from warehouse.store import schema as t
    from warehouse.store.db import open_db, write_tx

    eng = open_db(db_url)

    def rows(keys: list[str]) -> dict[bytes, dict]:
        return {k.encode(): {"grouping": "layer", "key": k, "digest": k.encode()} for k in keys}

    def stored(c) -> dict[bytes, tuple]:
        return {bytes(d): (i, g, k)
                for i, g, k, d in c.execute(text("SELECT id, grouping, key, digest FROM rollup_key"))}
    with write_tx(eng) as c:
        first = dialect.resolve_ids(c, t.rollup_key, "digest", rows([f"a{i:04d}" for i in range(1200)]),
                                    also=("grouping", "key"))
        again = dialect.resolve_ids(c, t.rollup_key, "digest", rows([f"a{i:04d}" for i in range(0, 1500, 3)]),
                                    also=("grouping", "key"))
        assert first == {d: v for d, v in stored(c).items() if d in first}
        assert again == {d: v for d, v in stored(c).items() if d in again} and len(stored(c)) == 1300
    if dialect.name(eng.connect()) == "sqlite":
        with write_tx(eng) as c:
            real = c.exec_driver_sql

            def meanwhile(sql, params=None, *a, **k):  # (a row of key b0001 stored just before the insert)
                if sql.startswith("INSERT INTO rollup_key (id,"):
                    real("INSERT INTO rollup_key (grouping, key, digest) VALUES ('layer', 'b0001', ?)", (b"b0001",))
                return real(sql, params, *a, **k)
            c.exec_driver_sql = meanwhile
            got = dialect.resolve_ids(c, t.rollup_key, "digest", rows(["b0000", "b0001", "b0002"]),
                                      also=("grouping", "key"))
            del c.exec_driver_sql
            assert got == {d: v for d, v in stored(c).items() if d in got} and len(got) == 3
    eng.dispose()
