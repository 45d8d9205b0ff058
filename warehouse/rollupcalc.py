"""A run's rollup rows computed in numpy from its ops: what ingest writes on SQLite.

:func:`warehouse.rollups.build_sql` is the definition: one SQL statement, 14 GROUP BYs over a fine table that
a capture with a layer per few ops makes nearly as long as its ops (5 s of a 100,000-op realistic ingest, the
largest serial part). Here the ops are read once, as numbers (no texts), and every grouping is a ``bincount``
over them: the same rows with the same values, since the registry (:mod:`warehouse.measures`) declares each
metric's aggregation for both. Key texts still come from the registry's SQL, once per distinct (place, op code)
pair. ``warehouse check`` compares the stored rows with the SQL's (:func:`warehouse.rollups.check_rollups`), and
a test holds the two equal on every corpus capture.

Sums of whole-ns times are exact in any order; a fractional value can differ from the SQL's in its last bit (the
database sums in an order of its own too), which ``check`` tolerates.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import Connection

from warehouse.measures import GROUPINGS, METRICS

_OPS = ("SELECT row_no, section_id, iteration, iter_pos, device_id, hist_place_id, op_code_id, kernel_ns, fw_ns, "
        "op2op_ns, fw_start_cycle, fw_end_cycle FROM op WHERE run_id = ?")
_CHUNK = 20_000
_PAIRS = "rollup_pairs"  # the run's distinct (place, op code) pairs: a temporary table of the connection


def _cursor(conn: Connection) -> Any:
    return conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]


def _fine(conn: Connection, run_id: int) -> dict[str, np.ndarray] | None:
    """The scoped rows of :data:`warehouse.rollups._SCOPED` as arrays: each op in its eager / trace section,
    each op again in every custom section around it, and each op once more in the whole run ('')."""
    cur = _cursor(conn)
    try:
        sections = cur.execute("SELECT id, name, kind, start_row, end_row FROM section WHERE run_id = ?",
                               (run_id,)).fetchall()
        # read in parts, each made arrays at once: the rows as Python tuples would be ten times the arrays
        parts: list[list[np.ndarray]] = []
        cur.execute(_OPS, (run_id,))
        while chunk := cur.fetchmany(_CHUNK):
            parts.append([np.array(c, dtype=float) for c in zip(*chunk)])  # (None is NaN)
    finally:
        cur.close()
    if not parts:
        return None
    cols = [np.concatenate(c) for c in zip(*parts)]
    del parts

    row_no = cols[0].astype(np.int64)
    names = sorted({name for _, name, *_ in sections} | {""})
    code_of = {name: i for i, name in enumerate(names)}
    by_id = {float(sid): code_of[name] for sid, name, *_ in sections}
    sec = np.array([by_id.get(s, -1) for s in cols[1].tolist()], dtype=np.int64)  # -1: not eager / trace
    iteration = np.nan_to_num(cols[2]).astype(np.int64)
    iter_pos = np.nan_to_num(cols[3])
    device = cols[4]
    place = np.nan_to_num(cols[5], nan=-1).astype(np.int64)
    code = cols[6].astype(np.int64)
    kernel, fw, op2op = (np.nan_to_num(cols[i]) for i in (7, 8, 9))
    first, last = cols[10], cols[11]
    first[~(first > 0)] = np.nan  # (MIN / MAX over the positive cycles only)
    last[~(last > 0)] = np.nan
    in_section = sec >= 0
    gap = np.where(in_section & (iter_pos == 0), 0.0, op2op)  # the first op of an iteration has no gap

    scopes = [  # (which ops, their section, their iteration, their gaps)
        (in_section, sec, iteration, gap),
        (np.ones(len(row_no), dtype=bool), np.full(len(row_no), code_of[""]), np.zeros(len(row_no), np.int64), gap)]
    for _, name, kind, start, end in sections:
        if kind == "custom":
            inside = (row_no > start) & ((row_no < end) if end is not None else True)
            scopes.append((inside, np.full(len(row_no), code_of[name]), np.zeros(len(row_no), np.int64), op2op))
    per_op = {"device": device, "place": place, "code": code, "kernel_ns": kernel, "fw_ns": fw,
              "first_cycle": first, "last_cycle": last}
    fine = {k: np.concatenate([v[m] for m, *_ in scopes]) for k, v in per_op.items()}
    fine["section"] = np.concatenate([s[m] for m, s, _, _ in scopes])
    fine["iteration"] = np.concatenate([i[m] for m, _, i, _ in scopes])
    fine["op2op_ns"] = np.concatenate([g[m] for m, _, _, g in scopes])
    fine["names"] = np.array(names, dtype=object)
    return fine


def _keys(conn: Connection, place: np.ndarray, code: np.ndarray) -> tuple[np.ndarray, list[list[str]]]:
    """Each row's index among the distinct (place, op code) pairs, and per pair every grouping's key, by the
    registry's SQL expressions (the one definition of a key)."""
    pair = place * (1 << 32) + code
    uniq, index = np.unique(pair, return_inverse=True)
    exprs = ", ".join(g.expr for g in GROUPINGS)
    cur = _cursor(conn)
    try:
        cur.execute(f"DROP TABLE IF EXISTS {_PAIRS}")
        cur.execute(f"CREATE TEMPORARY TABLE {_PAIRS} (i INTEGER PRIMARY KEY, place_id INTEGER, op_code_id INTEGER)")
        cur.executemany(f"INSERT INTO {_PAIRS} VALUES (?, ?, ?)",
                        ((i, int(p >> 32) if p >> 32 >= 0 else None, int(p & 0xFFFFFFFF))
                         for i, p in enumerate(uniq.tolist())))
        keys = cur.execute(
            f"SELECT i, {exprs} FROM (SELECT x.i, COALESCE(p.block, '') AS block, COALESCE(p.layer, '') AS layer, "
            f"c.name AS op_code, c.category FROM {_PAIRS} x JOIN op_code c ON c.id = x.op_code_id "
            f"LEFT JOIN place p ON p.id = x.place_id) ORDER BY i").fetchall()
        cur.execute(f"DROP TABLE {_PAIRS}")
    finally:
        cur.close()
    return index, [list(col) for col in list(zip(*keys))[1:]]


