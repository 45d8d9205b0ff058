"""A SQL warehouse for Tenstorrent tt-metal Tracy ops profiles (``ops_perf_results_*.csv``).

Architecture at a glance: two adapters over one application layer over the library (each module does one thing).

- ``cli`` (click) and ``web`` (Starlette): parse, call :class:`Warehouse`, print what ``render`` gives
- ``api``         :class:`Warehouse`, the application layer: a method per command and page, typed results
- ``render``      every result as text, Markdown, CSV, JSON (``rows``, ``report``, ``perf``, ``compare``, ``trend``,
                  ``regressions``, ``changes``, ``admin``)
- ``contract``    the oracle's vocabulary; ``columns`` the typed op columns; ``measures`` groupings and metrics
- ``csvfile``, ``rowprep``   streaming, validated reading of one CSV, typed and encoded (in a worker process)
- ``signposts``   sections, blocks, layers and markers: the attribution state machine; ``history`` across replays
- ``ingest``      CSV -> one transaction of run, section, signpost and op rows; ``parallel`` folders on all cores;
                  ``occurrence`` each op's occurrence; ``aside`` work forked to the other core; ``memory`` freed
                  pages given back during a big ingest
- ``schema``      the tables (SQLAlchemy Core); ``views`` the summary views (plain SQL); ``view_types`` their types
- ``db``          engines, Alembic upgrade / check; ``dialect`` every other SQLite / PostgreSQL difference
- ``lite``        the light read path: a SQLite warehouse through the stdlib's sqlite3 (``runs`` in 0.1 s);
                  ``revisions`` the migrations' revisions, known without Alembic
- ``export``      run -> the original CSV; ``cellstore`` the lossless chunks
- ``report``      the OPT_BASELINE document; ``perf``, ``perffacts`` tt-perf-report's per-op table
- ``runs``, ``series``, ``rollups``   runs, their series across time, per-run figures
- ``compare``, ``trend``, ``regressions`` (the gate), ``changes`` / ``changepoints`` (history), ``triage``
- ``query``, ``sqlguard``, ``roles``   read-only SQL, its guard, PostgreSQL reader roles
- ``copy``, ``maintenance``, ``synthetic``   moving runs; check and rm; captures built from real ones
- ``migrations/legacy.py`` (shipped as ``warehouse.migrations.legacy``): code only migrations run
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
