"""Each run's rollups as typed arrays: what history reads, one row per run, section, grouping and figure.

History reads every night of a label at once: a year of a big model is some 6 million rollup rows, and reading
them back as SQL rows (then parsing them into arrays) cost 72 % of a year of ``changes``. The table
``run_series`` holds the same figures as ``rollup_row`` (derived from it, in the same transaction), each
(run, section, grouping) as one little-endian array per figure: the rows' ``rollup_key`` ids, their devices, and
each value in its most compact exact form (:func:`encode`: whole ns as int32, one value for a constant figure,
nothing for a figure that is NULL on every row), which decodes to the very double the view ``rollup`` gives. A
read fetches only the figures it needs (the run-wide level reads three of ten, of the most rows by far). Rows
are in the primary key's order (key id, device), as a read of ``rollup_row`` by primary key gives them. The whole
run ('') is kept only for a run without sections: history reads a run's sections, and a third of the bytes go.
A night
adds its own rows and never rewrites another's; ``warehouse check`` compares the table with ``rollup_row`` and
``check --repair`` rebuilds it.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Connection, text

from warehouse.registry.measures import GROUPINGS, METRICS
from warehouse.errors import WarehouseError
from warehouse.store import dialect

# The figures: each row's key id and device, then iterations, ops, each stored metric and its spread (the
# view's column names and units)
KEY_IDS, DEVICES = "key_ids", "devices"
VALUES: tuple[str, ...] = ("iterations", "ops", *[c for m in METRICS for c in (m.column, m.spread_column)])
_DTYPE = {KEY_IDS: "<i8", DEVICES: "<i4", **{v: "<f8" for v in VALUES}}
_SCALES = [1.0, 1.0, *[float(m.scale) for m in METRICS for _ in range(2)]]
_STORED = ["iterations", "ops", *[c for m in METRICS for c in (m.stored_column, m.stored_spread_column)]]
_CHUNK = 20_000  # rollup rows read at a time
_COLUMNS = ["run_id", "section", "grouping", "figure", "row_count", "data"]


@dataclass
class Part:
    """One run's rows of one section and grouping: ``key_ids[i]``, ``devices[i]`` and each figure read,
    ``values[figure][i]`` (NaN where the view gives NULL)."""

    run_id: int
    section: str
    grouping: str
    key_ids: np.ndarray
    devices: np.ndarray
    values: dict[str, np.ndarray]

    def only(self, keep: np.ndarray) -> Part:
        """The rows where ``keep`` (a boolean mask) holds (this part itself when that is every row)."""
        if keep.all():
            return self
        return Part(self.run_id, self.section, self.grouping, self.key_ids[keep], self.devices[keep],
                    {f: v[keep] for f, v in self.values.items()})


def build(conn: Connection, run_id: int) -> None:
    """Write the run's ``run_series`` rows from its ``rollup_row`` rows (replacing any it had)."""
    conn.execute(text("DELETE FROM run_series WHERE run_id = :r"), {"r": run_id})
    dialect.bulk_insert(conn, "run_series", _COLUMNS, [(run_id, *p) for p in _parts(conn, run_id)])