def _groups(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``ids`` and each row's index among them."""
    return np.unique(ids, return_inverse=True)


def compute(conn: Connection, run_id: int, freq_mhz: float) -> list[tuple]:
    """The run's rollup rows in the columns of :data:`warehouse.rollups._NEW_COLUMNS` (keys as text), read
    through the connection's own driver cursor (SQLite's: see :func:`warehouse.dialect.writes_rows_fast`)."""
    f = _fine(conn, run_id)
    if f is None:
        return []
    n_rows = len(f["section"])
    names = f["names"]
    # iterations per section (COUNT(DISTINCT iteration)) and devices of the run, as the SQL's iters / devices
    sec_iter, _ = _groups(f["section"] * (1 << 32) + f["iteration"])
    n_iters = np.bincount(sec_iter >> 32, minlength=len(names))
    devices = f["device"][~np.isnan(f["device"])]
    several = len(np.unique(devices)) > 1
    pair_ix, pair_keys = _keys(conn, f["place"], f["code"])
    out: list[tuple] = []
    for gi, g in enumerate(GROUPINGS):
        texts = pair_keys[gi]
        key_of: dict[str, int] = {}
        pair_key = np.array([key_of.setdefault(k, len(key_of)) for k in texts], dtype=np.int64)
        key_text = list(key_of)
        row_key = pair_key[pair_ix]
        for per_device in (False, True):
            if per_device:
                if not several:
                    continue
                keep = ~np.isnan(f["device"]) & (f["device"] >= 0)
                dev = np.where(keep, f["device"], 0).astype(np.int64)
            else:
                keep = np.ones(n_rows, dtype=bool)
                dev = np.full(n_rows, -1, dtype=np.int64)
            out += _grouping(g.key, f, keep, row_key, dev, key_text, names, n_iters, freq_mhz, run_id)
    return out


def _grouping(grouping: str, f: dict[str, np.ndarray], keep: np.ndarray, row_key: np.ndarray, dev: np.ndarray,
              key_text: list[str], names: np.ndarray, n_iters: np.ndarray, freq: float, run_id: int) -> list[tuple]:
    """One grouping's rows: per (section, key, device) the mean over the section's iterations of each metric's
    per-iteration value, and its spread (max - min) when the section has several."""
    sec, it = f["section"][keep], f["iteration"][keep]
    key, dv = row_key[keep], dev[keep] + 1  # (device -1 .. : 0 ..)
    n_keys, n_dev = len(key_text), int(dv.max()) + 1 if len(dv) else 1
    n_it = int(it.max()) + 1 if len(it) else 1
    # inner: one group per (section, key, device, iteration), numbered so that the iterations of an outer group
    # (section, key, device) are consecutive: the outer reductions are then over runs of sorted ids
    inner, at = _groups(((sec * n_keys + key) * n_dev + dv) * n_it + it)
    m = len(inner)

    def total(col: str) -> np.ndarray:
        return np.bincount(at, weights=f[col][keep], minlength=m)

    per_iter: dict[str, np.ndarray] = {"ops": np.bincount(at, minlength=m).astype(float)}
    for metric in METRICS:
        if metric.total_only and grouping != "section":
            per_iter[metric.stored_column] = np.full(m, np.nan)
        elif metric.agg == "sum":
            per_iter[metric.stored_column] = total(metric.of)
        else:  # span: first FW start to last FW end of the iteration (a few groups: the section grouping only)
            lo = np.full(m, np.inf)
            np.fmin.at(lo, at, f["first_cycle"][keep])
            hi = np.full(m, -np.inf)
            np.fmax.at(hi, at, f["last_cycle"][keep])
            span = (hi - lo) / freq
            span[~np.isfinite(lo) | ~np.isfinite(hi)] = np.nan
            per_iter[metric.stored_column] = span
    # outer: the iterations of a (section, key, device) together
    outer, starts, to = np.unique(inner // n_it, return_index=True, return_inverse=True)
    k = len(outer)
    o_sec = outer // (n_keys * n_dev)
    o_key = outer // n_dev % n_keys
    o_dev = outer % n_dev - 1
    n = n_iters[o_sec].astype(float)
    several = n > 1
    values: list[np.ndarray] = [np.bincount(to, weights=per_iter["ops"], minlength=k) / n]
    for metric in METRICS:
        v = per_iter[metric.stored_column]
        present = ~np.isnan(v)
        mean = np.bincount(to, weights=np.where(present, v, 0.0), minlength=k) / n
        mean[np.bincount(to, weights=present, minlength=k) == 0] = np.nan  # SUM of NULLs is NULL
        spread = np.full(k, np.nan)
        if several.any():  # (fmax / fmin skip NULLs as MAX / MIN do)
            hi, lo = np.fmax.reduceat(v, starts), np.fmin.reduceat(v, starts)
            spread[several] = (hi - lo)[several]
        values += [mean, spread]
    cols = [v.tolist() for v in values]
    secs, keys, devs, iters = names[o_sec].tolist(), o_key.tolist(), o_dev.tolist(), n_iters[o_sec].tolist()
    return [(run_id, secs[j], grouping, key_text[keys[j]], devs[j], iters[j],
             *[None if c[j] != c[j] else c[j] for c in cols]) for j in range(k)]
