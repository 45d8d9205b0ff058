"""The hostile review's findings, one test (or more) each, numbered as in the issue: security and data loss,
hangs and unbounded memory, tracebacks and wrong answers, messages. Each ran against the code before the fix
and failed."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from conftest import PG_URL, make_invoke
from corpus import cases
from warehouse.cli import cli
from warehouse.store.db import open_db

pytestmark = pytest.mark.slow  # (the slow tier: memory bounds of big results)

HEAD = "OP CODE,OP TYPE,GLOBAL CALL COUNT,ATTRIBUTES,DEVICE KERNEL DURATION [ns],OP TO OP LATENCY [ns],CORE COUNT"
ROW = "Matmul,tt_dnn_device,{i},{{'a': 1; 'b': 2}},1000,50,64"


def _csv(path: Path, rows: int = 3, head: str = HEAD, row: str = ROW, nl: str = "\r\n") -> Path:
    path.write_text(nl.join([head] + [row.format(i=i) for i in range(rows)]) + nl, newline="")
    return path


def _count(url: str, sql: str):
    eng = open_db(url, create=False)
    with eng.connect() as c:
        v = c.execute(text(sql)).scalar()
    eng.dispose()
    return v


def _errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("Error: ")]


# ================================================================================ 1. `sql` on PostgreSQL
PG_ATTACKS = [
    "SET TRANSACTION READ WRITE; UPDATE run SET label='x'; COMMIT",
    "SELECT 1; COMMIT; BEGIN READ WRITE; UPDATE run SET label='x'; COMMIT;",
    "COPY (SELECT 1) TO PROGRAM 'touch {marker}'",
    "SELECT pg_read_file('/etc/hostname')",
    "SELECT * FROM pg_ls_dir('.')",
    "SELECT pg_terminate_backend(pg_backend_pid())",
    "SET default_transaction_read_only = off",
    "DO $$ BEGIN UPDATE run SET label = 'x'; END $$",
    "CALL nothing()",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "SELECT * FROM pg_settings",
    "SELECT lo_import('/etc/hostname')",
    "SELECT 1 INTO stolen",
    "SELECT * FROM run FOR UPDATE",
    "WITH x AS (UPDATE run SET label = 'x' RETURNING id) SELECT * FROM x",
    "SELECT query_to_xml('UPDATE run SET label = ''x''', true, true, '')",
]


@pytest.fixture(scope="module")
def pg_warehouse(tmp_path_factory):
    """One PostgreSQL warehouse with a labelled run, shared by the attack cases (none of them may change it)."""
    if not PG_URL:
        pytest.skip("needs WAREHOUSE_TEST_PG_URL (CI starts a server)")
    from conftest import _pg_database
    gen = _pg_database()
    url = next(gen)
    wh = make_invoke(url)
    assert wh("ingest", cases()["ttperfreport__bh20_oft_integral_image_trace"], "--label", "keep").exit_code == 0
    yield url, wh
    for _ in gen:
        pass


@pytest.mark.parametrize("attack", PG_ATTACKS)
def test_pg_sql_refuses_writes_and_server_access(pg_warehouse, tmp_path, attack):
    url, wh = pg_warehouse
    marker = tmp_path / "pwned"
    r = wh("sql", attack.format(marker=marker))
    assert r.exit_code == 2, r.output
    assert len(_errors(r.output)) == 1 and ("refused" in r.output or "read-only" in r.output), r.output
    assert not marker.exists()
    assert _count(url, "SELECT label FROM run") == "keep"
    assert _count(url, "SELECT COUNT(*) FROM op") == 21


def test_pg_sql_reads_still_work_and_time_out(pg_url):
    wh = make_invoke(pg_url)
    assert wh("ingest", cases()["ttperfreport__bh20_oft_integral_image_trace"]).exit_code == 0
    r = wh("sql", "EXPLAIN SELECT COUNT(*) FROM op")
    assert r.exit_code == 0 and "Aggregate" in r.output
    r = wh("sql", "SELECT pg_typeof(1), COUNT(*) AS n FROM op_detail", "--format", "csv")
    assert r.exit_code == 0 and r.output.splitlines()[1] == "integer,21"
    r = wh("sql", "--timeout", "0.5", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                                      "SELECT COUNT(*) FROM c")
    assert r.exit_code == 2 and "ran longer than 0.5 s" in r.output


def test_pg_create_reader_role(pg_url):
    db_url = pg_url
    wh = make_invoke(db_url)
    assert wh("ingest", cases()["ttperfreport__bh20_oft_integral_image_trace"]).exit_code == 0
    r = wh("db", "create-reader", "wh_reader_t")
    assert r.exit_code == 0, r.output
    reader_url = make_url(db_url).set(username="wh_reader_t").render_as_string(hide_password=False)
    reader = make_invoke(reader_url)
    r = reader("sql", "SELECT COUNT(*) AS n FROM op", "--format", "csv")
    assert r.exit_code == 0 and r.output.splitlines()[1] == "21", r.output
    # the role itself cannot write, whatever the client: a raw connection that asks for a read-write transaction
    eng = create_engine(reader_url)
    with eng.connect() as c:
        with pytest.raises(Exception) as e:
            c.exec_driver_sql("BEGIN READ WRITE")
            c.exec_driver_sql("UPDATE run SET label = 'x'")
        assert "permission denied" in str(e.value)
    eng.dispose()
    assert wh("db", "create-reader", "wh_reader_t").exit_code == 0  # again: refreshes, no error
    assert wh("db", "create-reader", "Bad-Name").exit_code == 2


# ================================================================================ 8. `sql` on SQLite
@pytest.mark.parametrize("stmt, refused", [
    ("ATTACH DATABASE '{path}' AS x", "ATTACH"),
    ("PRAGMA journal_mode = DELETE", "PRAGMA journal_mode"),
    ("SELECT load_extension('x')", "load_extension"),
    ("DELETE FROM op", "DELETE op"),
    ("VACUUM INTO '{path}'", ""),
])
def test_sqlite_sql_refuses_attach_and_writes(sqlite_db, tmp_path, stmt, refused):
    wh = make_invoke(sqlite_db)
    assert wh("ingest", cases()["ttperfreport__bh20_oft_integral_image_trace"]).exit_code == 0
    target = tmp_path / "elsewhere" / "created.db"
    target.parent.mkdir()
    r = wh("sql", stmt.format(path=target))
    assert r.exit_code == 2 and len(_errors(r.output)) == 1, r.output
    assert refused in r.output
    assert not target.exists()
    assert _count(sqlite_db, "SELECT COUNT(*) FROM op") == 21
    r = wh("sql", "PRAGMA table_info(run)")
    assert r.exit_code == 0 and "sha256" in r.output


# ================================================================================ 14. streaming, limits
def test_sql_streams_with_row_cap_and_time_limit(wh):
    assert wh("ingest", cases()["ttperfreport__bh20_oft_integral_image_trace"]).exit_code == 0
    r = wh("sql", "SELECT row_no FROM op ORDER BY row_no", "--format", "nl", "--max-rows", "5")
    assert r.exit_code == 0
    assert r.stdout.splitlines() == [f'{{"row_no": {i}}}' for i in (1, 2, 3, 4, 5)] or \
        len(r.stdout.splitlines()) == 5
    assert "stopped after 5 rows" in r.output
    r = wh("sql", "SELECT row_no FROM op ORDER BY row_no", "--format", "json", "--max-rows", "0")
    assert r.exit_code == 0 and len(__import__("json").loads(r.stdout)) == 21
    r = wh("sql", "--timeout", "0.5",
           "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c")
    assert r.exit_code == 2 and "ran longer than 0.5 s" in r.output


def test_sql_result_memory_does_not_follow_its_size(sqlite_db):
    """A result far larger than the row cap streams: rows are produced one batch at a time."""
    from warehouse.store.query import stream_sql
    wh = make_invoke(sqlite_db)
    assert wh("ingest", cases()["ttperfreport__bh20_oft_integral_image_trace"]).exit_code == 0
    eng = open_db(sqlite_db, readonly=True)
    with stream_sql(eng, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) "
                         "SELECT x FROM c", max_rows=None) as res:
        first = next(res.rows)
        assert first == (1,)  # the first row arrives before the 3 million are made
        n = 1 + sum(1 for _ in res.rows)
    assert n == 3_000_000


# ================================================================================ 2. copy and file names
@pytest.mark.parametrize("evil", ["absolute", "dotdot"])
def test_copy_never_builds_a_path_from_stored_data(tmp_path, db_url, evil):
    import tempfile
    import uuid
    src = str(tmp_path / "src.db")
    assert make_invoke(src)("ingest", cases()["ttperfreport__bh20_oft_integral_image_trace"]).exit_code == 0
    # where a path joined to copy's temporary folder would land: the file itself, or beside that folder
    victim = (tmp_path if evil == "absolute" else Path(tempfile.gettempdir())) / f"victim-{uuid.uuid4().hex}.txt"
    victim.write_text("precious")
    name = str(victim) if evil == "absolute" else f"../{victim.name}"
    con = sqlite3.connect(src)
    con.execute("UPDATE run SET file_name = ?", (name,))
    con.commit()
    con.close()
    try:
        r = CliRunner().invoke(cli, ["copy", "--from", src, "--to", db_url])
        assert r.exit_code == 0, r.output
        assert victim.read_text() == "precious"
    finally:
        victim.unlink(missing_ok=True)
    assert _count(db_url, "SELECT file_name FROM run") == name  # the run keeps its name, as data


# ================================================================================ 3. a file that changes
def _big(path: Path, rows: int = 12_000) -> Path:
    return _csv(path, rows)


@pytest.mark.parametrize("change", ["truncate", "append"])
def test_file_changed_during_ingest_is_refused(db_url, tmp_path, change):
    from warehouse.errors import InputError
    from warehouse.runs.ingest import ingest_file
    f = _big(tmp_path / "ops_perf_results_growing.csv")
    whole = f.read_bytes()
    eng = open_db(db_url)
    done = []

    def progress(_n: int) -> None:  # called after the first chunk is written
        if not done:
            done.append(1)
            if change == "truncate":
                with open(f, "r+b") as fh:
                    fh.truncate(len(whole) // 3)
            else:
                with open(f, "ab") as fh:
                    fh.write(b"Add,tt_dnn_device,1,x,1,1,1\r\n")
    with pytest.raises(InputError, match="changed while it was being read"):
        ingest_file(eng, f, progress=progress)
    assert done
    with eng.connect() as c:
        assert c.execute(text("SELECT COUNT(*) FROM run")).scalar() == 0
        assert c.execute(text("SELECT COUNT(*) FROM op")).scalar() == 0
    f.write_bytes(whole)  # the complete file then goes in, whole
    r = ingest_file(eng, f)
    assert not r.existing and r.ops == 12_000
    eng.dispose()


# ================================================================================ 4. PostgreSQL concurrency
# (tests/test_concurrency.py: test_ingest_with_readers_loses_nothing, repeated by .ci/run)


# ================================================================================ 5. export exactness
EXPORT_CASES = {
    "quoted_cells": HEAD + "\r\n" + '"Matmul","tt_dnn_device",1,x,1000,50,64\r\n',
    "quoted_header": HEAD.replace("OP CODE", '"OP CODE"') + "\r\nMatmul,tt_dnn_device,1,x,1000,50,64\r\n",
    "quote_inside": HEAD + "\r\n" + 'Matmul,"tt_dnn"_device,1,x,1000,50,64\r\n',
    "space_before_quote": HEAD + "\r\n" + 'Matmul, "tt_dnn_device",1,x,1000,50,64\r\n',
    "bare_cr_in_crlf": HEAD + "\r\n" + "Matmul,tt_dnn_device,1,x\r,1000,50,64\r\nAdd,tt_dnn_device,2,x,1,1,1\r\n",
    "quoted_bare_cr_in_crlf": HEAD + "\r\n" + 'Matmul,tt_dnn_device,1,"x\ry",1000,50,64\r\n',
    "needed_quotes": HEAD + "\r\n" + 'Matmul,tt_dnn_device,1,"a,b ""c""",1000,50,64\r\n',
}


