"""The op identities whose tt-perf-report Bound changed: what a finding on a Bound count (``bound_dram`` ...)
names, e.g. "trace / stage1.block0 / stage1.block0.conv21 / Matmul #1 became DRAM-bound (was SLOW)".

A cause on ``bound_<class>`` says how many ops of a key are in that class per iteration; the ops themselves are
read from the view ``op_perf`` of the run and of its window (each op identity's Bound there is the one most of
the window's nights had), for the cause's sections and key only.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from sqlalchemy import Connection, text

LIMIT = 20  # identities listed per cause, the run's own order
PREFIX = "bound_"  # the Bound-count metrics' keys (warehouse.registry.measures: bound_dram ...)
_COLUMN = {"block": "block", "layer": "layer", "op-code": "op_code"}


def bound_changes(conn: Connection, run_id: int, window: list[int], sections: list[str], by: str, key: str,
                  bound: str) -> list[dict[str, Any]]:
    """The op identities (per device) of ``run_id`` in ``sections`` (labels: '(whole run)' is the whole run)
    and, for a block, layer or op code ``by``, in ``key``, whose Bound differs from their window's and either
    is ``bound``: ``[{identity, device, was, bound}]``, in the run's row order."""
    if not window:
        return []
    params: dict[str, Any] = {}
    where = ""
    names = ["" if s == "(whole run)" else s for s in sections]
    if "" not in names:
        params.update({f"s{i}": s for i, s in enumerate(names)})
        where += f" AND section IN ({', '.join(f':s{i}' for i in range(len(names)))})"
    if by in _COLUMN:
        # (a layer key of "[block glue]" is the block's ops outside any layer)
        if by == "layer" and key.startswith("[") and key.endswith(" glue]"):
            where += " AND layer = '' AND block = :k"
            params["k"] = key[1:-len(" glue]")]
        else:
            where += f" AND {_COLUMN[by]} = :k"
            params["k"] = key
    runs = ", ".join(str(int(r)) for r in [run_id, *window])
    rows = conn.execute(text(
        f"SELECT run_id, row_no, identity, device, bound FROM op_perf WHERE run_id IN ({runs}){where} "
        "AND bound NOT IN ('', 'HOST') ORDER BY run_id, row_no"), params).all()
    before: dict[tuple[str, Any], Counter[str]] = defaultdict(Counter)
    now: dict[tuple[str, Any], tuple[int, str]] = {}
    for rid, row_no, ident, dev, b in rows:
        if rid == run_id:
            now.setdefault((ident, dev), (row_no, b))
        else:
            before[(ident, dev)][b] += 1
    out = []
    for (ident, dev), (row_no, b) in sorted(now.items(), key=lambda kv: kv[1][0]):
        seen = before.get((ident, dev))
        if not seen:
            continue
        was = seen.most_common(1)[0][0]
        if was != b and bound in (was, b):
            out.append({"identity": ident, "device": dev, "was": was, "bound": b, "row": row_no + 1})
    return out[:LIMIT]


def of_cause(conn: Connection, run_id: int, window: list[int], sections: list[str], by: str, key: str,
             metrics: list[str]) -> list[dict[str, Any]] | None:
    """The :func:`bound_changes` of a cause on its Bound-count ``metrics`` (``bound_dram`` ...); None when it
    has none."""
    ms = [m for m in metrics if m.startswith(PREFIX)]
    if not ms:
        return None
    return [x for m in ms for x in bound_changes(conn, run_id, window, sections, by, key,
                                                 m.removeprefix(PREFIX).upper())][:LIMIT]


def of_causes(conn: Connection, causes: list[Any], runs: list[int], back: int) -> None:
    """Each cause of a history ``runs`` on a Bound count (``bound_dram`` ...) names the op identities whose Bound
    changed on its night against the ``back`` nights before it (:func:`bound_changes`)."""
    for c in causes:
        if c.run_id in runs:
            i = runs.index(c.run_id)
            c.bound_changes = of_cause(conn, c.run_id, runs[max(0, i - back):i], c.sections, c.by, c.key,
                                       c.metrics)


def with_bound_changes(conn: Connection, causes: list[dict[str, Any]], windows: dict[int, list[int]]) -> None:
    """Each cause (and contributor) on a Bound count gets ``bound_changes``, the identities that moved in or out
    of its class (:func:`bound_changes`); ``windows``: each checked run's window."""
    for c in causes:
        found = of_cause(conn, c["run_id"], windows.get(c["run_id"], []), c["sections"], c["by"], c["key"],
                         c["metrics"])
        if found is not None:
            c["bound_changes"] = found
        with_bound_changes(conn, c.get("contributors", []), windows)


def describe(b: dict[str, Any]) -> str:
    """One line of a Bound change, as the text outputs print it."""
    return f"op {b['identity']} (row {b['row']}, device {b['device']}): {b['was']} -> {b['bound']}"
