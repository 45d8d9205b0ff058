"""Schema lifecycle: the stairway, alembic check, refusing a database behind head, the wheel carrying migrations."""
from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing, contextmanager
import sys
from pathlib import Path

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from click.testing import CliRunner
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import make_url

from conftest import make_invoke
from corpus import cases
from warehouse.cli import cli
from warehouse.store.db import alembic_config, downgrade, head_revision, make_engine, open_db, resolve_url, upgrade
from warehouse.store.views import VIEW_NAMES

pytestmark = pytest.mark.slow  # (the slow tier: every migration against stored data)

ROOT = Path(__file__).resolve().parent.parent


def revisions() -> list[str]:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def test_revision_files_are_named_and_reversible():
    for f in (ROOT / "warehouse" / "migrations" / "versions").glob("0*.py"):
        assert f.name[:4].isdigit() and f.name[4] == "_"
        src = f.read_text()
        assert "def downgrade() -> None:\n    pass" not in src


def test_stairway(empty_db_url):
    """Every revision upgrades, downgrades and upgrades again."""
    engine = make_engine(resolve_url(empty_db_url))
    revs = revisions()
    for i, rev in enumerate(revs):
        upgrade(engine, rev)
        downgrade(engine, revs[i - 1] if i else "base")
        upgrade(engine, rev)
    assert set(VIEW_NAMES) <= set(inspect(engine).get_view_names())
    downgrade(engine, "base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    assert not inspect(engine).get_view_names()
    engine.dispose()


def test_alembic_check(wh, db_url):
    assert wh("db", "upgrade").exit_code == 0
    r = wh("db", "check")
    assert r.exit_code == 0, r.output
    assert "schema matches" in r.output
    url = resolve_url(db_url)
    command.check(alembic_config(url))  # raises when the models and the migrations differ
    assert wh("db", "current").output.startswith(f"{head_revision()} (head {head_revision()})")


def test_behind_head_is_refused_then_upgraded_with_data(empty_db_url):
    wh = make_invoke(empty_db_url)
    engine = make_engine(resolve_url(empty_db_url))
    upgrade(engine, revisions()[0])
    engine.dispose()
    r = wh("runs")
    assert r.exit_code == 1
    assert r.output.startswith("Error: ") and "`warehouse db upgrade`" in r.output
    assert wh("db", "current").output.startswith(f"{revisions()[0]} (head")


@pytest.mark.parametrize("case", ["dlv3_same", "ttperfreport__ops_perf_results_2025_09_18_11_39_20"])
def test_upgrade_keeps_runs(db_url, case, tmp_path):
    """A run ingested at head, taken down to the first revision and up again, reports and exports the same."""
    from click.testing import CliRunner
    from warehouse.cli import cli

    def inv(*a):
        return CliRunner().invoke(cli, ["--db", db_url, *map(str, a)], catch_exceptions=False)
    assert inv("ingest", cases()[case]).exit_code == 0
    before = inv("report", "1", "--json", tmp_path / "a.json")
    engine = make_engine(resolve_url(db_url))
    with engine.connect() as c:
        occ = c.execute(text("SELECT id, occurrence FROM op ORDER BY id")).all()
    downgrade(engine, revisions()[0])
    upgrade(engine, "head")
    with engine.connect() as c:
        assert c.execute(text("SELECT id, occurrence FROM op ORDER BY id")).all() == occ
    engine.dispose()
    after = inv("report", "1", "--json", tmp_path / "b.json")
    a, b = json.loads((tmp_path / "a.json").read_text()), json.loads((tmp_path / "b.json").read_text())
    if db_url.startswith("postgresql"):
        # PostgreSQL may store rewritten rows in another physical order, and float sums then differ in the last
        # bit: the contract's rule (one unit of the last printed decimal) is what holds there.
        from parity import diff
        problems: list[str] = []
        diff(a, b, "", problems)
        assert not problems, problems
    else:
        assert after.output == before.output
        assert a == b
    assert inv("export", "1", "-o", tmp_path / "x.csv").exit_code == 0
    assert (tmp_path / "x.csv").read_bytes() == cases()[case].read_bytes()


def test_new_database_is_created_at_head(sqlite_db):
    engine = open_db(sqlite_db)
    with engine.connect() as c:
        assert c.execute(text("SELECT version_num FROM alembic_version")).scalar() == head_revision()
        assert c.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    engine.dispose()


def test_wheel_carries_migrations(tmp_path):
    """Build the wheel, install it into a bare folder, and ingest from another directory."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(wheels), str(ROOT)], check=True)
    target = tmp_path / "site"
    whl = next(wheels.glob("*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(whl)],
                   check=True)
    assert (target / "warehouse" / "migrations" / "versions" / "0001_initial_schema.py").exists()
    work = tmp_path / "elsewhere"
    work.mkdir()
    import os
    env = {**os.environ, "PYTHONPATH": str(target)}
    p = subprocess.run([sys.executable, "-m", "warehouse", "ingest", str(cases()["dlv3_same"])], cwd=work,
                       env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "run 1: 774 ops" in p.stdout
    p = subprocess.run([sys.executable, "-c", "import warehouse; print(warehouse.__file__)"], cwd=work, env=env,
                       capture_output=True, text=True)
    assert p.stdout.startswith(str(target))
    assert (work / "warehouse.db").exists()


def test_fast_head_is_alembics_head():
    from warehouse.store.db import head_revision_fast
    assert head_revision_fast() == head_revision()
    assert revisions() == [f"{i:04d}" for i in range(1, len(revisions()) + 1)]


def _assert_layer_op_codes_as_computed(engine, stored: list) -> None:
    """``stored`` (rows of the old rollup table, grouping layer/op-code) equal to what the head computes when a
    command asks (warehouse.analysis.rollups.computed_rows)."""
    from warehouse.registry.measures import GROUPINGS
    from warehouse.analysis.rollups import computed_rows

    grouping = next(g for g in GROUPINGS if g.key == "layer/op-code")
    want = []
    with engine.connect() as c:
        runs = [r for (r,) in c.execute(text("SELECT id FROM run ORDER BY id"))]
        for sec in sorted({r[1] for r in stored}):
            want += [(r[0], sec, "layer/op-code", *r[1:5], r[5], r[7], r[9], r[11])
                     for r in computed_rows(c, runs, sec, grouping)]
    assert len(stored) > 50
    assert sorted(want, key=lambda r: r[:5]) == sorted(((*r[:7], *r[7:]) for r in stored), key=lambda r: r[:5])


def test_upgrade_rebuilds_rollups_and_check_guards_them(wh, db_url):
    """Rollups are written at ingest; a warehouse from before them (revision 0004) gets the same rollups from
    `db upgrade`; `warehouse check` fails when a rollup disagrees with its ops."""
    for case in ("clip_replays3", "oft_mismatch"):
        assert wh("ingest", cases()[case]).exit_code == 0
    engine = make_engine(resolve_url(db_url))
    cols = "run_id, section, grouping, key, device, iterations, ops, kernel_us, op2op_us, fw_us, span_us"
    with engine.connect() as c:
        at_ingest = c.execute(text(f"SELECT {cols} FROM rollup ORDER BY run_id, section, grouping, key, device")).all()
    assert len(at_ingest) > 100
    # before 0011, `rollup` was a table of its own (keys as text, times in us): down and up again gives the same
    downgrade(engine, "0010")
    with engine.connect() as c:
        assert "rollup" in inspect(c).get_table_names() and "rollup_row" not in inspect(c).get_table_names()
        old = c.execute(text(f"SELECT {cols} FROM rollup ORDER BY run_id, section, grouping, key, device")).all()
    # (0014 stopped storing the layer / op code rollups: its downgrade stores them again, as computed when asked)
    assert [r[:7] for r in old if r[2] != "layer/op-code"] == [r[:7] for r in at_ingest]
    _assert_layer_op_codes_as_computed(engine, [r for r in old if r[2] == "layer/op-code"])
    downgrade(engine, "0004")
    with engine.connect() as c:
        assert "rollup" not in inspect(c).get_table_names()
    engine.dispose()
    r = wh("db", "upgrade")
    assert r.exit_code == 0, r.output
    engine = make_engine(resolve_url(db_url))
    with engine.connect() as c:
        rebuilt = c.execute(text(f"SELECT {cols} FROM rollup ORDER BY run_id, section, grouping, key, device")).all()
    assert [r[:7] for r in rebuilt] == [r[:7] for r in at_ingest]
    for a, b in zip(rebuilt, at_ingest):
        for x, y in zip(a[7:], b[7:]):
            assert (x is None and y is None) or x == pytest.approx(y, rel=1e-9)
    assert wh("check").exit_code == 0
    with engine.begin() as c:
        c.execute(text("UPDATE rollup_row SET kernel_ns = kernel_ns * 1.01 WHERE run_id = 2 AND key_id IN "
                       "(SELECT id FROM rollup_key WHERE grouping = 'block')"))
    engine.dispose()
    r = wh("check")
    assert r.exit_code == 1 and "run 2:" in r.output and "rollup rows disagree with the ops" in r.output, r.output


def test_rollup_keys_are_found_by_their_digest(wh, db_url, tmp_path):
    """Revision 0016 gives stored keys their digest; a new night of the same model finds every key by it (no
    key twice); `warehouse check` names a key whose digest is not its texts'."""
    from warehouse.store.dialect import key_digest

    src = cases()["clip_replays3"]
    assert wh("ingest", src).exit_code == 0
    engine = make_engine(resolve_url(db_url))
    with engine.connect() as c:
        keys = c.execute(text("SELECT id, grouping, key FROM rollup_key ORDER BY id")).all()
    assert len(keys) > 50
    downgrade(engine, "0015")
    with engine.connect() as c:
        assert "digest" not in {col["name"] for col in inspect(c).get_columns("rollup_key")}
    engine.dispose()
    assert wh("db", "upgrade").exit_code == 0
    engine = make_engine(resolve_url(db_url))
    with engine.connect() as c:
        got = c.execute(text("SELECT id, grouping, key, digest FROM rollup_key ORDER BY id")).all()
    assert [r[:3] for r in got] == keys and all(bytes(r[3]) == key_digest(r[1], r[2]) for r in got)
    night = tmp_path / src.name
    night.write_bytes(src.read_bytes() + b"\r\n")  # the same model, another file
    r = wh("ingest", night)
    assert r.exit_code == 0, r.output
    with engine.begin() as c:
        assert c.execute(text("SELECT COUNT(*) FROM rollup_key")).scalar() == len(keys)
        assert c.execute(text("SELECT COUNT(DISTINCT run_id) FROM rollup_row")).scalar() == 2
        c.execute(text("UPDATE rollup_key SET digest = :d WHERE id = :i"), {"d": b"\0" * 8, "i": keys[3][0]})
    engine.dispose()
    r = wh("check")
    assert r.exit_code == 1 and "1 rollup key(s) whose digest is not their texts'" in r.output, r.output


def test_report_parts_stored_rebuilt_by_upgrade_and_guarded_by_check(wh, db_url, tmp_path):
    from warehouse.capture.packing import unpack_text

    """`report` reads the parts stored at ingest; a warehouse from before them (revision 0006) gets the same
    parts from `db upgrade`; `warehouse check` fails when they disagree with the ops."""
    for case in ("clip_replays3", "oft_mismatch"):
        assert wh("ingest", cases()[case]).exit_code == 0
    engine = make_engine(resolve_url(db_url))
    with engine.connect() as c:
        at_ingest = c.execute(text("SELECT run_id, doc FROM run_report ORDER BY run_id")).all()
    assert [r[0] for r in at_ingest] == [1, 2]
    before = wh("report", "2", "--json", tmp_path / "a.json")
    downgrade(engine, "0006")
    with engine.connect() as c:
        assert "run_report" not in inspect(c).get_table_names()
    engine.dispose()
    assert wh("db", "upgrade").exit_code == 0
    engine = make_engine(resolve_url(db_url))
    with engine.connect() as c:
        assert c.execute(text("SELECT run_id, doc FROM run_report ORDER BY run_id")).all() == at_ingest
    assert wh("check").exit_code == 0
    after = wh("report", "2", "--json", tmp_path / "b.json")
    assert after.output == before.output and (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
    # the report is the stored document: a tampered one shows in `report`, and `check` names it
    with engine.connect() as c:
        packed, size = c.execute(text("SELECT doc, raw_size FROM run_report WHERE run_id = 2")).one()
    assert size > len(packed) or not db_url.endswith(".db")  # (packed on SQLite; PostgreSQL compresses it itself)
    doc = json.loads(unpack_text(packed, size))
    doc["trace"]["kernel_sum_us"] += 1
    with engine.begin() as c:  # (stored as it is, uncompressed: the sqlar convention reads both)
        raw = json.dumps(doc).encode()
        c.execute(text("UPDATE run_report SET doc = :d, raw_size = :n WHERE run_id = 2"), {"d": raw, "n": len(raw)})
    engine.dispose()
    assert f"kernel {doc['trace']['kernel_sum_us']:.1f} us" in wh("report", "2").output
    r = wh("check")
    assert r.exit_code == 1 and "run 2: the stored report disagrees with its ops (first: trace)" in r.output, r.output


@contextmanager
def _copy_of(db_url: str, tmp_path: Path, name: str) -> Iterator[str]:
    """A copy of the warehouse ``db_url`` as it is now (no connection may be open on it), dropped after."""
    if not db_url.startswith("postgresql"):
        dst = tmp_path / f"{name}.db"
        with closing(sqlite3.connect(db_url)) as src, closing(sqlite3.connect(dst)) as out:
            src.backup(out)  # (the WAL's pages too)
        yield str(dst)
        return
    url = make_url(db_url)
    admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    copy = f"{url.database}_{name}"
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{copy}" TEMPLATE "{url.database}"'))
    try:
        yield url.set(database=copy).render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{copy}" WITH (FORCE)'))
        admin.dispose()


def test_every_earlier_revision_upgrades_with_data(db_url, tmp_path):
    """For each earlier revision: runs stored, the database taken down to it, then up to head: every run's
    report and export are unchanged. The database goes down one revision at a time, and a copy of it at each
    revision goes up to head (each downgrade runs once, each upgrade path from every revision once)."""
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    revs = [r.revision for r in reversed(list(script.walk_revisions()))]

    def inv(url, *a):
        return CliRunner().invoke(cli, ["--db", url, *map(str, a)], catch_exceptions=False)  # (bytes out: export)
    names = ["dlv3_same", "clip_replays3", "ttperfreport__ops_perf_results_2025_09_18_11_39_20"]
    for n in names:
        assert inv(db_url, "ingest", cases()[n], "--tag", f"case={n}").exit_code == 0
    before = {}
    for rid in range(1, len(names) + 1):
        inv(db_url, "report", rid, "--json", tmp_path / f"r{rid}.json", "-q")
        before[rid] = (json.loads((tmp_path / f"r{rid}.json").read_text()), inv(db_url, "export", rid).stdout_bytes)
    for rev in reversed(revs[:-1]):
        engine = make_engine(resolve_url(db_url))
        downgrade(engine, rev)
        engine.dispose()
        with _copy_of(db_url, tmp_path, f"at_{rev}") as url:
            engine = make_engine(resolve_url(url))
            upgrade(engine, "head")
            engine.dispose()
            for rid, (rep, csv_bytes) in before.items():
                inv(url, "report", rid, "--json", tmp_path / "now.json", "-q")
                now = json.loads((tmp_path / "now.json").read_text())
                if url.startswith("postgresql"):
                    from parity import diff
                    problems: list[str] = []
                    diff(rep, now, "", problems)
                    assert not problems, (rev, rid, problems)
                else:
                    assert now == rep, (rev, rid)
                assert inv(url, "export", rid).stdout_bytes == csv_bytes, (rev, rid)
            if rev == revs[0]:  # (up from the first revision: the whole way)
                assert inv(url, "check").exit_code == 0


def test_a_new_warehouse_is_created_in_a_fork_that_loads_alembic_for_it(tmp_path):
    """An ingest into a new warehouse never loads Alembic and the migrations itself (19 MiB of its memory budget):
    the schema is made by a forked child. A database only this process can see (SQLite in memory) is made here."""
    probe = ("import sys\nfrom sqlalchemy import text\nfrom warehouse.store.db import open_db, head_revision_fast\n"
             "e = open_db(sys.argv[1])\n"
             "with e.connect() as c:\n"
             "    rev = c.execute(text('SELECT version_num FROM alembic_version')).scalar()\n"
             "print(rev == head_revision_fast(), 'alembic' in sys.modules)\n")
    for db, loaded in ((str(tmp_path / "new.db"), "False"), ("sqlite://", "True")):
        out = subprocess.run([sys.executable, "-c", probe, db], capture_output=True, text=True, check=True)
        assert out.stdout.split() == ["True", loaded], (db, out.stdout, out.stderr)


def test_a_failed_creation_fork_leaves_it_to_this_process(tmp_path, monkeypatch):
    """When the child fails (or nothing may be forked), the schema is created here: the same warehouse."""
    import warehouse.store.db as dbmod

    class Failed:
        def __init__(self, fn):
            pass

        def result(self):
            return None
    monkeypatch.setattr(dbmod, "Aside", Failed)
    eng = open_db(str(tmp_path / "here.db"))
    with eng.connect() as c:
        assert c.execute(text("SELECT version_num FROM alembic_version")).scalar() == head_revision()
    eng.dispose()
