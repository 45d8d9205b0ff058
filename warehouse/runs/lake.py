"""Warehouse -> Parquet lake: every run as typed, zstd-compressed Parquet files in Hive partitions, for DuckDB,
Spark, Trino or ClickHouse to read when history outgrows one database.

Layout (``label=`` and ``date=`` are Hive partitions: the run's label, ``__HIVE_DEFAULT_PARTITION__`` for none,
and the day of its time, capture else ingest)::

    DIR/<dataset>/label=<label>/date=<YYYY-MM-DD>/run-<id>-<sha256[:12]>.parquet
    DIR/_warehouse_lake.json      what was exported (run, partition, fingerprint, files): the next export's guide
    DIR/duckdb_views.sql          the warehouse's view names over the lake, for DuckDB (``.read`` it)

Every run has one file in each dataset (an empty one when it has no such rows, so every file set agrees on its
schema). An export is incremental: a run whose files are there with the same fingerprint (its id, label, time
and tags) is not touched; a run whose label or tags changed is written again; a run removed from the warehouse
leaves the lake. Each file is written under a temporary name and renamed, and the manifest is rewritten after
each run, so an interrupted export leaves whole files only and the next one resumes. The schema version is in
every file's metadata (``warehouse.lake_schema``).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, select, text

from warehouse.store import schema as t
from warehouse.errors import WarehouseError
from warehouse.store.view_types import VIEW_TYPES, generic
from warehouse import __version__
from warehouse.store.db import read_snapshot
from warehouse.store.dialect import rank_of
from warehouse.store.views import VIEWS, view_sql

LAKE_SCHEMA = 1  # bump when a dataset's columns change meaning; readers check ``warehouse.lake_schema``
MANIFEST = "_warehouse_lake.json"  # (a leading underscore: Spark and Hive skip it as data)
DUCKDB_SQL = "duckdb_views.sql"
NO_LABEL = "__HIVE_DEFAULT_PARTITION__"  # Hive's partition value for NULL, read back as NULL by DuckDB and Spark
BATCH = 50_000  # rows per fetch and per Parquet row group: memory stays flat on a 1M-op run

_TABLE_SKIP = {"label"}  # partition columns are in the path, not in the files (the Hive convention)


def _arrow_type(generic_name: str) -> Any:
    import pyarrow as pa
    return {"INTEGER": pa.int64(), "REAL": pa.float64(), "TEXT": pa.string(), "BOOLEAN": pa.bool_(),
            "TIMESTAMP": pa.timestamp("us"), "BLOB": pa.binary()}[generic_name]


@dataclass(frozen=True)
class Dataset:
    """One kind of lake file: its name (the folder), its columns with their declared types, and how one run's rows
    are read (``sql`` with ``:run``, or a table's rows selected by ``run_id``)."""

    name: str
    doc: str
    columns: tuple[tuple[str, str], ...]  # (name, declared type: INTEGER, REAL, TEXT, BOOLEAN, TIMESTAMP)
    sql: str | None = None
    table: Any = None
    read: Callable[[Connection, int], Iterator[Sequence[Any]]] | None = None

    def rows(self, conn: Connection, run_id: int) -> Iterator[Sequence[Any]]:
        """The run's rows, in the dataset's column order."""
        if self.read is not None:
            yield from self.read(conn, run_id)
            return
        if self.table is not None:
            run = self.table.c.id if self.table is t.run else self.table.c.run_id
            cols = [run if n == "run_id" else self.table.c[n] for n, _ in self.columns]
            key = [c for c in (self.table.c.get("row_no"), self.table.c.get("id")) if c is not None]
            stmt = select(*cols).where(run == run_id).order_by(*key)
            result = conn.execute(stmt.execution_options(stream_results=True, yield_per=BATCH))
        else:
            assert self.sql is not None
            result = conn.execute(text(self.sql).execution_options(stream_results=True, yield_per=BATCH),
                                  {"run": run_id})
        for part in result.partitions(BATCH):
            yield from part


def _table_dataset(name: str, doc: str, table: Any) -> Dataset:
    # (the run's own id is run_id here, as in every other dataset)
    return Dataset(name, doc, tuple(("run_id" if table is t.run and c.name == "id" else c.name, generic(c.type))
                                    for c in table.columns if c.name not in _TABLE_SKIP), table=table)


def _view_columns(view: str, names: Sequence[str], rename: dict[str, str] | None = None) -> list[tuple[str, str]]:
    rename = rename or {}
    return [(rename.get(n, n), VIEW_TYPES[view][n]) for n in names]


# The op dataset: op_detail, the history attribution and replay iteration of op_history, tt-perf-report's figures
# of op_perf (names that op_detail has already get a perf_ prefix), and the typed ns values as stored.
_DETAIL = [n for n in VIEW_TYPES["op_detail"] if n not in ("op_id", "op_code_id", "rank")]  # (rank: a run's tags)
_ROLLUP = [n for n in VIEW_TYPES["rollup"] if n != "rank"]
_HISTORY = ["iteration", "iter_pos", "hist_block", "hist_layer", "hist_how"]
_PERF = ["identity", "is_host", "device_time_us", "invalid_duration", "dram_gbs", "dram_pct", "tflops", "flops_pct",
         "bound", "bound_analysis", "math_fidelity", "dram_bytes", "host_duration_ns", "label", "category",
         "op2op_us", "cores", "sub_device", "available_cores"]
_PERF_RENAME = {"label": "perf_label", "category": "perf_category", "op2op_us": "perf_op2op_us",
                "cores": "perf_cores"}
_RAW = [("kernel_ns", "REAL"), ("fw_ns", "REAL"), ("op2op_ns", "REAL")]
# (three reads in row order, zipped: one join of the views makes SQLite compute op_perf for every run)
_OPS_PARTS = (
    "SELECT row_no, " + ", ".join(_DETAIL) + " FROM op_detail WHERE run_id = :run ORDER BY row_no",
    "SELECT h.row_no, " + ", ".join(f"h.{n}" for n in _HISTORY) + ", " + ", ".join(f"o.{n}" for n, _ in _RAW)
    + " FROM op_history h JOIN op o ON o.id = h.op_id WHERE h.run_id = :run ORDER BY h.row_no",
    "SELECT row_no, " + ", ".join(_PERF) + " FROM op_perf WHERE run_id = :run ORDER BY row_no")


def _op_rows(conn: Connection, run_id: int) -> Iterator[Sequence[Any]]:
    """The ops dataset's rows: op_detail's, op_history's with the raw ns, op_perf's, one op each."""
    def stream(sql: str) -> Iterator[Sequence[Any]]:
        result = conn.execute(text(sql).execution_options(stream_results=True, yield_per=BATCH), {"run": run_id})
        for part in result.partitions(BATCH):
            yield from part
    nh = len(_HISTORY)
    for d, h, p in zip(*(stream(q) for q in _OPS_PARTS), strict=True):
        if not d[0] == h[0] == p[0]:
            raise WarehouseError(f"run {run_id}: op rows {d[0]}, {h[0]}, {p[0]} out of step; run warehouse check")
        yield (*d[1:], *h[1:1 + nh], *p[1:], *h[1 + nh:])


# (``runs`` last: a run's files are written in this order and removed in the reverse one, and the lake's views read
# only runs whose ``runs`` file is there, so a reader sees a run with all its datasets or not at all)
DATASETS: tuple[Dataset, ...] = (
    _table_dataset("run_tags", "a run's --tag key=value pairs", t.run_tag),
    _table_dataset("sections", "eager / trace and custom sections with their rows", t.section),
    _table_dataset("signposts", "every signpost row", t.signpost),
    Dataset("ops", "every op: op_detail's columns, history's attribution and iteration (op_history), "
                   "tt-perf-report's figures (op_perf; perf_ where a name clashes), raw ns",
            tuple(_view_columns("op_detail", _DETAIL) + _view_columns("op_history", _HISTORY)
                  + _view_columns("op_perf", _PERF, _PERF_RENAME) + _RAW), read=_op_rows),
    Dataset("rollups", "the rollup view: per-iteration metrics per section, grouping, key and device",
            tuple(_view_columns("rollup", _ROLLUP)),
            sql="SELECT " + ", ".join(_ROLLUP) + " FROM rollup WHERE run_id = :run "
                "ORDER BY section, grouping, key, device"),
    _table_dataset("runs", "one row per run: the run table (label in the partition)", t.run),
)
_DATASET_NAMES = frozenset(d.name for d in DATASETS)


@dataclass
class LakeExport:
    """What one export did: runs written (new or changed), kept as they were, and removed; files and bytes
    written; seconds."""

    dest: str
    written: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"dest": self.dest, "written": self.written, "unchanged": len(self.unchanged),
                "removed": self.removed, "files": self.files, "bytes": self.bytes,
                "seconds": round(self.seconds, 3), "schema": LAKE_SCHEMA}