@pytest.mark.parametrize("case", list(EXPORT_CASES))
def test_export_exact_is_true_only_when_it_is(wh, db_url, tmp_path, case):
    f = tmp_path / "ops_perf_results_x.csv"
    f.write_bytes(EXPORT_CASES[case].encode())
    r = wh("ingest", f)
    assert r.exit_code == 0, r.output
    out = tmp_path / "back.csv"
    assert wh("export", "1", "-o", out).exit_code == 0
    same = out.read_bytes() == f.read_bytes()
    exact = _count(db_url, "SELECT export_exact FROM run")
    assert bool(exact) == same, (case, exact, out.read_bytes(), f.read_bytes())
    if not same:
        assert "not the same bytes" in wh("runs", "--warnings").output
    if case in ("needed_quotes", "quoted_bare_cr_in_crlf"):
        assert same  # quotes that are needed round-trip exactly


# ================================================================================ 6. a stray quote
def test_stray_quote_names_the_row_where_it_opened(wh, db_url, tmp_path):
    rows = [ROW.format(i=i) for i in range(41)]
    rows[7] = rows[7].replace("tt_dnn_device", '"tt_dnn_device')
    f = tmp_path / "ops_perf_results_stray.csv"
    f.write_text("\r\n".join([HEAD] + rows) + "\r\n", newline="")
    r = wh("ingest", f)
    assert r.exit_code == 1
    errs = _errors(r.output)
    assert len(errs) == 1 and f"{f}: row 8: column 'OP TYPE': a quoted cell opens on line 9" in errs[0], errs
    assert "to the end of the file" in errs[0]
    assert _count(db_url, "SELECT COUNT(*) FROM run") == 0