def _parts(conn: Connection, run_id: int) -> list[tuple[str, str, str, int, bytes]]:
    """The run's rows as (section, grouping, figure, rows, blob), from ``rollup_row``, each array in its most
    compact exact form (:func:`encode`). Read a section and grouping at a time, in chunks straight into arrays: a
    million-op capture of unique layers has 830,000 rollup rows, which as Python tuples would be 250 MB."""
    named = sorted(set(conn.execute(text("SELECT DISTINCT name FROM section WHERE run_id = :r"),
                                    {"r": run_id}).scalars()))
    out = []
    for section in named or [""]:  # (the whole run of a run with sections: history reads its sections)
        for grouping in sorted(g.key for g in GROUPINGS if g.stored):
            # (the primary key's order: key id, device)
            res = conn.execute(text(
                f"SELECT r.key_id, r.device, {', '.join('r.' + c for c in _STORED)} FROM rollup_row r "
                "WHERE r.run_id = :r AND r.section = :s AND r.key_id IN "
                "(SELECT id FROM rollup_key WHERE grouping = :g) ORDER BY r.key_id, r.device"
            ).execution_options(stream_results=True, yield_per=_CHUNK),
                {"r": run_id, "s": section, "g": grouping})
            chunks = [np.array([tuple(r) for r in part], dtype=np.float64).reshape(len(part), 2 + len(VALUES))
                      for part in res.partitions(_CHUNK)]  # (None -> NaN)
            if not chunks:
                continue
            rows = np.concatenate(chunks)
            del chunks
            n = len(rows)
            ids, devs = rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64)
            out.append((section, grouping, KEY_IDS, n, ids.astype("<i4" if ids.max() < 2**31 else "<i8").tobytes()))
            out.append((section, grouping, DEVICES, n, b"" if (devs == -1).all() else devs.astype("<i4").tobytes()))
            for j, name in enumerate(VALUES):
                out.append((section, grouping, name, n, encode(np.ascontiguousarray(rows[:, 2 + j]), _SCALES[j])))
    out.sort(key=lambda p: (p[0], p[1], p[2]))
    return out


def encode(stored: np.ndarray, scale: float) -> bytes:
    """One figure's values (in the stored unit) as the shortest of: nothing (every value NULL), one float64 (every
    row the same value), an int32 a row (whole numbers of the stored unit, none NULL: ns sums are), a float64 a
    row. Every form decodes (:func:`decode`) to the very doubles the view gives (the stored value divided by
    ``scale`` in double precision, as the view divides)."""
    shown = stored / scale
    if np.isnan(stored).all():
        return b""
    bits = shown.view(np.int64)  # (bit for bit: -0.0 is not 0.0, and NaN rows are NULLs)
    if len(stored) != 2 and (bits == bits[0]).all():  # (two int32s are 8 bytes too)
        return np.array(shown[:1], dtype="<f8").tobytes()
    whole = np.isfinite(stored).all() and (np.abs(stored) < 2**31).all() and (stored == np.round(stored)).all()
    if whole and not np.signbit(stored).any():
        return stored.astype("<i4").tobytes()
    return shown.astype("<f8").tobytes()


def decode(blob: bytes, rows: int, scale: float, blank: dict[int, np.ndarray] | None = None) -> np.ndarray:
    """The values of :func:`encode`'s ``blob`` for ``rows`` rows, in the view's units. ``blank``: read-only
    all-NaN arrays by length, shared by the empty blobs of one read (a year holds thousands: a figure a
    grouping or section never has)."""
    if not blob:
        if blank is None:
            return np.full(rows, np.nan)
        got = blank.get(rows)
        if got is None:
            got = blank[rows] = np.full(rows, np.nan)
            got.flags.writeable = False
        return got
    if len(blob) == 8 and rows != 2:  # (two int32s are 8 bytes too)
        return np.full(rows, np.frombuffer(blob, dtype="<f8")[0])
    if len(blob) == 4 * rows:
        return np.frombuffer(blob, dtype="<i4").astype(np.float64) / scale
    return np.frombuffer(blob, dtype="<f8")