def partition(label: str | None, when: datetime) -> str:
    """A run's partition path: ``label=<label>/date=<YYYY-MM-DD>`` (the label percent-encoded, as Hive does; a
    label spelled as Hive's NULL has its underscores encoded too, so that it reads back as itself)."""
    if label is None:
        lab = NO_LABEL
    else:
        lab = quote(label, safe="")
        if lab == NO_LABEL:
            lab = lab.replace("_", "%5F")
    return f"label={lab}/date={when:%Y-%m-%d}"


def _runs(conn: Connection, label: str | None) -> list[dict[str, Any]]:
    stmt = select(t.run.c.id, t.run.c.sha256, t.run.c.label, t.run.c.captured_at, t.run.c.ingested_at)
    if label is not None:
        stmt = stmt.where(t.run.c.label == label)
    tags: dict[int, list[tuple[str, str]]] = {}
    for run_id, k, v in conn.execute(select(t.run_tag.c.run_id, t.run_tag.c.key, t.run_tag.c.value)).all():
        tags.setdefault(run_id, []).append((k, v))
    out = []
    for run_id, sha, lab, captured, ingested in conn.execute(stmt.order_by(t.run.c.id)).all():
        when = captured or ingested
        part = partition(lab, when)
        # (what the files depend on besides the run's content, which its sha256 fixes: the datasets' columns too,
        # so that a run written before a column was added is written again, never left with the column empty)
        fp = hashlib.sha256(json.dumps([LAKE_SCHEMA, run_id, lab, str(when), sorted(tags.get(run_id, [])),
                                        _COLUMNS_DIGEST]).encode()).hexdigest()[:16]
        out.append({"run_id": run_id, "sha256": sha, "label": lab, "partition": part, "fingerprint": fp})
    return out


