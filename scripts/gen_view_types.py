#!/usr/bin/env python3
"""Regenerate ``warehouse/store/view_types.py`` (the declared SQL types of every view column, which ``warehouse schema``
prints: SQLite declares none for computed columns) from what PostgreSQL infers for the views.

    python scripts/gen_view_types.py --url postgresql+psycopg://user@host/empty_db

``tests/test_sql.py`` holds the file true: PostgreSQL's types equal it, and on SQLite every value a view gives over
a small capture has the declared type.
"""
from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from sqlalchemy import inspect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from warehouse.store.db import open_db  # noqa: E402
from warehouse.store.view_types import generic  # noqa: E402
from warehouse.store.views import VIEWS  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True, help="An empty PostgreSQL database (the views are created in it).")
    a = ap.parse_args()
    insp = inspect(open_db(a.url))
    lines = []
    for name, _, _ in VIEWS:
        cols = ", ".join(f'"{c["name"]}": "{generic(c["type"])}"' for c in insp.get_columns(name))
        lines.append("\n".join(textwrap.wrap(f'"{name}": {{{cols}}},', 116, initial_indent="    ",
                                              subsequent_indent="        ", break_on_hyphens=False)))
    path = ROOT / "warehouse" / "store" / "view_types.py"
    text = path.read_text()
    head, _, rest = text.partition("VIEW_TYPES: dict[str, dict[str, str]] = {\n")
    _, _, tail = rest.partition("\n}\n")
    path.write_text(head + "VIEW_TYPES: dict[str, dict[str, str]] = {\n" + "\n".join(lines) + "\n}\n" + tail)
    print(f"{path}: {len(lines)} views")
    return 0


if __name__ == "__main__":
    sys.exit(main())
