"""The layout is the architecture: every import of the package goes down the layers (or stays in its folder), no
two modules import each other through any chain, no module is long, and the adapters reach the library only
through the application layer."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "warehouse"

# Lowest first. A module may import its own folder and anything lower, never higher.
LAYERS = [
    ("errors", "workers"),          # the exceptions; child processes and process-wide tricks
    ("registry",),                  # what the data is: vocabulary, columns, metrics, categories
    ("capture",),                   # reading one CSV, no database
    ("store",),                     # the database: schema, dialect, views, cells, user SQL
    ("analysis",),                  # one run's figures: report, perf table, rollups
    ("runs",),                      # whole runs in and out: ingest, folders, copy, export, lake, check
    ("history",),                   # across runs: series, detector, changes, gate, trend, compare, triage
    ("api", "__init__"),            # the application layer
    ("render",),                    # results as text, Markdown, CSV, JSON, JUnit
    ("cli", "web", "mcp", "__main__"),  # the adapters
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
ADAPTERS = {"cli", "web", "mcp", "__main__"}
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = p.relative_to(PACKAGE)
        if rel.parts[0] == "migrations":
            continue  # (history: each revision stays as it shipped, and imports what it needs)
        name = ".".join(("warehouse", *rel.with_suffix("").parts))
        out[name.removesuffix(".__init__")] = p
    return out


MODULES = _modules()


def _folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every warehouse module ``path`` imports (top-level, in functions, under TYPE_CHECKING), with its line."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "warehouse":
            for a in node.names:
                full = f"{node.module}.{a.name}"
                out.append((full if full in MODULES else node.module, node.lineno))
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "warehouse"]
    return [(m, n) for m, n in out if m in MODULES]


GRAPH = {m: _imports(p) for m, p in MODULES.items()}


def test_every_folder_has_a_layer():
    assert {_folder(m) for m in MODULES} <= set(RANK), {_folder(m) for m in MODULES} - set(RANK)


def test_imports_go_down_the_layers():
    up = [f"{m} (line {n}) imports {t}" for m, ts in GRAPH.items() for t, n in ts
          if RANK[_folder(t)] > RANK[_folder(m)] and t != "warehouse"]
    assert not up, "\n".join(up)


def test_no_import_circles():
    """No module reaches itself through imports, lazy ones included (Tarjan's strongly connected components)."""
    edges = {m: sorted({t for t, _ in ts if t != m and not MODULES[t].name == "__init__.py" or t.count(".") > 1})
             for m, ts in GRAPH.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not circles, circles


def test_no_module_is_long():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


def test_the_adapters_reach_the_library_through_the_application_layer():
    """The CLI, the dashboard and the agent server import the application layer, rendering, errors, the registry
    (for their choice lists) and the process plumbing, never the modules under the layer."""
    allowed = {"api", "__init__", "errors", "registry", "render", "workers", *ADAPTERS}
    bad = [f"{m} imports {t}" for m, ts in GRAPH.items() if _folder(m) in ADAPTERS for t, _ in ts
           if _folder(t) not in allowed]
    assert not bad, bad


# Modules whose imports of the package are made where they are used, and why (everywhere else an import inside a
# function must say why on its line, or the line above, with the word "lazy")
LAZY = {
    "warehouse": "`warehouse --help` never imports SQLAlchemy through the package's __init__",
    "warehouse.api": "a one-line answer (`warehouse runs`: 0.15 s whole process) imports only the layers it uses",
    "warehouse.cli": "the same start-up budget: each command imports its own rendering and the API's layers",
    "warehouse.mcp": "the agent server's tools import the API's layers they use",
    "warehouse.web.app": "the dashboard's pages import their rendering when first served",
    "warehouse.store.listing": "the light read path (store.lite) answers `runs` without SQLAlchemy",
}


def test_lazy_imports_say_why():
    """An import inside a function is there for a measured start-up budget (or an optional extra), and says so on
    its line or the line above (or its module is one of LAZY, whose reason is stated there)."""
    unexplained = defaultdict(list)
    for m, p in MODULES.items():
        if any(m == k or m.startswith(k + ".") for k in LAZY):
            continue
        lines = p.read_text().splitlines()
        tree = ast.parse(p.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    mod = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                    if not (mod or "").startswith("warehouse"):
                        continue
                    here = lines[node.lineno - 1] + " " + (lines[node.lineno - 2] if node.lineno > 1 else "")
                    if "lazy" not in here:
                        unexplained[m].append(node.lineno)
    assert not unexplained, dict(unexplained)


def test_no_function_grows_more_complex():
    """Complexity, arguments, branches and statements per function are held at today's counts
    (tests/complexity_ceilings.json, written by scripts/complexity.py --write): a function may only get simpler, and
    no new one may pass ruff's limits."""
    import json
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    from complexity import CEILINGS, measure, over_ceiling
    found = measure()
    assert found, "ruff measured nothing: the check itself is broken"
    assert not over_ceiling(found, json.loads(CEILINGS.read_text())), \
        "simplify, or split the function (scripts/complexity.py lists the worst)"