# ================================================================================ 7. --db paths
@pytest.mark.parametrize("folder", ["q?uery", "h#sh", "pc%20t", "all?#%"])
def test_db_paths_with_url_characters(tmp_path, monkeypatch, folder):
    monkeypatch.chdir(tmp_path)
    (tmp_path / folder).mkdir()
    db = f"{folder}/w.db"
    r = CliRunner().invoke(cli, ["--db", db, "ingest", str(cases()["ttperfreport__bh20_oft_integral_image_trace"])])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder]  # nothing written beside it
    assert (tmp_path / folder / "w.db").exists()
    r = CliRunner().invoke(cli, ["--db", db, "sql", "SELECT COUNT(*) AS n FROM op", "--format", "csv"])
    assert r.exit_code == 0 and r.output.splitlines()[1] == "21", r.output
    r = CliRunner().invoke(cli, ["--db", db, "sql", "DELETE FROM op"])
    assert r.exit_code == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder]


# ================================================================================ 9. glob characters
def test_existing_path_with_glob_characters_is_literal(wh, db_url, tmp_path):
    lit = _csv(tmp_path / "ops_perf_results_[1].csv", 3)
    _csv(tmp_path / "ops_perf_results_1.csv", 5)
    r = wh("ingest", lit)
    assert r.exit_code == 0, r.output
    assert _count(db_url, "SELECT file_name FROM run") == "ops_perf_results_[1].csv"
    assert _count(db_url, "SELECT op_count FROM run") == 3
    r = wh("ingest", str(tmp_path / "ops_perf_results_?.csv"))  # not a file: a glob
    assert r.exit_code == 0 and _count(db_url, "SELECT COUNT(*) FROM run") == 2