def _load_manifest(dest: Path) -> dict[str, Any]:
    path = dest / MANIFEST
    if not path.exists():
        return {"schema": LAKE_SCHEMA, "runs": {}}
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise WarehouseError(f"{path}: not a lake manifest ({e}); remove it to export the lake again") from e
    if doc.get("schema") != LAKE_SCHEMA:
        raise WarehouseError(f"{path}: lake schema {doc.get('schema')}, this warehouse writes {LAKE_SCHEMA}; "
                             "export into a new folder (or remove the old lake)")
    return doc


def _save_manifest(dest: Path, doc: dict[str, Any]) -> None:
    with _replacing(dest, MANIFEST) as f:
        f.write(json.dumps(doc, indent=1, sort_keys=True).encode())


# ------------------------------------------------------------------------------------------------ trusting nothing
# The lake's folder is shared storage: anyone who can write it can plant links or edit the manifest. So the exporter
# removes only files whose path has the lake's layout and no link on the way, creates its temporary files itself
# (exclusively, under random names, never through a link) and renames them into place (a rename replaces a planted
# link, never what it points to).
_TMP_PREFIX = ".tmp-"
_LAYOUT = re.compile(r"(?P<ds>[a-z_]+)/label=[^/]+/date=\d{4}-\d{2}-\d{2}/run-\d+-[0-9a-f]{12}\.parquet")


