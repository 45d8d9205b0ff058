"""Series across runs, read from the rollups (runs x keys, never ops): which runs match a filter, their metadata,
the sections they have, and per-iteration figures per section, grouping, key and device."""
from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterable

import numpy as np
from sqlalchemy import Connection, select, text

from warehouse.store import schema as t
from warehouse.analysis.rollups import computed_rows, run_rows

from warehouse.errors import NotFound, UsageError
from warehouse.registry.measures import COLUMN_METRIC, GROUPINGS, METRIC, METRICS, Metric, grouping_keys
from warehouse.store.listing import order_key
from warehouse.store.rollupsql import rollup_of, section_names, sql_list
from warehouse.store.dialect import exact_number_text, text_list_agg
from warehouse.registry.contract import EAGER, TRACE

ALL_DEVICES = -1


@dataclass
class RunMeta:
    """What every history output says about a run besides its id."""

    id: int
    time: str | None  # capture time, else ingest time (ISO)
    captured: bool
    label: str | None
    tags: dict[str, str] = field(default_factory=dict)
    file_name: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.id, "time": self.time, "captured": self.captured, "label": self.label,
                "tags": self.tags, "file": self.file_name, "short": self.short()}

    def short(self) -> str:
        """``run 12 (2026-11-12 02:00, resnet, branch=main)``."""
        bits = [b for b in ((self.time or "")[:16], self.label or "",
                            " ".join(f"{k}={v}" for k, v in self.tags.items())) if b]
        return f"run {self.id}" + (f" ({', '.join(bits)})" if bits else "")


@dataclass
class Point:
    """One series point: a key's per-iteration figures in one run, section and device."""

    ops: float
    iterations: int
    values: dict[str, float | None]  # metric key -> per-iteration value
    spreads: dict[str, float | None]  # metric key -> max - min over iterations


def select_runs(conn: Connection, label: str | None = None, tags: dict[str, str] | None = None) -> list[int]:
    """Ids of the runs with ``label`` and every tag in ``tags``, oldest capture first; a filter that selects no
    run is an error (exit 2), never an empty answer."""
    q = select(t.run.c.id)
    if label is not None:
        q = q.where(t.run.c.label == label)
    for k, v in (tags or {}).items():
        q = q.where(t.run.c.id.in_(select(t.run_tag.c.run_id).where(t.run_tag.c.key == k, t.run_tag.c.value == v)))
    runs = list(conn.execute(q.order_by(*order_key())).scalars())
    if not runs and (label is not None or tags):
        known = sorted(x for x in conn.execute(select(t.run.c.label).distinct()).scalars() if x)
        what = " and ".join(filter(None, [f"label {label!r}" if label is not None else "",
                                          " ".join(f"tag {k}={v}" for k, v in (tags or {}).items())]))
        raise NotFound(f"no runs match {what} (labels: {', '.join(known) or 'none'})")
    return runs