# ================================================================================ 10. run ids
def test_run_ids_are_never_reused(wh, db_url, tmp_path):
    a, b = _csv(tmp_path / "ops_perf_results_a.csv", 2), _csv(tmp_path / "ops_perf_results_b.csv", 3)
    assert wh("ingest", a).exit_code == 0
    assert wh("rm", "--yes", "1").exit_code == 0
    r = wh("ingest", b)
    assert ": run 2:" in r.output, r.output


# ================================================================================ 11. hangs
def _cli_subprocess(db: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "warehouse", "--db", db, *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def test_fifo_and_devices_never_hang(tmp_path):
    db = str(tmp_path / "w.db")
    fifo = tmp_path / "ops_perf_results_fifo.csv"
    os.mkfifo(fifo)
    r = _cli_subprocess(db, "ingest", str(fifo))
    assert r.returncode == 1 and "is a FIFO (named pipe)" in r.stderr, r.stderr
    r = _cli_subprocess(db, "ingest", "/dev/zero")
    assert r.returncode == 1 and "is a device" in r.stderr, r.stderr
    folder = tmp_path / "nightly"
    folder.mkdir()
    os.mkfifo(folder / "ops_perf_results_pipe.csv")
    shutil.copy(cases()["ttperfreport__bh20_oft_integral_image_trace"], folder / "ops_perf_results_2026_01_01.csv")
    os.mkfifo(folder / "profile_log_device.csv")
    r = _cli_subprocess(db, "ingest", str(folder))
    assert r.returncode == 1 and "is a FIFO" in r.stderr
    assert "run 1: 21 ops" in r.stdout  # the regular file still went in, its device log (a FIFO) ignored


def test_many_unclosed_markers_and_unmatched_ends_match_correctly():
    """Markers that never close and `_end`s without a start: each close finds its start by name (O(1)); the
    nesting is right however many are open."""
    from warehouse.capture.signposts import Attribution
    a = Attribution()
    for i in range(50_000):
        a.signpost(2 * i, f"marker {i}")
        a.signpost(2 * i + 1, f"nothing {i}_end")
    a.signpost(200_000, "outer started")
    a.signpost(200_001, "inner")
    a.signpost(200_002, "inner_end")
    ev = a.signpost(200_003, "outer finished")
    assert [(s.name, s.start_row, s.end_row) for s in ev.closed] == [("outer", 200_000, 200_003)]
    spans, warnings = a.finish()
    assert spans == [] and warnings == []


# ================================================================================ 12. long lines
@pytest.mark.parametrize("where", ["cell", "header"])
def test_a_line_longer_than_the_bound_is_an_error(wh, db_url, tmp_path, where):
    big = "x" * (17 * 1024 * 1024)
    f = tmp_path / "ops_perf_results_long.csv"
    if where == "cell":
        f.write_text(HEAD + "\r\n" + ROW.format(i=1).replace("{'a'", big) + "\r\n", newline="")
    else:
        f.write_text(HEAD + "," + big + "\r\n" + ROW.format(i=1) + "\r\n", newline="")
    r = wh("ingest", f)
    assert r.exit_code == 1
    errs = _errors(r.output)
    assert len(errs) == 1 and "is longer than 16 MiB" in errs[0], r.output
    assert (": row 1:" if where == "cell" else ": row 0:") in errs[0]


# ================================================================================ 13. distinct static cells
def test_distinct_static_cells_on_every_row(wh, db_url, tmp_path, monkeypatch):
    from warehouse.store import interning
    monkeypatch.setattr(interning.Interner, "MAX_CACHED", 50)  # caches are cleared again and again
    long = "L" * 60
    f = tmp_path / "ops_perf_results_distinct.csv"
    f.write_text("\r\n".join([HEAD] + [f"Op{i % 7},tt_dnn_device,{i},{long}{i},5,1,{i}" for i in range(12_000)])
                 + "\r\n", newline="")
    r = wh("ingest", f)
    assert r.exit_code == 0, r.output
    assert _count(db_url, "SELECT COUNT(*) FROM cell_tuple") == 12_000
    assert _count(db_url, "SELECT COUNT(*) FROM text_value") == 12_000
    out = tmp_path / "back.csv"
    assert wh("export", "1", "-o", out).exit_code == 0 and out.read_bytes() == f.read_bytes()
    # a second file sharing half the tuples reuses them
    g = tmp_path / "ops_perf_results_distinct2.csv"
    g.write_text("\r\n".join([HEAD] + [f"Op{i % 7},tt_dnn_device,{i},{long}{i},5,1,{i}" for i in range(6_000, 18_000)])
                 + "\r\n", newline="")
    assert wh("ingest", g).exit_code == 0
    assert _count(db_url, "SELECT COUNT(*) FROM cell_tuple") == 18_000


# ================================================================================ 15. frequencies
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "0", "-5"])
def test_bad_freq_option(wh, db_url, corpus_copy, value):
    r = wh("ingest", corpus_copy("ttperfreport__bh20_oft_integral_image_trace"), "--freq-mhz", value)
    assert r.exit_code == 2 and "--freq-mhz" in r.output and "expected a chip frequency" in r.output, r.output
    assert "Traceback" not in r.output