def _no_link(root: Path, rel: str) -> Path | None:
    """``root / rel`` when no part of ``rel`` is a link (None otherwise)."""
    cur = root
    for part in Path(rel).parts:
        cur = cur / part
        if cur.is_symlink():
            return None
    return cur


def _lake_file(root: Path, rel: Any) -> Path | None:
    """The path of the lake file ``rel`` names, or None when ``rel`` is not a file of the lake's layout inside it
    (``../victim``, an absolute path, a name of another shape, a path through a link)."""
    if not isinstance(rel, str):
        return None
    m = _LAYOUT.fullmatch(rel)
    if m is None or m.group("ds") not in _DATASET_NAMES:
        return None
    return _no_link(root, rel)


def _folder(root: Path, rel: str) -> Path:
    """The folder ``root / rel``, made where missing; a part that is a link or not a folder is refused."""
    cur = root
    for part in Path(rel).parts:
        cur = cur / part
        try:
            os.mkdir(cur)
        except FileExistsError:
            if cur.is_symlink() or not cur.is_dir():
                raise WarehouseError(f"{cur}: a link or a file where the lake keeps a folder; the lake follows no "
                                     "link: remove it, or export into a new folder") from None
        except OSError as e:
            raise _os_error(e, cur) from None
    return cur


def _os_error(e: OSError, path: Path) -> WarehouseError:
    """An OS error while writing the lake, naming the path and what to do."""
    what = "permission denied" if isinstance(e, PermissionError) else (e.strerror or str(e))
    return WarehouseError(f"{path}: cannot write the lake ({what}); export into a folder you can write")


@contextlib.contextmanager
def _replacing(folder: Path, name: str) -> Iterator[Any]:
    """A binary file to write that replaces ``folder / name`` whole once the block ends (nothing of it if the
    block fails): created exclusively under a random name (``mkstemp``: O_EXCL, never through a link)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=".part", dir=folder)
    except OSError as e:
        raise _os_error(e, folder / name) from None
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)  # (mkstemp's 0600 would hide the lake from the people who read it)
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, folder / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write(ds: Dataset, conn: Connection, run_id: int, root: Path, rel: str, meta: dict[bytes, bytes]) -> int:
    """One run's file of one dataset, written under a temporary name and renamed; its size."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(n, _arrow_type(ty)) for n, ty in ds.columns], metadata=meta)
    folder = _folder(root, str(Path(rel).parent))
    rows: list[Sequence[Any]] = []

    def flush(writer: Any) -> None:
        cols = list(zip(*rows)) if rows else [()] * len(ds.columns)
        writer.write_table(pa.Table.from_arrays([_array(c, f.type) for c, f in zip(cols, schema)], schema=schema))
        rows.clear()

    try:
        with _replacing(folder, Path(rel).name) as f:
            with pq.ParquetWriter(f, schema, compression="zstd") as writer:
                for r in ds.rows(conn, run_id):
                    rows.append(r)
                    if len(rows) >= BATCH:
                        flush(writer)
                if rows:
                    flush(writer)
    except OSError as e:
        raise _os_error(e, root / rel) from None
    return (root / rel).stat().st_size