def run_meta(conn: Connection, ids: Iterable[int]) -> dict[int, RunMeta]:
    """Capture time, label and tags of runs, in the order of ``ids`` (a back end returns rows in any order: the
    JSON documents built from this must be the same text on both)."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return {}
    out: dict[int, RunMeta] = {}
    for rid, cap, ing, label, name in conn.execute(select(
            t.run.c.id, t.run.c.captured_at, t.run.c.ingested_at, t.run.c.label, t.run.c.file_name)
            .where(t.run.c.id.in_(ids))):
        when = cap or ing
        out[rid] = RunMeta(rid, when.isoformat(sep=" ") if when else None, cap is not None, label, {}, name)
    for rid, k, v in conn.execute(select(t.run_tag.c.run_id, t.run_tag.c.key, t.run_tag.c.value)
                                  .where(t.run_tag.c.run_id.in_(ids)).order_by(t.run_tag.c.key)):
        out[rid].tags[k] = v
    return {r: out[r] for r in ids if r in out}


def sections_of(conn: Connection, run_ids: Iterable[int]) -> dict[int, list[str]]:
    """The sections each run has ('' is the whole run), in a stable order: eager, trace, then custom ones."""
    ids = list(run_ids)
    out: dict[int, list[str]] = {r: [] for r in ids}
    if not ids:
        return out
    rows = conn.execute(text(
        f"SELECT run_id, section FROM {rollup_of(['section'])} WHERE grouping = 'section' AND device = -1 "
        "AND run_id IN "
        f"({', '.join(str(int(r)) for r in ids)}) AND section IN ({sql_list(section_names(conn, ids))})")).all()
    order = {EAGER: 0, TRACE: 1, "": 3}
    for rid, sec in rows:
        out[rid].append(sec)
    for rid in out:
        out[rid].sort(key=lambda s: (order.get(s, 2), s))
    return out


def section_label(section: str) -> str:
    """How outputs name a section ('' is the whole run)."""
    return section if section else "(whole run)"


def resolve_sections(conn: Connection, section: str | None, run_ids: list[int]) -> list[str]:
    """The sections to look at: the one asked for (an error when no run has it), else every section of the
    runs, except the whole run when there are sections (it would count replays k times)."""
    have = sections_of(conn, run_ids)
    names: list[str] = []
    for secs in have.values():
        names += [s for s in secs if s not in names]
    if section is not None:
        want = "" if section in ("all", "") else section
        if want not in names:
            shown = ", ".join(section_label(n) for n in names) or "none"
            raise NotFound(f"{section!r}: no such section in run(s) "
                           f"{', '.join(map(str, run_ids))} (sections there: {shown}; 'all' is the whole run)",
                           param="section")
        return [want]
    real = [n for n in names if n != ""]
    return real or [""]


def fetch(conn: Connection, run_ids: list[int], section: str, grouping: str, *, devices: bool = False,
          keys: Iterable[str] | None = None, layers: set[str] | None = None,
          metrics: Iterable[str] = (), cache: dict[tuple, list[tuple[Any, ...]]] | None = None
          ) -> dict[tuple[int, str, int], Point]:
    """``{(run, key, device): Point}`` from the rollups (the arguments: :func:`_rows`)."""
    out: dict[tuple[int, str, int], Point] = {}
    names, rows, extra_names, extra_rows = _rows(conn, run_ids, section, grouping, devices, keys, layers, metrics,
                                                 cache)
    for r in rows:
        out[(r[0], r[1], r[2])] = Point(float(r[4]), int(r[3]),
                                        {k: None if v is None else float(v) for k, v in zip(names, r[5::2])},
                                        {k: None if v is None else float(v) for k, v in zip(names, r[6::2])})
    for r in extra_rows:  # the computed metrics beside the stored ones: the same keys, from the ops
        if (r[0], r[1], r[2]) in out:
            p = out[(r[0], r[1], r[2])]
            p.values.update((k, None if v is None else float(v)) for k, v in zip(extra_names, r[5::2]))
            p.spreads.update((k, None if v is None else float(v)) for k, v in zip(extra_names, r[6::2]))
    return out


@dataclass
class Table:
    """A section and grouping's rollups over runs as arrays: row i is ``keys[i]`` (key, device), in the order
    the rows came; column j is ``runs[j]`` (the runs that have rows, ascending); NaN where a run has no row for
    the key or no figure."""

    keys: list[tuple[str, int]]
    runs: list[int]
    values: dict[str, np.ndarray]
    spreads: dict[str, np.ndarray]
    row: np.ndarray  # (key, run): the position of the run's row for the key among the rows read, -1 if none
    iterations: np.ndarray | None = None  # (key, run): the replays a figure is the mean of (NaN: no row)
    ops: np.ndarray | None = None  # (key, run): ops per iteration

    def keys_of(self, column: int) -> np.ndarray:
        """The rows (keys) that run ``column`` has, in the order its rows came."""

        at = self.row[:, column]
        mine = np.nonzero(at >= 0)[0]
        return mine[np.argsort(at[mine], kind="stable")]

    def column(self, run: int) -> int | None:
        """The column of ``run``, None when it has no rows."""
        i = bisect.bisect_left(self.runs, run)
        return i if i < len(self.runs) and self.runs[i] == run else None


def fetch_table(conn: Connection, run_ids: list[int], section: str, grouping: str, *, devices: bool = False,
                keys: Iterable[str] | None = None, metrics: Iterable[str] = (),
                cache: dict[tuple, list[tuple[Any, ...]]] | None = None) -> Table:
    """:func:`fetch` as a :class:`Table` (no object a row: a year of a big model's layers is 100,000s of rows)."""

    names, rows, extra_names, extra_rows = _rows(conn, run_ids, section, grouping, devices, keys, None, metrics,
                                                 cache)
    index: dict[tuple[str, int], int] = {}
    ki = np.array([index.setdefault((r[1], r[2]), len(index)) for r in rows], dtype=np.intp)
    runs = sorted({r[0] for r in rows})
    pos = {r: j for j, r in enumerate(runs)}
    rj = np.array([pos[r[0]] for r in rows], dtype=np.intp)
    shape = (len(index), len(runs))
    row = np.full(shape, -1, dtype=np.intp)
    row[ki, rj] = np.arange(len(rows))
    values: dict[str, np.ndarray] = {}
    spreads: dict[str, np.ndarray] = {}
    # the computed metrics' rows: of the keys and runs the stored ones have
    extra_rows = [r for r in extra_rows if (r[1], r[2]) in index and r[0] in pos]
    extra_at = (np.array([index[(r[1], r[2])] for r in extra_rows], dtype=np.intp),
                np.array([pos[r[0]] for r in extra_rows], dtype=np.intp))
    for ns, rs, at in ((names, rows, (ki, rj)), (extra_names, extra_rows, extra_at)):
        for i, k in enumerate(ns):
            values[k] = scatter(rs, 5 + 2 * i, at, shape)
            spreads[k] = scatter(rs, 6 + 2 * i, at, shape)
    return Table(list(index), runs, values, spreads, row, scatter(rows, 3, (ki, rj), shape),
                 scatter(rows, 4, (ki, rj), shape))


def scatter(rows: list[Any], col: int, at: tuple[np.ndarray, np.ndarray], shape: tuple[int, int]) -> np.ndarray:
    """A (key x run) matrix of column ``col`` of ``rows``: row i's value at ``(at[0][i], at[1][i])``, NaN
    elsewhere and for None."""

    m = np.full(shape, np.nan)
    if rows:
        m[at] = np.array([r[col] for r in rows], dtype=float)
    return m


def _rows(conn: Connection, run_ids: list[int], section: str, grouping: str, devices: bool,
          keys: Iterable[str] | None, layers: set[str] | None, metrics: Iterable[str],
          cache: dict[tuple, list[tuple[Any, ...]]] | None
          ) -> tuple[list[str], list[Any], list[str], list[Any]]:
    """The rollup rows ``(run, key, device, iterations, ops, value, spread, ...)``: the metric keys of their
    figures and the rows, then those of the computed metrics asked for beside the stored ones (the same keys, from
    the ops). ``devices`` adds the per-device rows (device -1 is all
    devices together); ``keys`` restricts to these keys; ``layers``, for a grouping that is not stored (computed
    from the ops), to the ops of these layers; ``metrics``: keys of computed metrics to add to the stored ones
    (computed from the runs' ops, :data:`warehouse.registry.measures.COMPUTED_METRICS`); ``cache``: a dict that keeps
    them for the calls of one command (each run is then read once for every grouping, not once per call)."""
    if grouping not in grouping_keys():
        raise UsageError(f"{grouping!r}: expected one of {', '.join(grouping_keys())}", param="by")
    extra = [METRIC[k] for k in dict.fromkeys(metrics) if not METRIC[k].stored]
    for m in extra:
        if m.key.startswith(COLUMN_METRIC) and run_ids and not conn.execute(text(
                f"SELECT 1 FROM run_column WHERE name = :n AND run_id IN ({', '.join(str(int(r)) for r in run_ids)}) "
                "LIMIT 1"), {"n": m.label}).first():
            raise NotFound(f"{m.key!r}: no run read has a CSV column {m.label!r} (col:<name> names a column of the "
                           "CSV header, exactly; `warehouse sql \"SELECT DISTINCT name FROM run_column\"` lists "
                           "them)", param="metrics")
    if not run_ids:
        return [], [], [], []
    cols = ", ".join(f"{m.column}, {m.spread_column}" for m in METRICS)
    params: dict[str, Any] = {"s": section, "g": grouping}
    where = "" if devices else " AND device = -1"
    if keys is not None:
        keys = list(keys)
        if not keys:
            return [], [], [], []
        names = [f"k{i}" for i in range(len(keys))]
        params.update(zip(names, keys))
        where += f" AND key IN ({', '.join(':' + n for n in names)})"
    sql = (f"SELECT run_id, key, device, iterations, ops, {cols} FROM {rollup_of(bind='g')} "
           "WHERE section = :s AND grouping = :g "
           f"AND run_id IN ({', '.join(str(int(r)) for r in run_ids)}){where}")
    g = next(g for g in GROUPINGS if g.key == grouping)
    wanted = None if keys is None else set(keys)

    def computed(ms: list[Metric]) -> list[tuple[Any, ...]]:

        if cache is None or layers is not None:
            rows = computed_rows(conn, run_ids, section, g, layers, ms)
        else:
            rows = []
            for rid in run_ids:
                ck = (rid, tuple(m.key for m in ms))
                if ck not in cache:  # every grouping a command may ask about, in one pass over the run's ops
                    cache[ck] = run_rows(conn, rid, [x for x in GROUPINGS if x.cli or x.key == grouping], ms)
                if not any(r[1] == grouping for r in cache[ck]):
                    cache[ck] += run_rows(conn, rid, [g], ms)
                rows += [(rid, *r[2:]) for r in cache[ck] if r[0] == section and r[1] == grouping]
        return [r for r in rows if (devices or r[2] == ALL_DEVICES) and (wanted is None or r[1] in wanted)]

    # (a grouping that is not stored is computed from the runs' ops with every metric; warehouse.registry.measures says
    # why it is not stored)
    first = METRICS if g.stored else [*METRICS, *extra]
    rows: list[Any]
    if g.stored:
        # the driver's own rows (a year of a big model's blocks is 300,000 of them: SQLAlchemy's row objects
        # cost more than the query)
        res = conn.execute(text(sql), params)
        try:
            rows = list(res.cursor.fetchall()) if res.cursor is not None else []
        finally:
            res.close()
    else:
        rows = computed(first)
    extra_rows = computed(extra) if g.stored and extra else []
    return [m.key for m in first], rows, [m.key for m in extra] if extra_rows else [], extra_rows


def by_run(points: dict[tuple[int, str, int], Point]) -> dict[int, dict[tuple[str, int], Point]]:
    """``{run: {(key, device): Point}}``."""
    out: dict[int, dict[tuple[str, int], Point]] = defaultdict(dict)
    for (run, key, dev), p in points.items():
        out[run][(key, dev)] = p
    return out


def attribution_gaps(conn: Connection, run_id: int, section: str) -> float:
    """The share of a section's ops (per iteration) that history could not give a block: the '?' key."""
    rows: dict[str, float] = dict(conn.execute(text(
        f"SELECT key, ops FROM {rollup_of(['block'])} WHERE run_id = :r AND section = :s AND grouping = 'block' "
        "AND device = -1"),
        {"r": run_id, "s": section}).all())
    total = sum(rows.values())
    return rows.get("?", 0.0) / total if total else 0.0


# What the whole history's change detection reads (warehouse.history.changes): the stored metrics, their columns
# in the rollup view, and the groupings (the (block, op code) pairs serve the run-wide level only)
HISTORY_METRICS = ("kernel", "fw", "op2op", "span")
_HISTORY_COLUMNS = {"kernel": "kernel_us", "fw": "fw_us", "op2op": "op2op_us", "span": "span_us"}
_HISTORY_GROUPINGS = ("section", "block", "op-code", "block/op-code")


# (section, grouping, key, device) -> metric (and "<metric>_spread", "iterations") -> one value per night
SeriesData = dict[tuple[str, str, str, int], dict[str, np.ndarray]]


def fetch_history(conn: Connection, runs: list[int], computed: tuple[str, ...] = ()) -> SeriesData:
    """Every needed rollup row of ``runs`` as arrays over the nights: (section, grouping, key, device) ->
    metric -> values (and ``<metric>_spread``, ``iterations``). Only the sections the detector reads (the named
    ones; the whole run for captures without sections), so the reads follow the primary key. The (block, op
    code) pairs, the most rows by far, serve the run-wide level only: their values, not their spreads, one text
    row per run and section (a year is 150,000 pairs: building a tuple for each cost more than the rest).
    ``computed``: metrics that are not stored, computed from each run's ops for the section totals, blocks and
    op codes (:func:`warehouse.analysis.rollups.run_rows`)."""

    pos = {r: i for i, r in enumerate(runs)}
    n = len(runs)
    out: dict[tuple[str, str, str, int], dict[str, np.ndarray]] = {}
    cols = ", ".join(f"{c}, {c.rsplit('_', 1)[0]}_spread_us" for c in _HISTORY_COLUMNS.values())
    groupings = ", ".join(f"'{g}'" for g in _HISTORY_GROUPINGS if g != "block/op-code")
    level_metrics = ("kernel", "fw", "op2op")

    def rows_of(sql: str) -> list[tuple]:
        # (the driver's own cursor: plain tuples, no per-row processing)
        cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            cur.execute(sql)
            return list(cur.fetchall())
        finally:
            cur.close()

    def arrays(sk: tuple[str, str, str, int]) -> dict[str, np.ndarray]:
        d = out.get(sk)
        if d is None:
            d = out[sk] = {m: np.full(n, np.nan) for m in (*HISTORY_METRICS, *computed)}
            d.update({f"{m}_spread": np.full(n, np.nan) for m in (*HISTORY_METRICS, *computed)})
            d["iterations"] = np.ones(n)
        return d

    chunks = [", ".join(str(int(r)) for r in runs[k:k + 500]) for k in range(0, n, 500)]
    present = section_names(conn, runs)
    secs = sql_list([s for s in present if s] or [""])
    # the pairs by key id and their stored whole ns (short texts: a year of a big model's pairs is millions of
    # numbers), the ids named once
    pair_key: dict[int, str] = dict(conn.execute(text(
        "SELECT id, key FROM rollup_key WHERE grouping = 'block/op-code'")).all())
    keys_agg = text_list_agg(conn, "r.key_id", ",", "r.key_id")
    vals_agg = ", ".join(text_list_agg(conn, exact_number_text(conn, f"r.{METRIC[m].stored_column}"), ",", "r.key_id")
                         for m in level_metrics)
    pair_rows: list[tuple] = []
    rows: list[tuple] = []
    for ids in chunks:
        rows += rows_of(f"SELECT run_id, section, grouping, key, device, iterations, {cols} "
                        f"FROM {rollup_of(g for g in _HISTORY_GROUPINGS if g != 'block/op-code')} "
                        f"WHERE run_id IN ({ids}) AND section IN ({secs}) AND grouping IN ({groupings}) "
                        "AND (device = -1 OR grouping IN ('section', 'op-code'))")
        pair_rows += rows_of(
            f"SELECT r.run_id, r.section, {keys_agg}, {vals_agg} FROM rollup_row r JOIN rollup_key k "
            f"ON k.id = r.key_id WHERE r.run_id IN ({ids}) AND r.section IN ({secs}) "
            "AND k.grouping = 'block/op-code' AND r.device = -1 GROUP BY r.run_id, r.section")
    # the series as one matrix per figure (series x night), a row each, filled column by column (a year of a big
    # model is 300,000 rows: one Python step a row and figure cost more than the query)
    where_of: dict[tuple[str, str, str, int], int] = {}
    ki = np.array([where_of.setdefault((r[1], r[2], r[3], int(r[4])), len(where_of)) for r in rows], dtype=np.intp)
    rj = np.array([pos[r[0]] for r in rows], dtype=np.intp)
    shape = (len(where_of), n)
    mat = {"iterations": np.ones(shape)}
    mat["iterations"][ki, rj] = np.array([r[5] or 1 for r in rows], dtype=float)
    for j, m in enumerate(HISTORY_METRICS):
        mat[m] = scatter(rows, 6 + 2 * j, (ki, rj), shape)
        mat[f"{m}_spread"] = scatter(rows, 7 + 2 * j, (ki, rj), shape)
    for name in (*computed, *(f"{m}_spread" for m in computed)):
        mat[name] = np.full(shape, np.nan)
    for sk, row_no in where_of.items():
        out[sk] = {name: mm[row_no] for name, mm in mat.items()}
    del rows
    # the pairs as one matrix per section and metric (pair x night), filled a night at a time; a night's key
    # list is most often the one before's, so it is split and indexed once
    index: dict[str, dict[int, int]] = defaultdict(dict)
    split: dict[tuple[str, str], np.ndarray] = {}
    for _rid, sec, joined, *_t in pair_rows:
        if (sec, joined) not in split:
            where = index[sec]
            split[(sec, joined)] = np.array([where.setdefault(int(k), len(where)) for k in joined.split(",")],
                                            dtype=np.intp)
    mats = {sec: {m: np.full((len(where), n), np.nan) for m in level_metrics} for sec, where in index.items()}
    for rid, sec, joined, *texts in pair_rows:
        at = split[(sec, joined)]
        for m, txt in zip(level_metrics, texts):
            # (stored ns to the view's us: the same division the view makes)
            mats[sec][m][at, pos[rid]] = np.array(txt.split(","), dtype=float) / METRIC[m].scale
    for sec, where in index.items():
        for key_id, j in where.items():
            out[(sec, "block/op-code", pair_key[key_id], -1)] = {m: mats[sec][m][j] for m in level_metrics}
    if computed:

        ms = [METRIC[m] for m in computed]
        wanted = set(present) if any(present) else {""}
        gs = [g for g in GROUPINGS if g.key in ("section", "block", "op-code")]
        for rid in runs:
            for sec, grouping, key, dev, _its, _ops, *figs in run_rows(conn, rid, gs, ms):
                if sec not in wanted or (dev != -1 and grouping == "block"):
                    continue
                d = arrays((sec, grouping, key, int(dev)))
                for j, m in enumerate(computed):
                    if figs[2 * j] is not None:
                        d[m][pos[rid]] = figs[2 * j]
                    if figs[2 * j + 1] is not None:
                        d[f"{m}_spread"][pos[rid]] = figs[2 * j + 1]
    return out
