"""The lake trusts nothing in its folder: a manifest that names paths outside it, links planted where it writes, a
killed export's leftovers, another warehouse's export, a folder that is not a lake, reserved partition values."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import make_invoke
from corpus import cases
from warehouse.runs import lake
from warehouse.api import Warehouse

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

SMALL = ("ttperfreport__bh20_oft_integral_image_trace", "clip_replays3")


@pytest.fixture
def two_runs(db_url):
    """A warehouse with two small runs; yields (url, invoke)."""
    wh = make_invoke(db_url)
    for c in SMALL:
        assert wh("ingest", cases()[c]).exit_code == 0
    return db_url, wh


def _manifest(root: Path) -> dict:
    return json.loads((root / lake.MANIFEST).read_text())


def _duck_runs(root: Path) -> int:
    return lake.connect_duckdb(root).execute("SELECT COUNT(*) FROM run").fetchone()[0]


def test_a_manifest_naming_paths_outside_the_lake_removes_nothing_there(two_runs, tmp_path):
    url, wh = two_runs
    root = tmp_path / "lake"
    assert wh("export", "--format", "parquet", root).exit_code == 0
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    absolute = tmp_path / "absolute-victim"
    absolute.write_text("keep me too")
    doc = _manifest(root)
    entry = next(iter(doc["runs"].values()))
    entry["files"] += ["../victim", str(absolute), "runs/../../victim"]
    entry["fingerprint"] = "changed"  # (so that the next export rewrites, and removes, this run's files)
    (root / lake.MANIFEST).write_text(json.dumps(doc))
    r = wh("export", "--format", "parquet", root)
    assert r.exit_code == 0, r.output
    assert victim.read_text() == "keep me" and absolute.read_text() == "keep me too"
    assert _duck_runs(root) == 2


def test_a_planted_link_is_never_written_through(two_runs, tmp_path):
    url, wh = two_runs
    root = tmp_path / "lake"
    assert wh("export", "--format", "parquet", root).exit_code == 0
    target = tmp_path / "target"
    target.write_text("not the lake's")
    # a link where a run's file goes: the rename replaces the link, never the file it points to
    doc = _manifest(root)
    rel = next(iter(doc["runs"].values()))["files"][-1]
    (root / rel).unlink()
    os.symlink(target, root / rel)
    assert wh("export", "--format", "parquet", root).exit_code == 0
    assert target.read_text() == "not the lake's"
    assert not (root / rel).is_symlink() and (root / rel).stat().st_size > 0
    # a link where a partition folder goes: refused, naming it, and nothing written through it
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    wh("tag", "1", "--label", "moved")  # (its files go to a new partition)
    part = root / "run_tags" / "label=moved"
    os.symlink(elsewhere, part)
    r = wh("export", "--format", "parquet", root)
    assert r.exit_code == 1 and "label=moved" in r.output and "link" in r.output, r.output
    assert list(elsewhere.iterdir()) == []


def test_a_killed_export_leaves_nothing_for_good(two_runs, tmp_path, monkeypatch):
    """Killed in the middle of run 2, which is then removed from the warehouse: the next export leaves the lake
    with exactly the warehouse's runs (DuckDB counted one more)."""
    url, wh = two_runs
    root = tmp_path / "lake"
    real = lake._write

    def killed(ds, conn, run_id, root_, rel, meta):
        if run_id == 2 and ds.name == "ops":
            raise KeyboardInterrupt
        return real(ds, conn, run_id, root_, rel, meta)
    monkeypatch.setattr(lake, "_write", killed)
    with pytest.raises(KeyboardInterrupt):
        Warehouse(url).export_lake(root)
    monkeypatch.setattr(lake, "_write", real)
    # a stray temporary file too, as a SIGKILL in the middle of a write leaves
    stray = root / "ops" / ".tmp-abc.part"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"PAR1")
    assert _duck_runs(root) == 1  # (meanwhile, readers see whole runs only)
    assert wh("rm", "--yes", "2").exit_code == 0
    res = Warehouse(url).export_lake(root)
    assert res.written == [] and res.unchanged == [1]
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.parquet"))
    assert files == sorted(next(iter(_manifest(root)["runs"].values()))["files"])
    assert not stray.exists() and _duck_runs(root) == 1
    assert lake.connect_duckdb(root).execute("SELECT COUNT(DISTINCT run_id) FROM ops").fetchone() == (1,)


def test_another_warehouse_cannot_export_into_the_lake(two_runs, tmp_path):
    url, wh = two_runs
    root = tmp_path / "lake"
    assert wh("export", "--format", "parquet", root).exit_code == 0
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.parquet"))
    other = make_invoke(str(tmp_path / "other.db"))
    assert other("ingest", cases()["dlv3_same"]).exit_code == 0
    r = other("export", "--format", "parquet", root)
    assert r.exit_code == 1 and "mirrors another warehouse" in r.output, r.output
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.parquet")) == before
    assert _manifest(root)["warehouse"] == Warehouse(url).query(
        "SELECT value FROM warehouse_meta WHERE key = 'id'")[0]["value"]


def test_a_folder_that_is_not_a_lake_is_refused(two_runs, tmp_path):
    url, wh = two_runs
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "duckdb_views.sql").write_text("-- my own")
    r = wh("export", "--format", "parquet", folder)
    assert r.exit_code == 1 and "not empty" in r.output and str(folder) in r.output, r.output
    assert (folder / "duckdb_views.sql").read_text() == "-- my own"
    assert sorted(p.name for p in folder.iterdir()) == ["duckdb_views.sql"]


def test_a_label_spelled_as_hives_null_reads_back(two_runs, tmp_path):
    url, wh = two_runs
    assert wh("tag", "1", "--label", lake.NO_LABEL).exit_code == 0
    root = tmp_path / "lake"
    assert wh("export", "--format", "parquet", root).exit_code == 0
    got = sorted(lake.connect_duckdb(root).execute("SELECT id, label FROM run").fetchall(), key=lambda r: r[0])
    assert got == [(1, lake.NO_LABEL), (2, None)]


def test_an_unwritable_lake_names_its_path(two_runs, tmp_path, monkeypatch):
    url, wh = two_runs
    root = tmp_path / "lake"

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(lake.tempfile, "mkstemp", denied)
    r = wh("export", "--format", "parquet", root)
    assert r.exit_code == 1 and str(root) in r.output and "permission denied" in r.output, r.output
    assert len([ln for ln in r.output.splitlines() if ln.startswith("Error:")]) == 1
