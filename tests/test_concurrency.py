"""Many writers at once: nightly CI machines ingest into one warehouse; nothing is lost, nothing fails."""
from __future__ import annotations

import subprocess
import sys

import pytest
from sqlalchemy import text

from corpus import cases
from warehouse.db import head_revision, open_db
from warehouse.synthetic import nightly_series


def _spawn(url: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "warehouse", "--db", url, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def forty(tmp_path_factory):
    folder = tmp_path_factory.mktemp("forty")
    return list(nightly_series(cases()["dlv3_same"], folder, 40, noise=0.05, seed=3))


def test_eight_processes_forty_files(db_url, forty):
    """8 processes x 5 files into one warehouse that none of them has created yet."""
    procs = [_spawn(db_url, "ingest", *map(str, forty[i::8])) for i in range(8)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert "Error" not in err
    eng = open_db(db_url)
    with eng.connect() as c:
        assert c.execute(text("SELECT COUNT(*) FROM run")).scalar() == 40
        assert c.execute(text("SELECT COUNT(*) FROM op")).scalar() == 40 * 774
        assert c.execute(text("SELECT COUNT(DISTINCT sha256) FROM run")).scalar() == 40
    eng.dispose()
    from warehouse.maintenance import check_warehouse
    assert check_warehouse(open_db(db_url)) == []


def test_same_file_from_many_processes(db_url, forty):
    """Racing on the same content stores it once; every process exits 0."""
    procs = [_spawn(db_url, "ingest", str(forty[0])) for _ in range(6)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    eng = open_db(db_url)
    with eng.connect() as c:
        assert c.execute(text("SELECT COUNT(*) FROM run")).scalar() == 1
    eng.dispose()


def test_concurrent_creation_and_upgrade(db_url):
    """Two processes creating (then upgrading) the same new database end with one correct schema."""
    procs = [_spawn(db_url, "db", "upgrade"), _spawn(db_url, "runs"), _spawn(db_url, "db", "upgrade")]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    p = _spawn(db_url, "db", "check")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, out + err
    eng = open_db(db_url)
    with eng.connect() as c:
        assert c.execute(text("SELECT COUNT(*) FROM alembic_version")).scalar() == 1
        assert c.execute(text("SELECT version_num FROM alembic_version")).scalar() == head_revision()
        assert c.execute(text("SELECT COUNT(*) FROM section_summary")).scalar() == 0
    eng.dispose()