def test_implausible_device_log_frequency(wh, db_url, tmp_path):
    f = tmp_path / "ops_perf_results_x.csv"
    shutil.copy(cases()["ttperfreport__bh20_oft_integral_image_trace"], f)
    (tmp_path / "profile_log_device.csv").write_text("ARCH: blackhole, CHIP_FREQ[MHz]: " + "9" * 400 + "\n")
    r = wh("ingest", f)
    assert r.exit_code == 1 and "profile_log_device.csv: row 1: column 'CHIP_FREQ[MHz]'" in r.output, r.output
    r = wh("ingest", f, "--freq-mhz", "1000")  # the option wins; the log is not needed
    assert r.exit_code == 0, r.output
    assert _count(db_url, "SELECT freq_mhz FROM run") == 1000.0


# ================================================================================ 16. both back ends accept
def test_same_files_on_both_back_ends(wh, db_url, tmp_path):
    head = HEAD + ",DEVICE ID,DEVICE ARCH,INPUT_0_MEMORY"
    rows = [ROW.format(i=1) + ",0,blackhole,DRAM",
            ROW.format(i=2).replace(",64", ",3000000000") + ",4294967296," + "A" * 40 + ",DRAM",
            ROW.format(i=3).replace("Matmul", "Mat\x00mul") + ",1,blackhole,DR\x00AM"]
    f = tmp_path / "ops_perf_results_odd.csv"
    f.write_text("\r\n".join([head] + rows) + "\r\n", newline="")
    (tmp_path / "profile_log_device.csv").write_text("ARCH: " + "B" * 40 + ", CHIP_FREQ[MHz]: 1000\n")
    r = wh("ingest", f, "--tag", "k" * 200 + "=v")
    assert r.exit_code == 0, r.output
    assert _count(db_url, "SELECT COUNT(*) FROM op WHERE device_id IS NULL AND cores IS NULL") == 1
    assert _count(db_url, "SELECT arch FROM run") == "B" * 40
    assert _count(db_url, "SELECT COUNT(*) FROM op_code WHERE name = 'Mat\ufffdmul'") == 1
    warn = wh("runs", "--warnings").output
    assert "NUL bytes" in warn and "not finite numbers" in warn
    assert wh("report", "1", "--quiet").exit_code == 0


