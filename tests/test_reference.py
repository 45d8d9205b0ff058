"""References that cannot drift: every command has help and is in the generated CLI reference; the tables and views
carry their docs in PostgreSQL; `schema` types every column."""
from __future__ import annotations

from pathlib import Path

import click
from click.testing import CliRunner

from warehouse.cli import cli

ROOT = Path(__file__).resolve().parent.parent


def _commands(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, prefix + (name,))
        else:
            yield prefix + (name,), cmd


def test_every_command_has_help_and_is_in_the_reference():
    readme = (ROOT / "docs" / "cli.md").read_text() + (ROOT / "docs" / "tour.md").read_text()
    found = list(_commands(cli))
    assert len(found) >= 17
    for path, cmd in found:
        assert cmd.help and len(cmd.help.strip()) > 20, path
        r = CliRunner().invoke(cli, [*path, "--help"])
        assert r.exit_code == 0 and "Usage:" in r.output, path
        assert f"`warehouse {' '.join(path)}`" in readme, path
        for opt in cmd.params:
            if isinstance(opt, click.Option):
                assert opt.help or opt.is_flag or opt.name in ("help",), (path, opt.name)


def test_postgresql_tables_and_views_carry_their_docs(pg_url):
    from sqlalchemy import text

    from warehouse.store.db import open_db
    from warehouse.store.schema import TABLE_DOCS
    eng = open_db(pg_url)
    with eng.connect() as c:
        got = dict(c.execute(text("SELECT c.relname, obj_description(c.oid, 'pg_class') FROM pg_class c "
                                  "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' "
                                  "AND c.relkind IN ('r', 'v')")).all())
    eng.dispose()
    assert got["run"] == TABLE_DOCS["run"] and got["series_block"].startswith("per run and section, by block")


def test_schema_prints_a_type_for_every_column(wh):
    """`warehouse schema` gives every table and view column its SQL type, also where SQLite declares none
    (computed view columns)."""
    import json

    from corpus import cases
    assert wh("ingest", cases()["dlv3_same"]).exit_code == 0
    objs = json.loads(wh("schema", "--json").output)
    untyped = [(o["name"], c["name"]) for o in objs for c in o["columns"] if not c["type"]]
    assert not untyped
    views = {o["name"]: {c["name"]: c["type"].upper() for c in o["columns"]} for o in objs if o["type"] == "view"}
    assert "REAL" in views["by_op_code"]["share_pct"] or "DOUBLE" in views["by_op_code"]["share_pct"]
    assert "INT" in views["by_op_code"]["ops"]
