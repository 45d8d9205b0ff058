"""Fixtures: a fresh warehouse per test (SQLite always; PostgreSQL too when WAREHOUSE_TEST_PG_URL is set), the
real CLI through CliRunner, and the corpus copied into tests/data.

A fresh warehouse is a copy of one migrated once per session (a file copy on SQLite, ``CREATE DATABASE ...
TEMPLATE`` on PostgreSQL): migrating a schema costs 0.2 s on SQLite and 0.6-0.9 s on PostgreSQL, a copy a fraction
of that. Tests of what happens to a location with no warehouse yet ask for ``empty_db_url``."""
from __future__ import annotations

import os
import shutil
import subprocess
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


_TEMPLATES: dict[str, str] = {}  # backend -> the session's migrated warehouse (a file, or a database name)


def _template(backend: str) -> str:
    """The session's migrated, empty warehouse for ``backend``, made on first use."""
    if backend not in _TEMPLATES:
        from sqlalchemy import create_engine, text
        from sqlalchemy.engine import make_url

        from warehouse.store.db import open_db
        if backend == "sqlite":
            import tempfile
            path = Path(tempfile.mkdtemp(prefix="wh-template-")) / "template.db"
            open_db(str(path)).dispose()
            _TEMPLATES[backend] = str(path)
        else:
            assert PG_URL
            name = f"wh_template_{uuid.uuid4().hex[:12]}"
            admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
            with admin.connect() as c:
                c.execute(text(f'CREATE DATABASE "{name}"'))
            admin.dispose()
            open_db(make_url(PG_URL).set(database=name).render_as_string(hide_password=False)).dispose()
            _TEMPLATES[backend] = name
    return _TEMPLATES[backend]


# Modules whose tests want the machine to themselves: they kill processes at chosen moments, count process trees,
# bound memory or file descriptors, or run concurrency rounds. .ci/run runs them apart (-m serial), after the rest
# ran a test file per core (-m "not serial" -n 2).
SERIAL_MODULES = frozenset({"test_workers", "test_concurrency", "test_reliability", "test_web_server",
                            "test_sql_bounds", "test_aside"})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--skip-passed-in", metavar="JUNIT", default=None,
                     help="deselect the tests that passed in this JUnit report (.ci/run: the README's fresh clone "
                          "ran the fast tier of the same commit first; every test still runs once)")


def passed_in(junit: Path) -> set[tuple[str, str]]:
    """The (classname, name) of every test case that passed in a JUnit report (not failed, errored or skipped)."""
    import xml.etree.ElementTree as ET

    return {(c.get("classname", ""), c.get("name", "")) for c in ET.parse(junit).getroot().iter("testcase")
            if not any(c.find(tag) is not None for tag in ("failure", "error", "skipped"))}


def junit_address(nodeid: str) -> tuple[str, str]:
    """A test's (classname, name) as pytest's JUnit report writes them."""
    from _pytest.junitxml import mangle_test_address

    names = mangle_test_address(nodeid)
    return ".".join(names[:-1]), names[-1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of :data:`SERIAL_MODULES` ``serial``; with ``--skip-passed-in``, deselect those that passed
    there."""
    for item in items:
        if getattr(getattr(item, "module", None), "__name__", None) in SERIAL_MODULES:
            item.add_marker(pytest.mark.serial)
    report = config.getoption("--skip-passed-in")
    if report:
        passed = passed_in(Path(report))
        done = [i for i in items if junit_address(i.nodeid) in passed]
        if done:
            config.hook.pytest_deselected(items=done)
            ids = {i.nodeid for i in done}
            items[:] = [i for i in items if i.nodeid not in ids]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Drop the session's templates: the PostgreSQL database and the SQLite file's temp folder (mkdtemp's folders
    outlive the process; one per session and xdist worker would pile up in /tmp)."""
    path = _TEMPLATES.pop("sqlite", None)
    if path:
        shutil.rmtree(Path(path).parent, ignore_errors=True)
    name = _TEMPLATES.pop("postgresql", None)
    if name and PG_URL:
        from sqlalchemy import create_engine, text
        admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def migrated_sqlite(path: Path) -> str:
    """A migrated, empty SQLite warehouse at ``path`` (a copy of the session's template); its path."""
    shutil.copyfile(_template("sqlite"), path)
    return str(path)


def _pg_database(migrated: bool = False) -> Iterator[str]:
    """A new PostgreSQL database for one test (dropped after): empty, or a copy of the migrated template."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    assert PG_URL, "only called when WAREHOUSE_TEST_PG_URL is set"
    template = f' TEMPLATE "{_template("postgresql")}"' if migrated else ""
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    name = f"wh_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"{template}'))
    try:
        yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _new_url(backend: str, folder: Path, migrated: bool = True) -> Iterator[str]:
    """A fresh warehouse of ``backend`` for one test: migrated at head (a copy of the template), or nothing yet."""
    if backend == "sqlite":
        yield migrated_sqlite(folder / "warehouse.db") if migrated else str(folder / "warehouse.db")
    else:
        yield from _pg_database(migrated)


@pytest.fixture(params=BACKENDS)
def db_url(request, tmp_path) -> Iterator[str]:
    """A fresh, empty warehouse at head (SQLite file path, or PostgreSQL URL) for one test."""
    yield from _new_url(request.param, tmp_path)


@pytest.fixture(params=BACKENDS)
def empty_db_url(request, tmp_path) -> Iterator[str]:
    """A location with no warehouse yet (no SQLite file; an empty PostgreSQL database), for one test."""
    yield from _new_url(request.param, tmp_path, migrated=False)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL warehouse URL at head, for tests of PostgreSQL-only behaviour (CI always has a server)."""
    if not PG_URL:
        pytest.skip("needs WAREHOUSE_TEST_PG_URL (CI starts a server)")
    yield from _pg_database(migrated=True)


@pytest.fixture
def sqlite_db(tmp_path) -> str:
    """A fresh SQLite warehouse at head, its file path (for tests of SQLite-only behaviour)."""
    return migrated_sqlite(tmp_path / "warehouse.db")


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


Generate = Callable[..., Path]


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> Generate:
    """``generated("mkhistory", src, *args)``: the folder ``tests/mkhistory.py src OUT *args`` writes (or
    ``mkseries``), made once per session whatever the modules and back ends that ask for it. Read-only: a fixture
    that edits the nights copies the folder first (:func:`shutil.copytree`)."""
    made: dict[tuple[str, str, tuple[str, ...]], Path] = {}

    def generate(tool: str, src: Path, *args: str) -> Path:
        key = (tool, str(src), tuple(map(str, args)))
        if key not in made:
            out = tmp_path_factory.mktemp(f"gen-{tool}") / "nights"
            subprocess.run([sys.executable, str(Path(__file__).parent / f"{tool}.py"), str(src), str(out), *key[2]],
                           check=True, capture_output=True)
            made[key] = out
        return made[key]
    return generate


@pytest.fixture
def corpus_copy(tmp_path) -> Callable[[str], Path]:
    """Copy one corpus CSV into tmp_path (no device log beside it) and return the copy."""
    def copy(name: str) -> Path:
        src = cases()[name]
        dst = tmp_path / src.name
        shutil.copyfile(src, dst)
        return dst
    return copy
