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

from warehouse.store import runseries
from warehouse.store import schema as t
from warehouse.analysis.rollups import computed_rows, run_rows
from warehouse.history import wholecapture

from warehouse.errors import NotFound, UsageError, WarehouseError
from warehouse.registry.measures import COLUMN_METRIC, GROUPINGS, METRIC, METRICS, Metric, grouping_keys
from warehouse.store.listing import order_key
from warehouse.store.rollupsql import rollup_of, section_names, sql_list
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
    """``{(run, key, device): Point}`` from the rollups (the arguments: :func:`_rows`; ``run_ids`` may be whole
    multi-host captures, see :func:`fetch_table`)."""
    out: dict[tuple[int, str, int], Point] = {}
    if wholecapture.members_of(run_ids) is not None:
        tab = fetch_table(conn, run_ids, section, grouping, devices=devices, keys=keys)
        for i, j in zip(*np.nonzero(tab.row >= 0)):
            assert tab.ops is not None and tab.iterations is not None
            out[(tab.runs[j], *tab.keys[i])] = Point(
                float(tab.ops[i, j]), int(tab.iterations[i, j]),
                *({k: None if np.isnan(v[i, j]) else float(v[i, j]) for k, v in vs.items()}
                  for vs in (tab.values, tab.spreads)))
        return out
    names, rows, extra_names, extra_rows = _rows(conn, _Ask(run_ids, section, grouping, devices, keys), layers,
                                                 metrics, cache)
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
    """:func:`fetch` as a :class:`Table` (no object a row: a year of a big model's layers is 100,000s of rows). A
    stored grouping is read from the history series (:mod:`warehouse.store.runseries`), the rest computed.
    ``run_ids`` may be whole multi-host captures (:class:`warehouse.history.wholecapture.Captures`): then stored
    groupings of all devices only, nothing computed from the ops (an empty table)."""
    g = next((x for x in GROUPINGS if x.key == grouping), None)
    stored = g is not None and g.stored and (section != "" or not _has_sections(conn, run_ids))
    ask = _Ask(run_ids, section, grouping, devices, keys)
    if wholecapture.members_of(run_ids) is not None:
        return _stored_table(conn, ask if stored else _Ask([], section, grouping, devices, keys), [], [])
    names, rows, extra_names, extra_rows = _rows(conn, ask, None, metrics, cache, read_stored=not stored)
    if stored:
        return _stored_table(conn, ask, extra_names, extra_rows)
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
    for i, k in enumerate(names):
        values[k] = scatter(rows, 5 + 2 * i, (ki, rj), shape)
        spreads[k] = scatter(rows, 6 + 2 * i, (ki, rj), shape)
    return Table(list(index), runs, values, spreads, row, scatter(rows, 3, (ki, rj), shape),
                 scatter(rows, 4, (ki, rj), shape))


def _has_sections(conn: Connection, run_ids: list[int]) -> bool:
    """Whether any of the runs has a named section (its series then leave the whole run out)."""
    return any(section_names(conn, run_ids)[1:])


@dataclass
class _Ask:
    """What :func:`fetch_table` was asked for."""

    run_ids: list[int]
    section: str
    grouping: str
    devices: bool
    keys: Iterable[str] | None


def _stored_parts(conn: Connection, ask: _Ask) -> list[runseries.Part]:
    """The history series' parts of ``ask``: each run's rows of its devices (or all devices together) and keys."""
    wanted: np.ndarray | None = None
    if ask.keys is not None:
        texts = list(dict.fromkeys(ask.keys))
        found = [] if not texts else conn.execute(
            text(f"SELECT id FROM rollup_key WHERE grouping = :g AND key IN "
                 f"({', '.join(f':k{i}' for i in range(len(texts)))})"),
            {"g": ask.grouping, **{f"k{i}": k for i, k in enumerate(texts)}}).scalars().all()
        wanted = np.array(sorted(found), dtype=np.int64)
    parts = []
    for p in read_parts(conn, ask.run_ids, [ask.section], [ask.grouping], runseries.VALUES):
        keep = np.ones(len(p.key_ids), dtype=bool) if ask.devices else p.devices == ALL_DEVICES
        if wanted is not None:
            keep &= np.isin(p.key_ids, wanted)
        if keep.any():
            parts.append(p.only(keep))
    return parts