def _array(values: Sequence[Any], type_: Any) -> Any:
    """One column as Arrow ``type_`` (PostgreSQL gives NUMERIC results as Decimal: as float for a REAL column)."""
    import pyarrow as pa
    try:
        return pa.array(values, type=type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        if pa.types.is_floating(type_):
            return pa.array([None if v is None else float(v) for v in values], type=type_)
        if pa.types.is_integer(type_):
            return pa.array([None if v is None else int(v) for v in values], type=type_)
        raise


@contextlib.contextmanager
def _locked(dest: Path) -> Iterator[None]:
    """One export at a time into a lake (a second one waits)."""
    import fcntl
    try:
        fd = os.open(dest / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except OSError as e:
        raise _os_error(e, dest / ".lock") from None
    with os.fdopen(fd, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def warehouse_id(conn: Connection) -> str:
    """The warehouse's own id (``warehouse_meta``), which a lake's manifest names."""
    found = conn.execute(select(t.warehouse_meta.c.value).where(t.warehouse_meta.c.key == "id")).scalar()
    if found is None:  # pragma: no cover - made by the migration that created the table
        raise WarehouseError("this warehouse has no id; run `warehouse db upgrade`")
    return str(found)


def _open_lake(root: Path, wid: str, shas: set[str]) -> dict[str, Any]:
    """The manifest of the lake at ``root`` for warehouse ``wid`` (a new one for an empty folder). Refused: a
    folder that holds other things and no manifest, and a lake that mirrors another warehouse."""
    if not (root / MANIFEST).exists():
        others = [e.name for e in os.scandir(root) if e.name != ".lock"]
        if others:
            raise WarehouseError(f"{root}: a folder that is not empty and holds no lake ({MANIFEST} is missing; "
                                 f"found {others[0]!r}); export into an empty or new folder")
        return {"schema": LAKE_SCHEMA, "warehouse": wid, "runs": {}}
    doc = _load_manifest(root)
    if not isinstance(doc.get("runs"), dict):
        raise WarehouseError(f"{root / MANIFEST}: not a lake manifest (no runs); remove it to export the lake again")
    owner = doc.get("warehouse")
    if owner is None and set(doc["runs"]) <= shas:  # a lake written before manifests named their warehouse
        doc["warehouse"] = owner = wid
    if owner != wid:
        raise WarehouseError(f"{root}: this lake mirrors another warehouse (id {owner}); an export would remove "
                             "that warehouse's runs: export into a folder of its own")
    return doc


def _sweep(root: Path, manifest: dict[str, Any]) -> int:
    """Remove what a killed export left: temporary files, and lake files that no manifest entry names. Returns
    how many files went."""
    named = {f for e in manifest["runs"].values() for f in e.get("files", []) if isinstance(f, str)}
    gone = 0
    for ds in DATASETS:
        top = root / ds.name
        if top.is_symlink() or not top.is_dir():
            continue
        for folder, _dirs, files in os.walk(top, followlinks=False):
            for name in files:
                path = Path(folder) / name
                rel = path.relative_to(root).as_posix()
                if name.startswith(_TMP_PREFIX) or (rel not in named and _lake_file(root, rel) is not None):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
                        gone += 1
    return gone


def export_lake(engine: Engine, dest: str | Path, *, label: str | None = None,
                progress: Callable[[int, int, int, bool], None] | None = None) -> LakeExport:
    """Export every run (of ``label`` only, when given) into the lake at ``dest``, incrementally: only runs that
    are new or changed are written, and runs no longer in the warehouse are removed (with ``label``, only those
    of that label). ``progress(done, total, run_id, written)`` is called after each run.

    A run is recorded in the manifest as being written before its first file, and its ``runs`` file is written
    last; an export that was killed is finished by the next one, which also sweeps files no entry names."""
    try:
        import pyarrow  # noqa: F401
    except ImportError as e:
        raise WarehouseError("the Parquet export needs pyarrow: pip install 'tt-profile-warehouse[parquet]'") from e

    t0 = time.perf_counter()
    root = Path(dest)
    if root.exists() and not root.is_dir():
        raise WarehouseError(f"{dest}: not a folder; name a folder for the lake")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _os_error(e, root) from None
    root = root.resolve()
    out = LakeExport(str(dest))
    meta = {b"warehouse.lake_schema": str(LAKE_SCHEMA).encode(), b"warehouse.version": __version__.encode()}
    with read_snapshot(engine) as conn:
        runs = _runs(conn, label)
        wid = warehouse_id(conn)
        all_shas = {sha for (sha,) in conn.execute(select(t.run.c.sha256)).all()}
        manifest = _open_lake(root, wid, all_shas)
        with _locked(root):
            manifest = _open_lake(root, wid, all_shas)  # (again: another export may have written it meanwhile)
            done: dict[str, Any] = manifest["runs"]
            _sweep(root, manifest)
            live = {r["sha256"] for r in runs}
            for sha, entry in list(done.items()):
                unfinished = entry.get("state") == "writing"
                if unfinished or (sha not in live and (label is None or entry.get("label") == label)):
                    _remove_files(root, entry)
                    del done[sha]
                    if not unfinished:
                        out.removed.append(entry["run_id"])
                    _save_manifest(root, manifest)
            for n, r in enumerate(runs, 1):
                old = done.get(r["sha256"])
                fresh = old is None or old["fingerprint"] != r["fingerprint"] or not all(
                    (p := _lake_file(root, f)) is not None and p.is_file() for f in old["files"])
                if fresh:
                    if old is not None:
                        _remove_files(root, old)
                    name = f"run-{r['run_id']}-{r['sha256'][:12]}.parquet"
                    files = [f"{ds.name}/{r['partition']}/{name}" for ds in DATASETS]
                    entry = {"run_id": r["run_id"], "label": r["label"], "partition": r["partition"],
                             "fingerprint": r["fingerprint"], "files": files, "state": "writing"}
                    done[r["sha256"]] = entry
                    _save_manifest(root, manifest)  # (before the first file: a kill leaves it named)
                    for ds, rel in zip(DATASETS, files):
                        out.bytes += _write(ds, conn, r["run_id"], root, rel, meta)
                    out.files += len(files)
                    del entry["state"]
                    _save_manifest(root, manifest)
                    out.written.append(r["run_id"])
                else:
                    out.unchanged.append(r["run_id"])
                if progress:
                    progress(n, len(runs), r["run_id"], fresh)
            with _replacing(root, DUCKDB_SQL) as f:
                f.write(duckdb_sql(str(root)).encode())
    out.seconds = time.perf_counter() - t0
    return out


def _remove_files(root: Path, entry: dict[str, Any]) -> None:
    """A run's files, ``runs`` first (readers stop seeing the run before its other files go); only paths of the
    lake's own layout, inside it, are ever removed."""
    files = entry.get("files")
    for f in reversed(files if isinstance(files, list) else []):
        p = _lake_file(root, f)
        if p is None:
            continue  # (not a path this exporter writes: never removed)
        with contextlib.suppress(FileNotFoundError):
            if not p.is_symlink() and p.is_file():
                os.unlink(p)
        with contextlib.suppress(OSError):  # (an empty partition folder goes too; a shared one stays)
            p.parent.rmdir()
            p.parent.parent.rmdir()


# ------------------------------------------------------------------------------------------------ reading it
def _scan(name: str) -> str:
    return (f"read_parquet(getvariable('lake') || '/{name}/**/*.parquet', hive_partitioning = true, "
            "hive_types = {'label': VARCHAR, 'date': DATE}, union_by_name = true)")


# (every dataset's columns: a run's files depend on them)
_COLUMNS_DIGEST = hashlib.sha256(json.dumps([[d.name, list(d.columns)] for d in DATASETS]).encode()).hexdigest()[:16]


def _cols(ds: str, skip: Sequence[str] = ()) -> str:
    d = next(x for x in DATASETS if x.name == ds)
    return ", ".join(n for n, _ in d.columns if n not in skip)


# The warehouse views that read only other views and tables the lake has: created over the lake from the same SQL.
LAKE_VIEWS = ("run_info", "series", "series_section", "series_block", "series_layer", "series_op_code",
              "series_category", "series_device", "op_identity", "perf_series", "perf_sub_device_series")


def duckdb_sql(lake: str) -> str:
    """DuckDB statements that give the lake the warehouse's table and view names (``run``, ``run_tag``,
    ``section``, ``signpost``, ``rollup``, ``op_detail``, ``op_history``, ``op_perf``, and the views of
    :data:`LAKE_VIEWS` from the warehouse's own definitions), so its SQL runs unchanged; ``ops`` is every op
    column. Change the first line to point at a copy of the lake elsewhere (``s3://bucket/lake``)."""

    rank = rank_of("ops")  # (a run's rank is its tags': read from the lake's run_tag as the warehouse reads it)
    detail = [rank if n == "rank" else n for n in VIEW_TYPES["op_detail"] if n not in ("op_id", "op_code_id")]
    history = [rank if n == "rank" else n for n in VIEW_TYPES["op_history"] if n != "op_id"]
    perf = [f"{_PERF_RENAME.get(n, n)} AS {n}" if n in _PERF_RENAME else rank if n == "rank" else
            ("device_id AS device" if n == "device" else n) for n in VIEW_TYPES["op_perf"]]
    by_name = {name: sql for name, _, sql in VIEWS}
    # a run's rows are read once its runs file is there, which is written last (an export killed half-way through
    # a run never shows part of it)
    whole = " WHERE run_id IN (SELECT id FROM run)"
    out = [f"SET VARIABLE lake = '{lake.replace(chr(39), chr(39) * 2)}';",
           f"CREATE OR REPLACE VIEW run AS SELECT run_id AS id, {_cols('runs', ['run_id'])}, label "
           f"FROM {_scan('runs')};",
           f"CREATE OR REPLACE VIEW run_tag AS SELECT {_cols('run_tags')} FROM {_scan('run_tags')}{whole};",
           _lake_view(by_name["capture_rank"]),
           f"CREATE OR REPLACE VIEW section AS SELECT {_cols('sections')} FROM {_scan('sections')}{whole};",
           f"CREATE OR REPLACE VIEW signpost AS SELECT {_cols('signposts')} FROM {_scan('signposts')}{whole};",
           f"CREATE OR REPLACE VIEW rollup AS SELECT {_cols('rollups')}, {rank_of('rr')} "
           f"FROM {_scan('rollups')} rr{whole};",
           f"CREATE OR REPLACE VIEW ops AS SELECT * FROM {_scan('ops')}{whole};",
           f"CREATE OR REPLACE VIEW op_detail AS SELECT {', '.join(detail)} FROM ops;",
           f"CREATE OR REPLACE VIEW op_history AS SELECT {', '.join(history)} FROM ops;",
           f"CREATE OR REPLACE VIEW op_perf AS SELECT {', '.join(perf)} FROM ops;"]
    out += [_lake_view(by_name[name]) for name in LAKE_VIEWS]
    return "\n".join(out) + "\n"


def _lake_view(sql: str | dict[str, str]) -> str:
    """A warehouse view's statement for DuckDB (PostgreSQL's SQL, which DuckDB reads)."""
    return view_sql(sql, "postgresql").strip().replace("CREATE VIEW", "CREATE OR REPLACE VIEW", 1) + ";"


def connect_duckdb(lake: str | Path) -> Any:
    """An in-memory DuckDB connection with the lake's views (:func:`duckdb_sql`); needs the duckdb package."""
    try:
        import duckdb
    except ImportError as e:
        raise WarehouseError("reading the lake needs duckdb: pip install 'tt-profile-warehouse[parquet]'") from e
    con = duckdb.connect()
    for stmt in duckdb_sql(str(Path(lake).resolve())).split(";\n"):
        if stmt.strip():
            con.execute(stmt)
    return con
