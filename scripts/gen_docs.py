#!/usr/bin/env python3
"""Generate the documentation's references from the code, so that they cannot drift: the table and view reference
(schema.TABLE_DOCS, views.VIEWS, the columns of a database built at head), the command list and the whole CLI
reference (every command's help and options, from click), the typed op columns (warehouse.registry.columns), the
family views' columns (warehouse.registry.families) and the metrics (warehouse.registry.measures), and the site's
home page (docs/index.md, the README with its links made relative) and changelog (docs/changelog.md, a copy of
CHANGELOG.md). Each of the others is a
``<!-- BEGIN generated: NAME -->`` ... ``<!-- END generated: NAME -->`` block in a page of docs/ (or the README).
It also writes the one constant the code keeps generated: ``warehouse/store/lite.py``'s ``VIEWS_HASH``, the views'
stamp that the light reader compares without importing the views' SQL.

    python scripts/gen_docs.py           # rewrite the generated blocks
    python scripts/gen_docs.py --check   # exit 1 when a page differs from what the code says (CI runs this)
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


def cli_reference() -> str:
    """Every command's whole help (usage, description, options), as click prints it."""
    import click

    from warehouse.cli import cli

    out: list[str] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        ctx = click.Context(cmd, info_name=" ".join(path), terminal_width=100, max_content_width=100)  # (any machine)
        if path[1:]:
            out.extend([f"## `{' '.join(path)}`", "", "```text", cmd.get_help(ctx), "```", ""])
        if isinstance(cmd, click.Group):
            for name in sorted(cmd.commands):
                walk(cmd.commands[name], [*path, name])
    walk(cli, ["warehouse"])
    return "\n".join(out).rstrip()


def parts() -> dict[str, str]:
    """Each generated block's name and body."""
    from warehouse.registry.columns import markdown_table
    from warehouse.registry.families import markdown_table as family_table
    from warehouse.registry.measures import metrics_markdown
    return {"reference": reference(), "commands": commands(), "cli": cli_reference(),
            "typed columns": markdown_table(), "family columns": family_table(), "metrics": metrics_markdown()}


def render(text: str, bodies: dict[str, str], seen: set[str]) -> str:
    """``text`` with each generated block it holds rewritten (their names added to ``seen``)."""
    for part, body in bodies.items():
        b, e = BEGIN.format(part), END.format(part)
        pattern = re.compile(re.escape(b) + r".*?" + re.escape(e), re.S)
        if not pattern.search(text):
            continue
        seen.add(part)
        block = f"{b}\n{body}\n{e}"

        def keep(_m: re.Match[str], block: str = block) -> str:  # (a function: the body is not a template)
            return block
        text = pattern.sub(keep, text)
    return text


def home(readme: str) -> str:
    """The site's home page: the README with its links made relative to docs/ (the README is the one to edit)."""
    text = re.sub(r"\]\(docs/([^)]+)\)", r"](\1)", readme).replace("](CHANGELOG.md)", "](changelog.md)")
    return "\n".join(x for x in text.splitlines() if not x.startswith("The site: ")) + "\n"


LITE = ROOT / "warehouse" / "store" / "lite.py"


def lite_source() -> str:
    """lite.py with its ``VIEWS_HASH`` set to the stamp of the views as they are now."""
    from warehouse.store.views import VIEWS_HASH
    return re.sub(r'^VIEWS_HASH = "[0-9a-f]*"$', f'VIEWS_HASH = "{VIEWS_HASH}"', LITE.read_text(), count=1,
                  flags=re.M)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check; exit 1 when a page is out of date")
    a = ap.parse_args()
    bodies = parts()
    seen: set[str] = set()
    stale = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        old = page.read_text()
        new = render(old, bodies, seen)
        if new != old:
            stale.append(page.relative_to(ROOT))
            if not a.check:
                page.write_text(new)
    # the site's copies: its home page (the README with its generated blocks as they should be) and the changelog
    for copy, want in ((ROOT / "docs" / "index.md", home(render((ROOT / "README.md").read_text(), bodies, set()))),
                       (ROOT / "docs" / "changelog.md", (ROOT / "CHANGELOG.md").read_text()),
                       (LITE, lite_source())):
        if copy.read_text() != want:
            stale.append(copy.relative_to(ROOT))
            if not a.check:
                copy.write_text(want)
    missing = sorted(set(bodies) - seen)
    if missing:
        print(f"no page holds the generated block(s) {', '.join(missing)}", file=sys.stderr)
        return 1
    if a.check:
        if stale:
            print(f"out of date with the code: {', '.join(map(str, stale))}: run python scripts/gen_docs.py",
                  file=sys.stderr)
            return 1
        print("the documentation matches the code")
        return 0
    print(f"regenerated: {', '.join(map(str, stale)) or 'nothing changed'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