def test_copy_of_nul_rows_to_either_back_end(tmp_path, db_url):
    src = str(tmp_path / "src.db")
    f = _csv(tmp_path / "ops_perf_results_nul.csv", 3, row=ROW.replace("Matmul", "Ma\x00t"))
    assert make_invoke(src)("ingest", f).exit_code == 0
    r = CliRunner().invoke(cli, ["copy", "--from", src, "--to", db_url])
    assert r.exit_code == 0, r.output


def test_symlink_loop_and_non_utf8_names(wh, db_url, tmp_path):
    folder = tmp_path / "nightly"
    (folder / "sub").mkdir(parents=True)
    os.symlink(folder, folder / "sub" / "loop")  # a folder link back up: not followed
    os.symlink(folder / "self.csv", folder / "self.csv")  # a link to itself
    shutil.copy(cases()["ttperfreport__bh20_oft_integral_image_trace"], folder / "sub" / "ops_perf_results_a.csv")
    odd = os.fsencode(str(folder)) + b"/ops_perf_results_\xff\xfe.csv"
    with open(odd, "wb") as fh:
        fh.write(_csv(tmp_path / "x.csv", 2).read_bytes())
    r = wh("ingest", folder)
    assert r.exit_code == 0, r.output
    assert _count(db_url, "SELECT COUNT(*) FROM run") == 2
    assert _count(db_url, "SELECT COUNT(*) FROM run WHERE file_name = 'ops_perf_results_\ufffd\ufffd.csv'") == 1
    r = wh("ingest", folder / "self.csv")
    assert r.exit_code == 1 and "symbolic link loop" in r.output