def _stored_table(conn: Connection, ask: _Ask, extra_names: list[str], extra_rows: list[Any]) -> Table:
    """A stored grouping's :class:`Table` from the history series: its rows in the order a read of the rollups by
    primary key gives them (run, key id, device), keys numbered as they first come; the computed metrics'
    ``extra_rows`` beside, of the keys and runs the stored ones have."""
    parts = _stored_parts(conn, ask)
    runs = [p.run_id for p in parts]
    pos = {r: j for j, r in enumerate(runs)}
    if parts:
        kid = np.concatenate([p.key_ids for p in parts])
        dev = np.concatenate([p.devices for p in parts]).astype(np.int64)
        rj = np.concatenate([np.full(len(p.key_ids), j) for j, p in enumerate(parts)])
        ki, uniq = first_come(packed(kid, dev))
        names = key_texts(conn, np.unique(kid))
        key_list = [(names[int(code) >> 16], (int(code) & 0xFFFF) - 1) for code in uniq]
    else:
        rj = ki = np.array([], dtype=np.intp)
        key_list = []
    shape = (len(key_list), len(runs))
    row = np.full(shape, -1, dtype=np.intp)
    row[ki, rj] = np.arange(len(ki))

    def matrix(figure: str) -> np.ndarray:
        m = np.full(shape, np.nan)
        if parts:
            m[ki, rj] = np.concatenate([p.values[figure] for p in parts])
        return m
    values = {m.key: matrix(m.column) for m in METRICS}
    spreads = {m.key: matrix(m.spread_column) for m in METRICS}
    index = {k: i for i, k in enumerate(key_list)}
    extra_rows = [r for r in extra_rows if (r[1], r[2]) in index and r[0] in pos]
    at = (np.array([index[(r[1], r[2])] for r in extra_rows], dtype=np.intp),
          np.array([pos[r[0]] for r in extra_rows], dtype=np.intp))
    for i, k in enumerate(extra_names):
        values[k] = scatter(extra_rows, 5 + 2 * i, at, shape)
        spreads[k] = scatter(extra_rows, 6 + 2 * i, at, shape)
    return Table(key_list, runs, values, spreads, row, matrix("iterations"), matrix("ops"))


def scatter(rows: list[Any], col: int, at: tuple[np.ndarray, np.ndarray], shape: tuple[int, int]) -> np.ndarray:
    """A (key x run) matrix of column ``col`` of ``rows``: row i's value at ``(at[0][i], at[1][i])``, NaN
    elsewhere and for None."""

    m = np.full(shape, np.nan)
    if rows:
        m[at] = np.array([r[col] for r in rows], dtype=float)
    return m


def _rows(conn: Connection, ask: _Ask, layers: set[str] | None, metrics: Iterable[str],
          cache: dict[tuple, list[tuple[Any, ...]]] | None, read_stored: bool = True
          ) -> tuple[list[str], list[Any], list[str], list[Any]]:
    """The rollup rows ``(run, key, device, iterations, ops, value, spread, ...)``: the metric keys of their
    figures and the rows, then those of the computed metrics asked for beside the stored ones (the same keys, from
    the ops), of ``ask``'s runs, section and grouping. ``ask.devices`` adds the per-device rows (device -1 is all
    devices together); ``ask.keys`` restricts to these keys; ``layers``, for a grouping that is not stored (computed
    from the ops), to the ops of these layers; ``metrics``: keys of computed metrics to add to the stored ones
    (computed from the runs' ops, :data:`warehouse.registry.measures.COMPUTED_METRICS`); ``cache``: a dict that keeps
    them for the calls of one command (each run is then read once for every grouping, not once per call);
    ``read_stored``: False leaves the stored rows to the caller (who reads the history series instead)."""
    run_ids, section, grouping, devices, keys = ask.run_ids, ask.section, ask.grouping, ask.devices, ask.keys
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
        rows = _driver_rows(conn, sql, params) if read_stored else []
    else:
        rows = computed(first)
    extra_rows = computed(extra) if g.stored and extra else []
    return [m.key for m in first], rows, [m.key for m in extra] if extra_rows else [], extra_rows