def read(conn: Connection, run_ids: Iterable[int], sections: Iterable[str], groupings: Iterable[str],
         figures: Iterable[str] = VALUES) -> Iterator[Part]:
    """The parts of ``run_ids`` for these sections and groupings with these figures, by run id (ascending),
    section and grouping. Only the figures asked for are read (the blobs of one figure are a fraction of a
    night's)."""
    ids = sorted({int(r) for r in run_ids})
    secs, gs = list(sections), list(groupings)
    figs = [KEY_IDS, DEVICES, *(f for f in dict.fromkeys(figures) if f in VALUES)]
    if not ids or not secs or not gs:
        return
    params = {**{f"s{i}": s for i, s in enumerate(secs)}, **{f"g{i}": g for i, g in enumerate(gs)},
              **{f"f{i}": f for i, f in enumerate(figs)}}
    fig_col = dialect.not_sought(conn, "figure")  # (filtered within each run, section and grouping)
    where = " AND ".join(f"{col} IN ({', '.join(f':{p}{i}' for i in range(len(xs)))})"
                         for col, p, xs in (("section", "s", secs), ("grouping", "g", gs), (fig_col, "f", figs)))
    scales = dict(zip(VALUES, _SCALES))
    blank: dict[int, np.ndarray] = {}
    for k in range(0, len(ids), 500):
        chunk = ", ".join(map(str, ids[k:k + 500]))
        # (a seek a run: a scan of the runs' rows would read their blobs' pages)
        lacking = sorted(conn.execute(text(
            f"SELECT r.id FROM run r WHERE r.id IN ({chunk}) AND NOT EXISTS "
            "(SELECT 1 FROM run_series s WHERE s.run_id = r.id)")).scalars())
        if lacking:  # (never a night silently without figures)
            raise WarehouseError(f"run(s) {', '.join(map(str, lacking[:10]))} have no history series; "
                                 "`warehouse check --repair` builds them")
        # (the driver's own rows: tens of thousands of blobs, SQLAlchemy's row objects cost more than the read)
        res = conn.execute(text(f"SELECT run_id, section, grouping, figure, row_count, data FROM run_series "
                                f"WHERE run_id IN ({chunk}) AND {where} ORDER BY run_id, section, grouping"), params)
        try:
            got_rows = res.cursor.fetchall() if res.cursor is not None else []
        finally:
            res.close()
        at: tuple[int, str, str, int] | None = None
        got: dict[str, bytes] = {}
        for rid, sec, g, fig, rows, blob in got_rows:
            if at is None or (rid, sec, g) != at[:3]:
                if at is not None:
                    yield _part(at, got, figs, scales, blank)
                at, got = (rid, sec, g, rows), {}
            got[fig] = blob
        if at is not None:
            yield _part(at, got, figs, scales, blank)


def _part(at: tuple[int, str, str, int], got: dict[str, bytes], figs: list[str], scales: dict[str, float],
          blank: dict[int, np.ndarray]) -> Part:
    missing = [f for f in figs if f not in got]
    if missing:
        raise WarehouseError(f"run {at[0]}: its history series lack {', '.join(missing)} (stored by another "
                             "version, or deleted); `warehouse check --repair` rebuilds them")
    n = at[3]
    ids = got[KEY_IDS]
    key_ids = np.frombuffer(ids, dtype="<i4" if len(ids) == 4 * n else "<i8").astype(np.int64)
    devices = np.frombuffer(got[DEVICES], dtype="<i4") if got[DEVICES] else np.full(n, -1, dtype=np.int32)
    return Part(at[0], at[1], at[2], key_ids, devices, {f: decode(got[f], n, scales[f], blank) for f in figs[2:]})


def check(conn: Connection) -> list[str]:
    """Problems: runs whose ``run_series`` rows are not what their ``rollup_row`` rows give (missing, stale)."""
    problems = []
    for (run_id,) in conn.execute(text("SELECT id FROM run ORDER BY id")).all():
        want = _parts(conn, run_id)
        got = sorted((s, g, f, n, bytes(d)) for s, g, f, n, d in conn.execute(text(
            "SELECT section, grouping, figure, row_count, data FROM run_series WHERE run_id = :r"), {"r": run_id}))
        if got != want:
            problems.append(f"run {run_id}: its history series ({len(got)} arrays) are not its rollups' "
                            f"({len(want)}); `warehouse check --repair` rebuilds them")
    return problems


def missing(conn: Connection) -> list[int]:
    """Runs with rollups but no ``run_series`` rows (stored before the table existed, or repaired)."""
    return [r for (r,) in conn.execute(text(
        "SELECT id FROM run WHERE id NOT IN (SELECT DISTINCT run_id FROM run_series) ORDER BY id")).all()]