@pytest.mark.parametrize("where", ["text", "devnull", "folder"])
def test_db_that_is_not_a_warehouse(tmp_path, where):
    path = {"text": tmp_path / "notes.txt", "devnull": Path("/dev/null"), "folder": tmp_path}[where]
    if where == "text":
        path.write_text("hello, not a database\n" * 100)
    for args in (["runs"], ["ingest", str(cases()["ttperfreport__bh20_oft_integral_image_trace"])],
                 ["sql", "SELECT 1"]):
        r = CliRunner().invoke(cli, ["--db", str(path), *args])
        assert r.exit_code in (1, 2) and len(_errors(r.output)) == 1, r.output
        assert "Traceback" not in r.output
    if where == "text":
        assert path.read_text().startswith("hello")


def test_unknown_and_future_revisions(wh, db_url):
    assert wh("db", "upgrade").exit_code == 0
    for bad in ("9999", "nonsense", "-1", "0001:0002"):
        r = wh("db", "upgrade", "--revision", bad)
        assert r.exit_code == 2 and "unknown revision" in r.output, r.output
    eng = open_db(db_url)
    with eng.begin() as c:
        c.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    eng.dispose()
    for args in (["runs"], ["db", "upgrade"], ["report", "1"]):
        r = wh(*args)
        assert r.exit_code == 1 and "revision '0099', which this version does not know" in r.output, r.output
        assert "run `warehouse db upgrade`" not in r.output


def test_bad_run_ids_and_outputs(wh, db_url, tmp_path):
    assert wh("ingest", cases()["ttperfreport__bh20_oft_integral_image_trace"]).exit_code == 0
    for ref in ("99999999999999999999999", "١", "1_0", "-1", " 1x"):
        r = wh("report", ref)
        assert r.exit_code == 2 and len(_errors(r.output)) == 1, (ref, r.output)
    r = wh("report", "1", "--json", tmp_path / "missing" / "r.json")
    assert r.exit_code == 2 and "folder" in r.output and "does not exist" in r.output
    # a full disk is the disk's problem, not a usage error: exit 1
    r = wh("report", "1", "--json", "/dev/full", "--quiet")
    assert r.exit_code == 1 and "No space left on device" in r.output
    r = wh("export", "1", "-o", "/dev/full")
    assert r.exit_code == 1 and "No space left on device" in r.output


def test_trend_plot_with_dollar_keys(wh, tmp_path):
    pytest.importorskip("matplotlib")
    f = tmp_path / "ops_perf_results_2026_01_01_00_00_00.csv"
    f.write_text("\r\n".join([HEAD, "m:$x^{$,signpost,,,,,", ROW.format(i=1).replace("Matmul", "$\\frac{a$")])
                 + "\r\n", newline="")
    assert wh("ingest", f).exit_code == 0
    r = wh("trend", "--by", "op-code", "--plot", tmp_path / "t.png")
    assert r.exit_code == 0, r.output
    r = wh("trend", "--by", "block", "--plot", tmp_path / "t.svg")
    assert r.exit_code == 0, r.output


def test_other_files_are_still_tried(wh, db_url, tmp_path):
    good = _csv(tmp_path / "ops_perf_results_good.csv", 2)
    gz = tmp_path / "ops_perf_results_packed.csv"
    gz.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 40)
    r = wh("ingest", gz, tmp_path / "missing.csv", good)
    assert r.exit_code == 1
    errs = _errors(r.output)
    assert len(errs) == 2 and "gzip-compressed; decompress it first (gunzip FILE)" in errs[0], r.output
    assert _count(db_url, "SELECT COUNT(*) FROM run") == 1


