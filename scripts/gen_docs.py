#!/usr/bin/env python3
"""Generate the README's table and view reference from the code (schema.TABLE_DOCS, views.VIEWS, the columns of
a database built at head), the command list from the CLI, the typed op columns from warehouse.registry.columns, the
family views' columns from warehouse.registry.families and the metrics from warehouse.registry.measures, so that the
docs cannot drift.

    python scripts/gen_docs.py           # rewrite the generated parts of README.md
    python scripts/gen_docs.py --check   # exit 1 when README.md differs from what the code says (CI runs this)
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BEGIN, END = "<!-- BEGIN generated: {} -->", "<!-- END generated: {} -->"


def reference() -> str:
    """The tables and views with their one-liners and columns, as Markdown."""
    from sqlalchemy import inspect

    from warehouse.store.db import open_db
    from warehouse.store.schema import TABLE_DOCS, metadata
    from warehouse.store.views import VIEWS

    out = ["| table | what it holds | columns |", "|---|---|---|"]
    for name, table in metadata.tables.items():
        cols = ", ".join(c.name for c in table.columns)
        out.append(f"| `{name}` | {TABLE_DOCS[name]} | {cols} |")
    with tempfile.TemporaryDirectory() as tmp:
        eng = open_db(str(Path(tmp) / "docs.db"))
        insp = inspect(eng)
        out += ["", "| view | one line | columns |", "|---|---|---|"]
        for name, doc, _ in VIEWS:
            cols = ", ".join(c["name"] for c in insp.get_columns(name))
            out.append(f"| `{name}` | {doc.replace('|', chr(92) + '|')} | {cols} |")
        eng.dispose()
    return "\n".join(out)


def commands() -> str:
    """Every command with its first help line."""
    import click

    from warehouse.cli import cli

    out = ["| command | what it does |", "|---|---|"]

    def walk(group: click.Group, prefix: str) -> None:
        for name in sorted(group.commands):
            cmd = group.commands[name]
            if isinstance(cmd, click.Group):
                walk(cmd, f"{prefix}{name} ")
                continue
            first = " ".join((cmd.help or "").split("\n\n")[0].split())
            out.append(f"| `warehouse {prefix}{name}` | {first.replace('|', chr(92) + '|')} |")
    walk(cli, "")
    return "\n".join(out)


def render(text: str) -> str:
    from warehouse.registry.columns import markdown_table
    from warehouse.registry.families import markdown_table as family_table
    from warehouse.registry.measures import metrics_markdown
    for part, body in (("reference", reference()), ("commands", commands()), ("typed columns", markdown_table()),
                       ("family columns", family_table()), ("metrics", metrics_markdown())):
        b, e = BEGIN.format(part), END.format(part)
        pattern = re.compile(re.escape(b) + r".*?" + re.escape(e), re.S)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no {b} ... {e} block")
        block = f"{b}\n{body}\n{e}"

        def keep(_m: re.Match[str], block: str = block) -> str:  # (a function: the body is not a template)
            return block
        text = pattern.sub(keep, text)
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check; exit 1 when README.md is out of date")
    a = ap.parse_args()
    readme = ROOT / "README.md"
    old = readme.read_text()
    new = render(old)
    if a.check:
        if new != old:
            print("README.md is out of date with the code: run python scripts/gen_docs.py", file=sys.stderr)
            return 1
        print("README.md matches the code")
        return 0
    readme.write_text(new)
    print("README.md regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
