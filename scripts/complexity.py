#!/usr/bin/env python3
"""The cost of the code, held at ceilings: every function of the package over ruff's limits (cyclomatic complexity
C901 over 10, arguments PLR0913 over 6, branches PLR0912 over 12, statements PLR0915 over 50) is listed with its
count in ``tests/complexity_ceilings.json``; a function may get simpler, never more complex, and no new one may pass
a limit (tests/test_architecture.py checks it with :func:`over_ceiling`).

    python scripts/complexity.py           # print the functions over the limits, worst first
    python scripts/complexity.py --write   # lower the ceilings to today's counts (after a function got simpler)
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CEILINGS = ROOT / "tests" / "complexity_ceilings.json"
LIMITS = {"C901": ("lint.mccabe.max-complexity", 10), "PLR0913": ("lint.pylint.max-args", 6),
          "PLR0912": ("lint.pylint.max-branches", 12), "PLR0915": ("lint.pylint.max-statements", 50)}


def _ruff() -> str:
    """The ruff beside this Python (the venv's), else the one on PATH."""
    here = Path(sys.executable).parent / "ruff"
    found = str(here) if here.exists() else shutil.which("ruff")
    if not found:
        raise SystemExit("ruff is not installed: pip install -e '.[test]' (or '.[lint]')")
    return found


def _function_at(tree_cache: dict[str, dict[int, str]], path: str, row: int) -> str:
    """The qualified name of the function whose ``def`` is on ``row`` of ``path`` (a class's methods as Class.name)."""
    if path not in tree_cache:
        names: dict[int, str] = {}

        def walk(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        names[child.lineno] = name
                    walk(child, name + ".")
                else:
                    walk(child, prefix)
        walk(ast.parse(Path(path).read_text()), "")
        tree_cache[path] = names
    return tree_cache[path].get(row, f"line {row}")


def measure() -> dict[str, int]:
    """``{"rule path:function": count}`` for every function of ``warehouse/`` over a limit, as ruff counts."""
    args = [_ruff(), "check", "warehouse", "--select", ",".join(LIMITS), "--output-format", "json", "--exit-zero",
            "--no-cache"]
    for setting, limit in LIMITS.values():
        args += ["--config", f"{setting}={limit}"]
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    trees: dict[str, dict[int, str]] = {}
    found: dict[str, int] = {}
    for hit in json.loads(out):
        count = int(re.search(r"\((\d+) > \d+\)", hit["message"]).group(1))  # type: ignore[union-attr]
        path = str(Path(hit["filename"]).resolve().relative_to(ROOT))
        key = f"{hit['code']} {path}:{_function_at(trees, hit['filename'], hit['location']['row'])}"
        found[key] = max(count, found.get(key, 0))  # (two functions of one name in a module: the worse one)
    return found


def over_ceiling(found: dict[str, int], ceilings: dict[str, int]) -> list[str]:
    """What passed its ceiling: a function more complex than it was, or a new one over a limit."""
    return [f"{key}: {count} (ceiling {ceilings[key]})" if key in ceilings else f"{key}: {count} (new, over the limit)"
            for key, count in sorted(found.items()) if count > ceilings.get(key, 0)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write today's counts as the ceilings")
    a = ap.parse_args()
    found = measure()
    if a.write:
        CEILINGS.write_text(json.dumps(dict(sorted(found.items())), indent=1) + "\n")
        print(f"{len(found)} ceilings written to {CEILINGS.relative_to(ROOT)}")
        return 0
    for key, count in sorted(found.items(), key=lambda kv: -kv[1]):
        print(f"{count:4d}  {key}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
