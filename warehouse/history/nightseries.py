"""A whole history's series as (series x night) matrices, read from the history series (never ops): what
``changes`` reads, every section total, block and op code of every night at once, and the (block, op code) pairs
its run-wide level is taken of."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Connection

from warehouse.analysis.rollups import run_rows
from warehouse.history.series import ALL_DEVICES, first_come, key_texts, packed, read_parts
from warehouse.registry.measures import GROUPINGS, METRIC
from warehouse.store import runseries
from warehouse.store.rollupsql import section_names

# The stored metrics the whole history's change detection reads (warehouse.history.changes)
HISTORY_METRICS = ("kernel", "fw", "op2op", "span")
LEVEL_METRICS = ("kernel", "fw", "op2op")  # the figures a run-wide level is taken of (span reads kernel's)


# (section, grouping, key, device) -> metric (and "<metric>_spread", "iterations") -> one value per night
SeriesData = dict[tuple[str, str, str, int], dict[str, np.ndarray]]


def fetch_history(conn: Connection, runs: list[int], computed: tuple[str, ...] = (),
                  pairs: PairSeries | None = None) -> SeriesData:
    """Every needed rollup row of ``runs`` as arrays over the nights: (section, grouping, key, device) ->
    metric -> values (and ``<metric>_spread``, ``iterations``). Only the sections the detector reads (the named
    ones; the whole run for captures without sections), so the reads follow the primary key. The (block, op
    code) pairs come from :func:`fetch_pairs` (``pairs``: its answer, when the caller has it already).
    ``computed``: metrics that are not stored, computed from each run's ops for the section totals, blocks and
    op codes (:func:`warehouse.analysis.rollups.run_rows`). ``runs`` may be whole multi-host captures
    (:func:`warehouse.history.series.read_parts`)."""

    pos = {r: i for i, r in enumerate(runs)}
    n = len(runs)
    out: dict[tuple[str, str, str, int], dict[str, np.ndarray]] = {}

    def arrays(sk: tuple[str, str, str, int]) -> dict[str, np.ndarray]:
        d = out.get(sk)
        if d is None:
            d = out[sk] = {m: np.full(n, np.nan) for m in (*HISTORY_METRICS, *computed)}
            d.update({f"{m}_spread": np.full(n, np.nan) for m in (*HISTORY_METRICS, *computed)})
            d["iterations"] = np.ones(n)
        return d

    present = section_names(conn, runs)
    secs = [s for s in present if s] or [""]
    # the series' rows (section totals, blocks, op codes: per device too for totals and op codes), with only the
    # figures each needs
    rows = [p.only(p.devices == ALL_DEVICES) if p.grouping == "block" else p for p in read_parts(
        conn, runs, secs, ("section", "block", "op-code"),
        ["iterations", *(c for m in HISTORY_METRICS for c in (METRIC[m].column, METRIC[m].spread_column))],
)]
    # the series as one matrix per figure (series x night); a series is (section, key id, device): a key id is
    # one grouping's. Series are numbered in the order they first come (night, section, key id, device: the
    # order of a read of the rollups by primary key), and filled all at once (a year of a big model is 300,000
    # rows: one Python step a row cost more than the read)
    if rows:
        sec_names = sorted({p.section for p in rows})
        sec_no = {sec: i for i, sec in enumerate(sec_names)}
        g_names = sorted({p.grouping for p in rows})
        g_no = {g: i for i, g in enumerate(g_names)}

        def joined(of: Callable[[runseries.Part], np.ndarray]) -> np.ndarray:
            return np.concatenate([of(p) for p in rows])

        lengths = np.fromiter((len(p.key_ids) for p in rows), dtype=np.intp, count=len(rows))

        def each_row(of: Callable[[runseries.Part], int]) -> np.ndarray:  # (a part's number on each of its rows)
            return np.repeat(np.fromiter((of(p) for p in rows), dtype=np.int64, count=len(rows)), lengths)
        night = each_row(lambda p: pos[p.run_id])
        sec_col = each_row(lambda p: sec_no[p.section])
        kid, dev = joined(lambda p: p.key_ids), joined(lambda p: p.devices.astype(np.int64))
        # (one int64 a row: section, key id, device; sorted by night, then that)
        ident = packed(kid, dev, sec_col)
        order = np.lexsort((ident, night))
        at, codes = first_come(ident[order])
        names = key_texts(conn, np.unique((codes >> 16) & 0xFFFFFFFF))  # (the distinct series' keys only)
        cols = night[order]
        shape = (len(codes), n)
        mat = {"iterations": np.ones(shape)}
        for name in (*HISTORY_METRICS, *(f"{m}_spread" for m in HISTORY_METRICS), *computed,
                     *(f"{m}_spread" for m in computed)):
            mat[name] = np.full(shape, np.nan)
        its = joined(lambda p: p.values["iterations"])[order]
        flat = at * n + cols  # (each row's place in a (series x night) matrix read flat: a 1-D scatter is 2x a 2-D)
        mat["iterations"].reshape(-1)[flat] = np.where(np.isnan(its) | (its == 0), 1.0, its)
        for m in HISTORY_METRICS:
            for name, col in ((m, METRIC[m].column), (f"{m}_spread", METRIC[m].spread_column)):
                mat[name].reshape(-1)[flat] = joined(lambda p: p.values[col])[order]  # noqa: B023 (at once)
        grp = each_row(lambda p: g_no[p.grouping])[order]
        _, first = np.unique(at, return_index=True)  # (each series' first row: its grouping)
        for row_no, code in enumerate(int(c) for c in codes):
            sk = (sec_names[code >> 48], g_names[grp[first[row_no]]], names[(code >> 16) & 0xFFFFFFFF],
                  (code & 0xFFFF) - 1)
            out[sk] = {name: mm[row_no] for name, mm in mat.items()}
    out.update((fetch_pairs(conn, runs) if pairs is None else pairs).data)  # (after the rows, always)
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


@dataclass
class PairSeries:
    """A history's (block, op code) pairs (:func:`fetch_pairs`): ``keys`` (section, "block / op code") in order,
    one matrix a metric (pair x night, a row a key), and the same rows as :data:`SeriesData` entries (views of the
    matrices: nothing copied)."""

    keys: list[tuple[str, str]]
    matrices: dict[str, np.ndarray]
    data: SeriesData


def fetch_pairs(conn: Connection, runs: list[int]) -> PairSeries:
    """The (block, op code) pairs of ``runs`` as :func:`fetch_history` gives them: the most rows by far, which
    serve the run-wide level only, so their values and not their spreads, numbered as they first come (a year is
    150,000 pairs: building a tuple for each cost more than the rest), section by section, into one matrix a metric
    (the levels read them whole)."""
    pos = {r: i for i, r in enumerate(runs)}
    n = len(runs)
    secs = [s for s in section_names(conn, runs) if s] or [""]
    pairs = [p.only(p.devices == ALL_DEVICES) for p in read_parts(
        conn, runs, secs, ("block/op-code",), [METRIC[m].column for m in LEVEL_METRICS])]
    numbered: dict[str, tuple[list[runseries.Part], np.ndarray, np.ndarray]] = {}
    for sec in sorted({p.section for p in pairs}):
        mine = [p for p in pairs if p.section == sec]
        numbered[sec] = mine, *first_come_parts([p.key_ids for p in mine])
    # (the key texts of the distinct ids only: a year's pairs are 2.4 M ids, a few thousand distinct)
    names = key_texts(conn, np.unique(np.concatenate([codes for *_, codes in numbered.values()])) if numbered
                       else np.array([], dtype=np.int64))
    total = sum(len(codes) for *_, codes in numbered.values())
    matrices = {m: np.full((total, n), np.nan) for m in LEVEL_METRICS}
    keys: list[tuple[str, str]] = []
    for sec, (mine, at, codes) in numbered.items():
        cols = np.repeat([pos[p.run_id] for p in mine], [len(p.key_ids) for p in mine])
        flat = (at + len(keys)) * n + cols  # (this section's rows follow the sections before it)
        for m in LEVEL_METRICS:
            matrices[m].reshape(-1)[flat] = np.concatenate([p.values[METRIC[m].column] for p in mine])
        keys += [(sec, names[int(key_id)]) for key_id in codes]
    data: SeriesData = {(sec, "block/op-code", key, -1): {m: matrices[m][i] for m in LEVEL_METRICS}
                        for i, (sec, key) in enumerate(keys)}
    return PairSeries(keys, matrices, data)


def first_come_parts(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_first_come` of ``parts`` concatenated, each distinct array numbered once: a model's nights mostly
    hold the same keys in the same order (a year's pairs: 1.2 M ids a section, a few distinct arrays), and a
    repeat of an array brings no code that its first time did not (so the numbering is the same)."""
    number: dict[bytes, int] = {}
    distinct: list[np.ndarray] = []
    which = []
    for a in parts:
        i = number.setdefault(a.tobytes(), len(distinct))
        if i == len(distinct):
            distinct.append(a)
        which.append(i)
    at, codes = first_come(np.concatenate(distinct) if distinct else np.array([], dtype=np.int64))
    numbered = np.split(at, np.cumsum([len(a) for a in distinct])[:-1])
    return (np.concatenate([numbered[i] for i in which]) if which else at), codes