# ================================================================================ 17. silent or wrong
def test_folders_with_nothing_to_ingest(wh, tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.csv").write_text("x\n")
    r = wh("ingest", empty)
    assert r.exit_code == 1 and "holds no file named ops_perf_results*.csv" in r.output and "--glob" in r.output
    r = wh("ingest", empty, "--glob", "*.csv")  # widened: the file is found (and is not a capture)
    assert r.exit_code == 1 and "no 'OP CODE' or 'OP NAME' column" in r.output
    r = wh("ingest", str(tmp_path / "nothing_*.csv"))
    assert r.exit_code == 1 and "matches no file" in r.output
    # an unreadable sub-folder (root reads everything, so the walk is told it cannot)
    nightly = tmp_path / "nightly"
    (nightly / "locked").mkdir(parents=True)
    _csv(nightly / "ops_perf_results_a.csv", 2)
    real_scandir = os.scandir

    def scandir(p="."):
        if str(p).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(p))
        return real_scandir(p)
    monkeypatch.setattr(os, "scandir", scandir)
    r = wh("ingest", nightly)
    assert r.exit_code == 1 and "locked: folder cannot be read (Permission denied)" in r.output, r.output
    assert "run 1: 2 ops" in r.output


def test_rm_counts_each_run_once(wh, tmp_path):
    assert wh("ingest", _csv(tmp_path / "ops_perf_results_a.csv", 2)).exit_code == 0
    r = wh("rm", "1", "1", "--yes")
    assert r.exit_code == 0 and r.output.strip() == "deleted 1 run(s): 1"


def test_compare_and_history_arguments(wh, tmp_path):
    a = wh("ingest", cases()["dlv3_same"])
    b = wh("ingest", cases()["oft2025_noise"])
    assert a.exit_code == b.exit_code == 0
    r = wh("compare", "1", "2", "--by", "section")
    assert r.exit_code == 0 and [ln.split()[0] for ln in r.stdout.splitlines()[3:]] == ["total"], r.output
    r = wh("compare", "1", "2", "--section", "nosuch")
    assert r.exit_code == 2 and "--section 'nosuch': no such section" in r.output
    r = wh("regressions", "--section", "trcae")
    assert r.exit_code == 2 and "no such section" in r.output
    for args in (["trend", "--last", "-3"], ["trend", "--top", "0"], ["trend", "--top", "-1"],
                 ["compare", "1", "2", "--top", "-1"], ["regressions", "--threshold", "nan"],
                 ["regressions", "--threshold", "-5%"], ["regressions", "--min-us", "nan"],
                 ["regressions", "--last", "0"], ["ingest", "x.csv", "--tag", "k=1", "--tag", "k=2"]):
        r = wh(*args)
        assert r.exit_code == 2, (args, r.output)
        assert "Traceback" not in r.output


# ================================================================================ 18. messages
def test_database_errors_keep_their_own_message():
    import sqlite3 as s3

    from sqlalchemy.exc import OperationalError

    from warehouse.store import dialect

    def err(msg: str) -> OperationalError:
        return OperationalError("INSERT", {}, s3.OperationalError(msg))
    assert "stayed locked" in dialect.explain(err("database is locked"))
    assert "permissions" in dialect.explain(err("attempt to write a readonly database"))
    assert "disk I/O error" in dialect.explain(err("disk I/O error"))
    assert "disk is full" in dialect.explain(err("database or disk is full"))
    assert "corrupt" in dialect.explain(err("file is not a database"))
    assert dialect.is_retryable(err("database is locked")) and not dialect.is_retryable(err("disk I/O error"))


def test_ingest_reports_the_real_database_error(wh, db_url, tmp_path, monkeypatch):
    import sqlite3 as s3

    from sqlalchemy.exc import OperationalError

    from warehouse.runs import ingest
    f = _csv(tmp_path / "ops_perf_results_a.csv", 2)
    assert wh("db", "upgrade").exit_code == 0

    def boom(*_a, **_k):
        raise OperationalError("INSERT", {}, s3.OperationalError("disk I/O error"))
    monkeypatch.setattr(ingest, "_ingest_once", boom)
    r = wh("ingest", f)
    assert r.exit_code == 1 and "a disk I/O error in the warehouse" in r.output and "locked" not in r.output


def test_multi_line_database_messages_are_one_line():
    from warehouse.cli.base import one_line
    assert one_line("insert violates foreign key\nDETAIL:  Key (run_id)=(9) is not present.\nHINT: x") == \
        "insert violates foreign key; DETAIL:  Key (run_id)=(9) is not present.; HINT: x"
