"""Fixtures: a fresh warehouse per test (SQLite always; PostgreSQL too when WAREHOUSE_TEST_PG_URL is set), the
real CLI through CliRunner, and the corpus copied into tests/data."""
from __future__ import annotations

import os
import shutil
import sys
import uuid
from pathlib import Path
from collections.abc import Callable, Iterator

import pytest
from click.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).parent))
from corpus import cases  # noqa: E402

from warehouse.cli import cli  # noqa: E402

PG_URL = os.environ.get("WAREHOUSE_TEST_PG_URL")
BACKENDS = ["sqlite"] + (["postgresql"] if PG_URL else [])


def _pg_database() -> Iterator[str]:
    """A new, empty PostgreSQL database for one test (dropped after)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    assert PG_URL, "only called when WAREHOUSE_TEST_PG_URL is set"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    name = f"wh_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _new_url(backend: str, folder: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield str(folder / "warehouse.db")
    else:
        yield from _pg_database()


@pytest.fixture(params=BACKENDS)
def db_url(request, tmp_path) -> Iterator[str]:
    """A fresh warehouse location (SQLite file path, or PostgreSQL URL) for one test."""
    yield from _new_url(request.param, tmp_path)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL warehouse URL, for tests of PostgreSQL-only behaviour (CI always has a server)."""
    if not PG_URL:
        pytest.skip("needs WAREHOUSE_TEST_PG_URL (CI starts a server)")
    yield from _pg_database()


@pytest.fixture
def sqlite_db(tmp_path) -> str:
    """A fresh SQLite warehouse file path (for tests of SQLite-only behaviour)."""
    return str(tmp_path / "warehouse.db")


Invoke = Callable[..., Result]


def make_invoke(url: str) -> Invoke:
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Result:
        return runner.invoke(cli, ["--db", url, *map(str, args)], input=input, catch_exceptions=False)
    return invoke


@pytest.fixture
def wh(db_url) -> Invoke:
    """``wh("ingest", path)``: the real CLI on the fresh warehouse of this test."""
    return make_invoke(db_url)


@pytest.fixture(scope="module", params=BACKENDS)
def corpus_wh(request, tmp_path_factory) -> Iterator[tuple[Invoke, dict[str, int], str]]:
    """A warehouse holding every corpus case once: ``(invoke, {case: run id}, url)``; shared by a module."""
    folder = tmp_path_factory.mktemp("corpus")
    gen = _new_url(request.param, folder)
    url = next(gen)
    invoke = make_invoke(url)
    ids = {}
    for name, path in cases().items():
        r = invoke("ingest", path)
        assert r.exit_code == 0, r.output
        ids[name] = int(r.output.split(": run ")[1].split(":")[0])
    yield invoke, ids, url
    for _ in gen:
        pass


@pytest.fixture
def corpus_copy(tmp_path) -> Callable[[str], Path]:
    """Copy one corpus CSV into tmp_path (no device log beside it) and return the copy."""
    def copy(name: str) -> Path:
        src = cases()[name]
        dst = tmp_path / src.name
        shutil.copyfile(src, dst)
        return dst
    return copy
