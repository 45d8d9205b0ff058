"""The public Python API, for notebooks and scripts: one :class:`Warehouse` over a database URL, returning plain
data (dicts and lists; a pandas DataFrame from :meth:`Warehouse.frame` where pandas is installed).

    >>> from warehouse import Warehouse
    >>> wh = Warehouse("warehouse.db")              # or "postgresql+psycopg://user@host/warehouse"
    >>> wh.ingest("nightly/", label="resnet")       # files, folders, globs
    >>> wh.regressions(label="resnet")["regressions"]
    >>> wh.query("SELECT * FROM series_block WHERE label = :l", l="resnet")
"""
from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from warehouse.errors import InputError, WarehouseError


class Warehouse:
    """A warehouse at ``url`` (a SQLite path or a SQLAlchemy URL; ``None``: ``$WAREHOUSE_DB`` or
    ``./warehouse.db``). Reading methods never create a database."""

    def __init__(self, url: str | None = None):
        self.url = url

    @cached_property
    def engine(self) -> Engine:
        """The engine (a new database is created at head when needed)."""
        from warehouse.db import open_db
        return open_db(self.url)

    def _reader(self) -> Engine:
        # reads never write: a read-only opening never recreates the views (a reader role could not, and a
        # dashboard host on another release would fight the writers over them); it warns when they are stale
        # (opened once and kept: a notebook's hundredth query costs the query, not a new engine)
        from warehouse.db import open_db
        if "engine" in self.__dict__:
            return self.__dict__["engine"]
        if "_read_engine" not in self.__dict__:
            self.__dict__["_read_engine"] = open_db(self.url, create=False, readonly=True)
        return self.__dict__["_read_engine"]

    def ingest(self, paths: str | Path | Iterable[str | Path], *, label: str | None = None,
               tags: dict[str, str] | None = None, freq_mhz: float | None = None, glob: str | None = None,
               jobs: int = 1) -> list[dict[str, Any]]:
        """Store CSVs as runs; one dict per file: ``path``, ``run_id``, ``ops``, ``existing``, ``warnings``, or
        ``error`` (the other files are still ingested). ``jobs`` > 1 ingests several files in that many worker
        processes (:mod:`warehouse.parallel`; call it from a script's ``if __name__ == "__main__":``)."""
        from warehouse.devicelog import check_freq_option
        from warehouse.files import DEFAULT_GLOB
        from warehouse.ingest import find_csvs
        from warehouse.parallel import ingest_files

        check_freq_option(freq_mhz)
        items = [str(paths)] if isinstance(paths, (str, Path)) else [str(p) for p in paths]
        out: list[dict[str, Any]] = []
        files: list[Path] = []
        for f in find_csvs(items, glob or DEFAULT_GLOB):
            if isinstance(f, InputError):
                out.append({"path": f.path, "error": str(f)})
            else:
                files.append(f)
        for f, r in ingest_files(self.engine, files, jobs, label=label, tags=tags, freq_mhz=freq_mhz):
            if isinstance(r, WarehouseError):  # this file failed; the others are still tried
                out.append({"path": str(f), "error": str(r)})
            else:
                out.append({"path": r.path, "run_id": r.run_id, "ops": r.ops, "existing": r.existing,
                            "warnings": r.warnings})
        return out

    def runs(self, label: str | None = None, warnings: bool = False) -> list[dict[str, Any]]:
        """Every run, oldest capture first, with tags, history attribution (and warnings)."""
        from warehouse.runs import list_runs
        return list_runs(self._reader(), label=label, warnings=warnings)

    def report(self, run: str | int = "latest", label: str | None = None) -> dict[str, Any]:
        """The OPT_BASELINE report document of a run (as profile_summary.py writes it)."""
        from warehouse.report import build_report
        from warehouse.runs import resolve_run
        eng = self._reader()
        with eng.connect() as conn:
            run_id = resolve_run(conn, str(run), label)
        return build_report(eng, run_id)

    def perf_table(self, run: str | int = "latest", label: str | None = None, **options: Any) -> Any:
        """tt-perf-report's per-op table of a run, as a :class:`warehouse.perf.PerfTable` (see
        :func:`warehouse.perf.perf_table` for ``section``, ``start``, ``end``, ``merge``, ``arch``, ``sort``)."""
        from warehouse.perf import perf_table
        from warehouse.runs import resolve_run
        with self._reader().connect() as conn:
            return perf_table(conn, resolve_run(conn, str(run), label), **options)

    def perf(self, run: str | int = "latest", label: str | None = None, **options: Any) -> dict[str, Any]:
        """:meth:`perf_table` as a document: ``summary`` (device / host ops, totals) and ``rows`` (one dict per
        row, with tt-perf-report's column names)."""
        from warehouse.perf import summary
        table = self.perf_table(run, label, **options)
        return {"summary": summary(table), "rows": table.rows}

    def layers_in(self, block: str) -> list[str]:
        """The layers inside ``block`` (its c: layers, and its glue: ops of the block outside any layer), as the
        rollups name them; empty when no run has the block."""
        from sqlalchemy import text
        with self._reader().connect() as conn:
            names = [r for r in conn.execute(text(
                "SELECT DISTINCT layer FROM place WHERE block = :b AND layer IS NOT NULL AND layer <> '' "
                "ORDER BY layer"), {"b": block}).scalars()]
            glue = conn.execute(text("SELECT 1 FROM rollup WHERE grouping = 'layer' AND key = :k LIMIT 1"),
                                {"k": f"[{block} glue]"}).first()
        return names + ([f"[{block} glue]"] if glue else [])

    def compare(self, a: str | int, b: str | int, **options: Any) -> dict[str, Any]:
        """Run B against run A (see :func:`warehouse.compare.compare_runs` for ``by``, ``section``, ``metric``,
        ``keys``)."""
        from warehouse.compare import compare_runs
        return compare_runs(self._reader(), str(a), str(b), **options)

    def regressions(self, **options: Any) -> dict[str, Any]:
        """The newest runs against their history (see :func:`warehouse.regressions.find_regressions`)."""
        from warehouse.regressions import find_regressions
        return find_regressions(self._reader(), **options)

    def changes(self, *, label: str | None = None, tags: dict[str, str] | None = None, since: str | None = None,
                until: str | None = None, fdr: float = 0.01, min_sigmas: float = 6.0, min_change: float = 0.01,
                min_us: float = 1.0, metrics: list[str] | None = None) -> Any:
        """The change points of a label's history, one per cause: a :class:`warehouse.changes.ChangesResult`
        (``.changes``, ``.outliers``, ``.to_json()``). See :func:`warehouse.changes.find_changes`."""
        from warehouse.changes import find_changes
        return find_changes(self._reader(), label=label, tags=tags, since=since, until=until, fdr=fdr,
                            min_sigmas=min_sigmas, min_change=min_change, min_us=min_us, metrics=metrics)

    def trend(self, **options: Any) -> dict[str, Any]:
        """A grouping's series over the runs (see :func:`warehouse.trend.trend`)."""
        from warehouse.trend import trend
        return trend(self._reader(), **options)

    def query(self, sql: str, max_rows: int | None = None, **params: Any) -> list[dict[str, Any]]:
        """One read-only SELECT (``:name`` parameters); a list of dicts."""
        from warehouse.query import stream_sql
        with stream_sql(self._reader(), sql, params, max_rows=max_rows) as res:
            return [dict(zip(res.columns, r)) for r in res.rows]

    def frame(self, sql: str, **params: Any) -> Any:
        """:meth:`query` as a pandas DataFrame (needs pandas)."""
        import pandas as pd
        return pd.DataFrame(self.query(sql, **params))