def packed(key_ids: np.ndarray, devices: np.ndarray, sections: np.ndarray | None = None) -> np.ndarray:
    """One int64 per row naming its series: (section number << 48) | (key id << 16) | (device + 1)."""
    if key_ids.max(initial=0) >= 2**32 or devices.max(initial=0) >= 2**15 or (
            sections is not None and sections.max(initial=0) >= 2**15):
        raise WarehouseError("history series past the packed key's range (2^32 keys, 2^15 devices)")
    code = (key_ids.astype(np.int64) << 16) | (devices.astype(np.int64) + 1)
    return code if sections is None else code | (sections.astype(np.int64) << 48)


def first_come(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's series number, the series numbered in the order they first come, and each series' code."""
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    by_first = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), dtype=np.intp)
    rank[by_first] = np.arange(len(uniq))
    return rank[inverse.reshape(-1)], uniq[by_first]


def _driver_rows(conn: Connection, sql: str, params: dict[str, Any]) -> list[Any]:
    """The driver's own rows (a year of a big model's blocks is 300,000 of them: SQLAlchemy's row objects cost
    more than the query)."""
    res = conn.execute(text(sql), params)
    try:
        return list(res.cursor.fetchall()) if res.cursor is not None else []
    finally:
        res.close()


def key_texts(conn: Connection, ids: np.ndarray) -> dict[int, str]:
    """The key text of each ``rollup_key`` id of ``ids``."""
    out: dict[int, str] = {}
    wanted = [int(k) for k in ids]
    for k in range(0, len(wanted), 5000):
        chunk = ", ".join(map(str, wanted[k:k + 5000]))
        out.update(conn.execute(text(f"SELECT id, key FROM rollup_key WHERE id IN ({chunk})")).all())
    return out


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


def read_parts(conn: Connection, runs: list[int], sections: list[str], groupings: Iterable[str],
               figures: Iterable[str]) -> list[runseries.Part]:
    """The history series' parts of ``runs`` (:func:`warehouse.store.runseries.read`); of whole multi-host
    captures (:class:`warehouse.history.wholecapture.Captures`), each night's ranks' parts merged
    (:func:`warehouse.history.wholecapture.merge`)."""
    members = wholecapture.members_of(runs)
    if members is None:
        return list(runseries.read(conn, runs, sections, groupings, figures))
    ranks = [r for night in runs for r in members[night]]
    return wholecapture.merge(list(runseries.read(conn, ranks, sections, groupings, figures)), members)


def all_sections(conn: Connection, runs: list[int]) -> list[str]:
    """The sections of any of ``runs``, in their order (the whole run when none has one)."""
    names: list[str] = []
    for secs in sections_of(conn, runs).values():
        names += [s for s in secs if s not in names]
    real = [s for s in names if s]
    return real or [""]


def check_keys(conn: Connection, runs: list[int], sections: list[str], by: list[str], keys: list[str]) -> None:
    """An unknown ``--key`` is an error, not an empty answer."""
    have: set[str] = set()
    for sec in sections:
        for dim in by:
            have |= {k for (_, k, _) in fetch(conn, runs[-1:], sec, dim, keys=keys)}
    missing = [k for k in keys if k not in have]
    if missing:
        # in the API's terms (the grouping and the key), which the CLI's --key, --block and --layer all are
        raise NotFound(f"no {' or '.join(by)} {missing[0]!r} in section {', '.join(section_label(s) for s in sections)}"
                       f" of run {runs[-1]}; `warehouse trend --by {by[0]} --top 50` lists the largest")
