"""The stored rollups of one run computed with numpy, the hot path of ingest.

:func:`warehouse.analysis.rollups.build_sql` is the definition of a run's rollup rows; on a 100,000-op capture its ten
GROUP BYs over the fine table took most of the rollups' time (1.5 s of 1.7 s, SQLite). Here the database still
groups the ops by their ids (the SQL's ``by_id``: a row per section, iteration, device, place and op code), and
numpy does the rest: each grouping's keys from the few distinct places and op codes, then two sorts per grouping
and device choice. ``check`` recomputes every run with the SQL (:func:`warehouse.analysis.rollups.check_rollups`), and
the
tests hold the two equal on the corpus, on both back ends.

Only what is mirrored here is computed here: a stored grouping or metric whose definition (its key and SQL
expression) is not in :data:`_KEYS` / :data:`_METRICS` makes :func:`run_rows` answer None, and the caller
falls back to the SQL, so a new entry in :mod:`warehouse.registry.measures` is never computed wrongly, only slower.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy import Connection, text

from warehouse.capture import plan

from warehouse.registry.measures import BLOCK_KEY, GROUPINGS, KEY_TEXTS, LAYER_KEY, METRICS, Grouping, Metric

# The by-id rows' columns, in the order rollups' _BY_ID_SQL selects them after (custom, section, iteration,
# device, place_id, op_code_id).
_SUMS = ("ops", "kernel_ns", "op2op_ns", "fw_ns")
# Runs with more ops than plan.NUMPY_MAX_OPS are left to the SQL, whose sorter spills to disk: numpy holds about 70
# bytes per by-id row (near one per op) and twice that while a grouping is sorted, the SQL a few MiB whatever the
# size (a million-op run: 19.6 s and 345 MiB at the peak here, 30 s and 75 MiB in SQLite).
_NO_DEVICE = -(2 ** 62)  # (SQL's NULL device)
_BATCH = 20_000  # rows handed to the caller at a time: a million-op run's rollups are never all in memory
# The op columns OpCapture keeps (ingest's names), in the order OpCapture.by_id reads them.
_CAPTURED = ("row_no", "section_id", "device_id", "hist_place_id", "op_code_id", "kernel_ns", "fw_ns", "op2op_ns",
             "iteration", "iter_pos", "fw_start_cycle", "fw_end_cycle")


# A grouping's key from (block, layer, op code, category), for each (key, SQL expression) mirrored (the texts are
# measures.KEY_TEXTS'), and which ids it reads: none, the place, the op code, or both.
_READS = {"'total'": "none", BLOCK_KEY: "place", LAYER_KEY: "place", "op_code": "code", "category": "code",
          BLOCK_KEY + " || ' / ' || op_code": "pair"}
_KEYS: dict[tuple[str, str], tuple[str, Callable[[str, str, str, str], str]]] = {
    (key, expr): (_READS[expr], KEY_TEXTS[expr]) for key, expr in (
        ("section", "'total'"), ("block", BLOCK_KEY), ("layer", LAYER_KEY), ("op-code", "op_code"),
        ("category", "category"), ("block/op-code", BLOCK_KEY + " || ' / ' || op_code"))}
# A metric's per-iteration figure, for each (key, SQL expression) mirrored: the sum of a by-id column, or the span.
_METRICS: dict[tuple[str, str], str] = {
    ("kernel", "SUM(kernel_ns)"): "kernel_ns",
    ("op2op", "SUM(op2op_ns)"): "op2op_ns",
    ("fw", "SUM(fw_ns)"): "fw_ns",
    ("span", "(MAX(last_cycle) - MIN(first_cycle)) / MAX(freq_mhz)"): "span",
}


def stored_keys() -> list[tuple[str, str, Callable[[str, str, str, str], str]]] | None:
    """Each stored grouping's key, what its key text reads (none, the place, the op code or both) and the text
    from (block, layer, op code, category), as the rows computed here name them; None when a stored grouping is
    not mirrored here."""
    gs = [g for g in GROUPINGS if g.stored]
    if not all((g.key, g.expr) in _KEYS for g in gs):
        return None
    return [(g.key, *_KEYS[(g.key, g.expr)]) for g in gs]


def mirrored(groupings: list[Grouping] | None = None, metrics: list[Metric] | None = None) -> bool:
    """Whether every stored grouping and metric (or these) is computed here exactly as its SQL defines it."""
    gs = [g for g in GROUPINGS if g.stored] if groupings is None else groupings
    ms = METRICS if metrics is None else metrics
    return (all((g.key, g.expr) in _KEYS for g in gs)
            and all((m.key, m.expr) in _METRICS and not m.mean for m in ms))


def _groups(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Rows grouped by ``keys`` (int arrays, the first most significant): (the rows' order, the start of each
    group in it, each key's value per group)."""
    order = np.lexsort(keys[::-1])
    sorted_keys = [k[order] for k in keys]
    new = np.zeros(len(order), dtype=bool)
    new[:1] = True
    for k in sorted_keys:
        new[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(new)
    return order, starts, [k[starts] for k in sorted_keys]


def read_by_id(conn: Connection, sql: str, run_id: int) -> tuple[list[np.ndarray], list[str]]:
    """The by-id SQL's rows (``sql``, parameter ``run``) as :class:`_Fine`'s columns, and the section names their
    section indexes."""
    names: dict[str, int] = {"": 0}
    parts: list[list[np.ndarray | None]] = []
    # (the driver's own cursor: SQLAlchemy's rows cost a second per million; the run id is an int literal)
    raw = conn.connection.dbapi_connection
    assert raw is not None  # (a connection in use has its driver connection)
    cursor = raw.cursor()
    try:
        cursor.execute(sql.replace(":run", str(int(run_id))))
        while part := cursor.fetchmany(50_000):
            c = list(zip(*part))
            del part
            parts.append([
                np.array(c[0], dtype=np.int8),
                np.array([names.setdefault(s, len(names)) for s in c[1]], dtype=np.int32),
                np.array(c[2], dtype=np.int32),
                np.array([_NO_DEVICE if d is None else d for d in c[3]], dtype=np.int64),
                np.array([-1 if p is None else p for p in c[4]], dtype=np.int64),
                np.array(c[5], dtype=np.int64),
                np.array(c[6], dtype=np.int32),
                *(np.array(x, dtype=np.float64) for x in c[7:10]),
                *(np.array([np.nan if v is None else v for v in x], dtype=np.float64) for x in c[10:12]),
            ])
    finally:
        cursor.close()
    cols = []
    for j in range(12):  # (a column at a time, its parts freed as it is joined: memory stays near the total)
        cols.append(np.concatenate([p[j] for p in parts]) if parts else np.zeros(0, dtype=np.int64))
        for p in parts:
            p[j] = None
    del parts
    return cols, list(names)


class _Fine:
    """The by-id rows as arrays (compact types: a million-op run has nearly a million of them): read from the
    by-id SQL in parts (:func:`read_by_id`), or grouped here from the ops ingest kept (:meth:`OpCapture.by_id`)."""

    def __init__(self, cols: list[np.ndarray], names: list[str], freq: float):
        """``cols``: the by-id rows' columns (custom, section as an index of ``names``, iteration, device, place,
        op code, ops, kernel, op-to-op and FW sums, first and last cycle)."""
        self.names = names
        custom, self.sec, self.iteration, self.device, self.place, self.code = cols[:6]
        self.sums = dict(zip(_SUMS, cols[6:10]))
        self.first, self.last = cols[10], cols[11]
        self.freq = float(freq)
        # rollups' f: the oracle's sections and the custom ones as they are ("kept"), and every non-custom row
        # again as the whole run ('', iteration 0): two passes over the same arrays, not a copy
        self.kept = np.flatnonzero((self.sec != 0) | (custom == 1))
        self.whole = np.flatnonzero(custom == 0)
        # (a custom section named '' would share f's rows with the whole run: too odd to mirror)
        self.odd = bool(np.any(self.sec[self.kept] == 0))
        # iters: the distinct iterations of each section in f; devices: its distinct devices that are not NULL
        self.iters = np.zeros(len(self.names), dtype=np.int64)
        _, _, (s_sec, _) = _groups([self.sec[self.kept], self.iteration[self.kept]])
        self.iters += np.bincount(s_sec, minlength=len(self.names))
        self.iters[0] += 1 if len(self.whole) else 0
        self.n_devices = len(np.unique(self.device[self.device != _NO_DEVICE]))


class OpCapture:
    """What the by-id rows are computed from, kept from the op rows as ingest writes them (their ids resolved),
    so that a fresh run's rollups need no second read of its ops (the by-id SQL read them back: a third of the
    rollups' time). Columns as arrays per batch; a run past :data:`~warehouse.capture.plan.CAPTURE_MAX_OPS` stops
    keeping them (the by-id SQL then reads its ops back). History's corrections made after the stream are applied
    with :meth:`fix`."""

    def __init__(self, columns: list[str]):
        self._pick = operator.itemgetter(*(columns.index(c) for c in _CAPTURED))
        self._parts: list[np.ndarray] = []
        self.n = 0
        self.full = False  # (past plan.CAPTURE_MAX_OPS: nothing kept)
        self._fixes: dict[int, tuple[int | None, int | None, int | None]] = {}

    def give_up(self) -> None:
        """Keep nothing more (ingest foresees a run too big for it: its by-id rows are read back)."""
        self.full, self._parts = True, []

    def add(self, rows: list[tuple]) -> None:
        """Op rows as inserted (``columns`` of the constructor)."""
        self.n += len(rows)
        if self.full or not rows:
            return
        if self.n > plan.CAPTURE_MAX_OPS:
            self.give_up()
            return
        # (one conversion of the batch's picked cells; float64 takes None as NaN, and ids and counts exactly: each
        # column's missing values are made what the SQL's COALESCE makes when the rows are grouped)
        self._parts.append(np.array(list(map(self._pick, rows)), dtype=np.float64))

    def fix(self, row_no: int, place_id: int | None, iteration: int | None, iter_pos: int | None) -> None:
        """History's correction of one op's attribution (``history.apply`` writes the same)."""
        self._fixes[row_no] = (place_id, iteration, iter_pos)

    def columns(self) -> dict[str, np.ndarray] | None:
        """The kept columns by name (NaN for NULL), before history's corrections; None when nothing was kept
        (past plan.CAPTURE_MAX_OPS)."""
        if self.full:
            return None
        if len(self._parts) != 1:
            self._parts = [np.concatenate(self._parts) if self._parts else np.zeros((0, len(_CAPTURED)))]
        return dict(zip(_CAPTURED, self._parts[0].T))

    def by_id(self, conn: Connection, run_id: int) -> tuple[list[np.ndarray], list[str]]:
        """The by-id rows' columns (as :class:`_Fine` keeps them) and the section names they index."""
        cols = self.columns()
        kept = self._parts[0] if cols is not None else np.zeros((0, len(_CAPTURED)))
        row, sec_id, device, place, code, kern, fw, gap, it, ipos, first, last = kept.T
        place, it, ipos = place.copy(), it.copy(), ipos.copy()  # (the kept columns stay as written: see columns)
        if self._fixes:
            at = {r: k for k, r in enumerate(row.astype(np.int64).tolist())}
            for r, (p, i, ip) in self._fixes.items():
                k = at[r]
                place[k] = np.nan if p is None else p
                it[k] = np.nan if i is None else i
                ipos[k] = np.nan if ip is None else ip
        names: dict[str, int] = {"": 0}
        section_name = {i: n for i, n in conn.execute(text("SELECT id, name FROM section WHERE run_id = :r"),
                                                      {"r": run_id})}
        ids = np.nan_to_num(sec_id, nan=-1).astype(np.int64)
        distinct, inverse = np.unique(ids, return_inverse=True)
        sec = np.array([names.setdefault(section_name[i], len(names)) if i >= 0 else 0 for i in distinct.tolist()],
                       dtype=np.int32)[inverse.reshape(-1)]
        kern, fw, gap = (np.nan_to_num(c, nan=0.0) for c in (kern, fw, gap))  # (COALESCE(x, 0))
        ipos = np.nan_to_num(ipos, nan=0.0)
        first = np.where(first > 0, first, np.nan)  # (MIN / MAX over the positive cycles only)
        last = np.where(last > 0, last, np.nan)
        device = np.where(np.isnan(device), float(_NO_DEVICE), device).astype(np.int64)
        place = np.nan_to_num(place, nan=-1).astype(np.int64)
        code = code.astype(np.int64)
        # scoped: every op in its own section (the op-to-op gap of an iteration's first op left out), then again
        # in each custom section whose rows hold it, as it is
        parts = [(np.zeros(len(row), dtype=np.int8), sec, np.nan_to_num(it, nan=0).astype(np.int32),
                  np.arange(len(row)), np.where((ids >= 0) & (ipos == 0), 0.0, gap))]
        for name, start, end in conn.execute(text(
                "SELECT name, start_row, end_row FROM section WHERE run_id = :r AND kind = 'custom' ORDER BY id"),
                {"r": run_id}):
            inside = np.flatnonzero((row > start) & ((row < end) if end is not None else True))
            if len(inside):
                n = len(inside)
                parts.append((np.ones(n, dtype=np.int8), np.full(n, names.setdefault(name, len(names)), np.int32),
                              np.zeros(n, dtype=np.int32), inside, gap[inside]))
        custom = np.concatenate([p[0] for p in parts])
        s_sec = np.concatenate([p[1] for p in parts])
        s_it = np.concatenate([p[2] for p in parts])
        take = np.concatenate([p[3] for p in parts])
        s_gap = np.concatenate([p[4] for p in parts])
        order, starts, (g_custom, g_sec, g_it, g_dev, g_place, g_code) = _groups(
            [custom, s_sec, s_it, device[take], place[take], code[take]])
        take, s_gap = take[order], s_gap[order]
        ops = np.diff(np.append(starts, len(order))).astype(np.int32)

        def per_group(f: np.ufunc, values: np.ndarray) -> np.ndarray:
            return f.reduceat(values, starts) if len(order) else np.zeros(0)  # (reduceat takes no empty input)
        return [g_custom, g_sec, g_it, g_dev, g_place, g_code, ops, per_group(np.add, kern[take]),
                per_group(np.add, s_gap), per_group(np.add, fw[take]), per_group(np.fmin, first[take]),
                per_group(np.fmax, last[take])], list(names)


def _key_codes(fine: _Fine, on: str, key_of: Callable[[str, str, str, str], str],
               places: dict[int, tuple[str, str]], codes: dict[int, tuple[str, str]]) -> tuple[np.ndarray, list[str]]:
    """Each by-id row's key as an index into the key texts (each text built once per distinct place, op code or
    pair of them, not per row)."""
    if on == "none":
        return np.zeros(len(fine.sec), dtype=np.int64), [key_of("", "", "", "")]
    width = int(fine.code.max()) + 1 if len(fine.code) else 1
    ids = {"place": fine.place, "code": fine.code, "pair": (fine.place + 1) * width + fine.code}[on]
    distinct, inverse = np.unique(ids, return_inverse=True)
    none = np.full(len(distinct), -1)
    place_of = {"place": distinct, "code": none, "pair": distinct // width - 1}[on]
    code_of = {"place": none, "code": distinct, "pair": distinct % width}[on]
    index: dict[str, int] = {}
    per_id = np.empty(len(distinct), dtype=np.int64)
    for i, (p, c) in enumerate(zip(place_of.tolist(), code_of.tolist())):
        block, layer = places.get(p, ("", ""))
        name, category = codes.get(c, ("", ""))
        per_id[i] = index.setdefault(key_of(block, layer, name, category), len(index))
    return per_id[inverse.reshape(-1)], list(index)


def _grouping_rows(run_id: int, fine: _Fine, g: Grouping, key: np.ndarray, texts: list[str], rows: np.ndarray,
                   whole: bool, per_device: bool, kids: np.ndarray | None = None) -> Iterator[Any]:
    """The rows of one grouping over the by-id ``rows`` (``whole``: as the whole run's section ''), all devices
    together or per device, as rollups' ``_per_grouping`` gives them, in batches; with ``kids`` (each text's
    rollup_key id, :data:`_UNKNOWN` or :data:`_SHARED`), as :class:`Keyed` batches."""
    if per_device:
        if fine.n_devices <= 1:
            return
        rows = rows[(fine.device[rows] != _NO_DEVICE) & (fine.device[rows] >= 0)]
    if not len(rows):
        return
    zeros = np.zeros(len(rows), dtype=np.int64)
    sec = zeros if whole else fine.sec[rows]
    it = zeros if whole else fine.iteration[rows]
    dev = fine.device[rows] if per_device else zeros - 1
    # p: one row per section, iteration, key (and device), its sums within the iteration
    order, starts, (p_sec, _, p_key, p_dev) = _groups([sec, it, key[rows], dev])
    rows = rows[order]
    values = {c: np.add.reduceat(fine.sums[c][rows], starts) for c in _SUMS}
    if g.key == "section":  # (the span is a figure of the whole section only: total_only)
        first = np.fmin.reduceat(fine.first[rows], starts)
        last = np.fmax.reduceat(fine.last[rows], starts)
        # (a frequency of 0: SQLite's division by zero is NULL)
        values["span"] = (last - first) / fine.freq if fine.freq else np.full(len(starts), np.nan)
    del rows, order, sec, it, dev
    # the rows of the key: per section, key (and device), the mean over the section's iterations and the spread
    o_order, o_starts, (o_sec, o_key, o_dev) = _groups([p_sec, p_key, p_dev])
    n = fine.iters[o_sec].astype(np.float64)
    columns = [np.add.reduceat(values["ops"][o_order], o_starts) / n]
    for m in METRICS:
        source = _METRICS[(m.key, m.expr)]
        if m.total_only and g.key != "section":
            columns += [np.full(len(o_starts), np.nan)] * 2
            continue
        v = values[source][o_order]
        present = ~np.isnan(v)
        total = np.add.reduceat(np.where(present, v, 0.0), o_starts)
        any_present = np.logical_or.reduceat(present, o_starts)
        columns.append(np.where(any_present, total / n, np.nan))  # (SQL's SUM of no values is NULL)
        spread = np.fmax.reduceat(v, o_starts) - np.fmin.reduceat(v, o_starts)
        columns.append(np.where(n > 1, spread, np.nan))
    iters = fine.iters[o_sec]
    if kids is not None:
        yield from _keyed(run_id, fine, g, texts, kids, o_sec, o_key, o_dev, iters, columns)
        return
    for a in range(0, len(o_starts), _BATCH):
        b = slice(a, a + _BATCH)
        yield [(run_id, fine.names[s], g.key, texts[k], d, i, *vals) for s, k, d, i, *vals in zip(
            o_sec[b].tolist(), o_key[b].tolist(), o_dev[b].tolist(), iters[b].tolist(),
            *(_nulls(c[b]) for c in columns))]


_UNKNOWN, _SHARED = -1, -2  # a key text's id not known yet; a key whose digest is another key's (it gets no rows)


class Keyed(NamedTuple):
    """A batch of rollup rows: ``rows`` as stored (their key's id in place of grouping and key, in the primary
    key's order), and ``pending`` rows as :func:`run_rows` gives them without ids, whose key was not known."""

    rows: list[tuple[Any, ...]]
    pending: list[tuple[Any, ...]]


def _keyed(run_id: int, fine: _Fine, g: Grouping, texts: list[str], kids: np.ndarray, o_sec: np.ndarray,
           o_key: np.ndarray, o_dev: np.ndarray, iters: np.ndarray, columns: list[np.ndarray]) -> Iterator[Keyed]:
    """:func:`_grouping_rows`' rows with their keys' ids, sorted as the table's primary key (section text, key
    id, device) so that they are appended, not sought (by numpy: a Python sort of the tuples cost the writing
    process a fifth of its rollups' time)."""
    kid = kids[o_key]
    sec_rank = np.argsort(np.argsort(np.array(fine.names, dtype=object)))  # (each section name's place by text)
    ready = np.flatnonzero(kid >= 0)
    order = ready[np.lexsort((o_dev[ready], kid[ready], sec_rank[o_sec[ready]]))]
    unknown = np.flatnonzero(kid == _UNKNOWN)
    for a in range(0, max(len(order), len(unknown)), _BATCH):
        b, u = order[a:a + _BATCH], unknown[a:a + _BATCH]
        rows = [(run_id, fine.names[s], k, d, i, *vals) for s, k, d, i, *vals in zip(
            o_sec[b].tolist(), kid[b].tolist(), o_dev[b].tolist(), iters[b].tolist(),
            *(_nulls(c[b]) for c in columns))]
        pending = [(run_id, fine.names[s], g.key, texts[k], d, i, *vals) for s, k, d, i, *vals in zip(
            o_sec[u].tolist(), o_key[u].tolist(), o_dev[u].tolist(), iters[u].tolist(),
            *(_nulls(c[u]) for c in columns))]
        yield Keyed(rows, pending)


def _nulls(a: np.ndarray) -> list[float | None]:
    """The values as Python floats, NaN as None (SQL's NULL)."""
    return [None if v != v else v for v in a.tolist()]


def run_rows(conn: Connection, run_id: int, freq_mhz: float, by_id_sql: str, captured: OpCapture | None = None,
             ids: dict[tuple[str, str], int | None] | None = None) -> Iterator[Any] | None:
    """The stored rollup rows of one run as :func:`warehouse.analysis.rollups.build_sql` gives them (run, section,
    grouping, key, device, iterations, ops, stored metric columns...), in batches, from ``by_id_sql`` (the SQL's
    by-id rows, parameter ``run``); None when a stored grouping or metric is not mirrored here, or the run is
    one this does not mirror. ``captured``: the run's ops as ingest kept them (else the by-id SQL reads them).
    ``ids``: the ``rollup_key`` ids known of (grouping, key text): the batches are then :class:`Keyed`. A run of
    more ops than :data:`warehouse.capture.plan.NUMPY_MAX_OPS` (counted exactly here) is left to the SQL."""
    groupings = [g for g in GROUPINGS if g.stored]
    if not mirrored(groupings, METRICS):
        return None
    n_ops = conn.execute(text("SELECT COUNT(*) FROM op WHERE run_id = :r"), {"r": run_id}).scalar_one()
    if n_ops > plan.NUMPY_MAX_OPS:
        return None
    with np.errstate(over="ignore", invalid="ignore"):  # (see batches below)
        if captured is not None and not captured.full and captured.n == n_ops:
            fine = _Fine(*captured.by_id(conn, run_id), freq_mhz)
        else:
            fine = _Fine(*read_by_id(conn, by_id_sql, run_id), freq_mhz)
    if fine.odd:
        return None
    place_ids = np.unique(fine.place)
    place_ids = place_ids[place_ids >= 0].tolist()
    places: dict[int, tuple[str, str]] = {}
    for i in range(0, len(place_ids), 5000):  # (a warehouse's places are many runs'; only this run's are read)
        part = ", ".join(str(p) for p in place_ids[i:i + 5000])
        places.update({pid: (b or "", lay or "") for pid, b, lay in conn.execute(text(
            f"SELECT id, block, layer FROM place WHERE id IN ({part})"))})
    codes = {cid: (name, cat) for cid, name, cat in conn.execute(text("SELECT id, name, category FROM op_code"))}

    def batches() -> Iterator[list[tuple[Any, ...]]]:  # (no database: it is read above)
        # durations near the float limit (1e308, a damaged capture) sum to inf, and inf - inf is NaN: stored as the
        # SQL computes them, without numpy's warnings on stderr
        with np.errstate(over="ignore", invalid="ignore"):
            yield from _batches()

    def _batches() -> Iterator[list[tuple[Any, ...]]]:
        for g in groupings:
            on, key_of = _KEYS[(g.key, g.expr)]
            key, texts = _key_codes(fine, on, key_of, places, codes)
            kids = None if ids is None else np.array(
                [_SHARED if (kid := ids.get((g.key, t), _UNKNOWN)) is None else kid for t in texts], dtype=np.int64)
            for rows, whole in ((fine.kept, False), (fine.whole, True)):
                for per_device in (False, True):
                    yield from _grouping_rows(run_id, fine, g, key, texts, rows, whole, per_device, kids)
    return batches()
