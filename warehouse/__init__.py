"""A SQL warehouse for Tenstorrent tt-metal Tracy ops profiles (``ops_perf_results_*.csv``).

Architecture at a glance (each module does one thing; ``cli`` only parses arguments and renders):

- ``csvfile``     streaming, validated reading of one CSV and the lossless cell encoding
- ``signposts``   sections, blocks, layers and markers: the attribution state machine
- ``categories``  the oracle's op-code categories
- ``devicelog``   chip frequency and arch from ``profile_log_device.csv``
- ``schema``      the tables (SQLAlchemy Core); ``views`` the summary views (plain SQL)
- ``db``          engines, SQLite pragmas, Alembic upgrade / check
- ``ingest``      CSV -> one transaction of run, section, signpost and op rows; ``parallel`` folders on all cores
- ``export``      run -> the original CSV
- ``runs``        listing runs and resolving ``RUN`` references
- ``report``      the OPT_BASELINE JSON / Markdown from the views
- ``query``       read-only SQL and schema listing
- ``series``, ``compare``, ``regressions``, ``trend``   runs over time
- ``copy``, ``maintenance``   moving runs between warehouses; check and rm
- ``synthetic``   large and nightly captures built from real ones (benchmarks, tests)
- ``api``         :class:`Warehouse`, the public Python API for notebooks and scripts
- ``measures``    the registry of groupings and metrics; ``rollups`` per-run figures; ``history`` attribution
- ``dialect``, ``files``, ``sqlguard``, ``roles``   back-end differences, safe file I/O, read-only SQL, roles
"""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Warehouse", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy: `warehouse --help` must not import SQLAlchemy through the package's __init__.
    if name == "Warehouse":
        from warehouse.api import Warehouse
        return Warehouse
    raise AttributeError(name)
