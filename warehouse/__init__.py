"""A SQL warehouse for Tenstorrent tt-metal Tracy ops profiles (``ops_perf_results_*.csv``).

Architecture at a glance: folders by layer, each importing only the layers below it (tests/test_architecture.py).

- ``registry/``  what the data is: the oracle's vocabulary, CSV column eras, column families, metrics, groupings
- ``capture/``   reading one CSV: validated, typed rows, signposts, block and layer attribution
- ``store/``     the database: schema, dialects, views, ingest, the lossless cells, the SQL guard, roles
- ``analysis/``  one run's figures: the OPT_BASELINE report, tt-perf-report's per-op table, rollups
- ``runs/``      whole runs in and out: export, copy, the Parquet lake, maintenance, notices
- ``history/``   across runs: one history core (select, judge, evidence, causes, changepoints), the gate,
                 ``changes``, trend, compare, triage, outside series
- ``workers/``   child processes (they die with their parent)
- ``api``        :class:`Warehouse`, the typed application layer: a method per command and page
- ``render/``    every result as text, Markdown, CSV, JSON, JUnit XML
- ``cli/``, ``web/``   the adapters (click, Starlette): parse, call ``api``, print what ``render`` gives
"""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Warehouse", "detect_changes", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy: `warehouse --help` must not import SQLAlchemy through the package's __init__.
    if name == "Warehouse":
        from warehouse.api import Warehouse
        return Warehouse
    if name == "detect_changes":
        from warehouse.api import detect_changes
        return detect_changes
    raise AttributeError(name)
