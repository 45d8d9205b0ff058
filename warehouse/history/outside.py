"""Outside series: the history detector on any series a user has (a model's tokens/s from CI, an end-to-end latency).

A file is CSV (a header; an optional index or time column, named ``index``, ``time``, ``date``, ``timestamp``,
``night`` or ``step``, or the first column when it is not numeric; every other column a series of numbers, an empty
cell a missing point) or JSON (a list of numbers, a list of objects with the same columns, or an object of named
lists). Each series runs through :func:`warehouse.history.changepoints.detect_series`; a change's ``index`` is the
0-based position of the first point of its new level (missing points count), ``at`` the index column's value there.
"""
from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warehouse.errors import InputError
from warehouse.history.changepoints import SeriesReport, detect_series

INDEX_NAMES = ("index", "time", "date", "timestamp", "night", "step", "run", "commit")


@dataclass
class OutsideSeries:
    """One named series of a file: its points (NaN: missing) and the index column's labels, when there is one."""

    name: str
    values: list[float]
    labels: list[str] | None = None


@dataclass
class OutsideResult:
    """The changes of every series of a file, in the ``{"changes": [...]}`` contract of ``changes``."""

    source: str
    series: list[OutsideSeries]
    reports: list[SeriesReport] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Every change of every series (``series``, ``index``, ``at``), then drifts and outliers, and per series
        its length, noise and scale."""
        changes: list[dict[str, Any]] = []
        drifts: list[dict[str, Any]] = []
        outliers: list[dict[str, Any]] = []
        for s, rep in zip(self.series, self.reports):
            doc = rep.to_json()
            for group, out in (("changes", changes), ("drifts", drifts), ("outliers", outliers)):
                for c in doc[group]:
                    out.append({"series": s.name, **c, "at": s.labels[c["index"]] if s.labels else c["index"]})
        return {"source": self.source, "changes": changes, "drifts": drifts, "outliers": outliers,
                "series": [{"name": s.name, "points": len(s.values), "noise": rep.sigma,
                            "scale": "log" if rep.log else "linear"} for s, rep in zip(self.series, self.reports)]}


def detect_changes(values: Any, **options: Any) -> SeriesReport:
    """The change points of one series of numbers (a list or array; NaN for a missing point): steps (``index``:
    the first point of the new level), drifts and one-point outliers apart. Options as
    :func:`warehouse.history.changepoints.detect_series` (``fdr``, ``min_sigmas``, ``min_change``, ``one_sided``)."""
    return detect_series(values, **options)


def detect_file(path: Path, **options: Any) -> OutsideResult:
    """Every series of a CSV or JSON file (see the module) through :func:`detect_changes`."""
    series = read_series(path)
    return OutsideResult(str(path), series, [detect_changes(s.values, **options) for s in series])


def read_series(path: Path) -> list[OutsideSeries]:
    """The series of a file, or an :class:`InputError` naming the file, row and column and what to do."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(str(path), f"cannot read it ({e}); pass a CSV or JSON file of numbers") from None
    stripped = text.lstrip()
    out = _from_json(path, stripped) if stripped[:1] in ("[", "{") else _from_csv(path, text)
    if not out:
        raise InputError(str(path), "no series of numbers in it; pass a CSV with a header and numeric columns, or a "
                         "JSON list of numbers")
    for s in out:
        if sum(math.isfinite(v) for v in s.values) < 2:
            raise InputError(str(path), f"series {s.name!r} has fewer than 2 numbers; a change needs a before "
                             "and an after")
    return out


def _number(path: Path, raw: Any, where: str) -> float:
    """A cell as a float (empty or null: missing, NaN), or an InputError naming where it is."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return math.nan
    if isinstance(raw, bool):
        raise InputError(str(path), f"{where}: {raw!r} is not a number; write the value as a number")
    try:
        v = float(raw)
    except (TypeError, ValueError):
        raise InputError(str(path), f"{where}: {str(raw)[:40]!r} is not a number; write the value as a number, or "
                         "leave the cell empty for a missing point") from None
    if math.isinf(v):
        raise InputError(str(path), f"{where}: {raw!r} is infinite; leave the cell empty for a missing point")
    return v


def _from_csv(path: Path, text: str) -> list[OutsideSeries]:
    rows = list(csv.reader(io.StringIO(text)))
    rows = [r for r in rows if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise InputError(str(path), "a CSV needs a header row and at least 2 rows of values")
    head = [h.strip() for h in rows[0]]
    body = rows[1:]
    for n, r in enumerate(body, start=2):
        if len(r) != len(head):
            raise InputError(str(path), f"row {n}: {len(r)} cells under a header of {len(head)}; give every row one "
                             "cell per column")

    def numeric(col: int) -> bool:
        return all(_is_number(r[col]) for r in body)
    idx = next((i for i, h in enumerate(head) if h.lower() in INDEX_NAMES), None)
    if idx is None and head and not numeric(0):
        idx = 0
    labels = [r[idx].strip() for r in body] if idx is not None else None
    out = []
    for c, name in enumerate(head):
        if c == idx:
            continue
        vals = [_number(path, r[c], f"row {n}, column {name!r}") for n, r in enumerate(body, start=2)]
        out.append(OutsideSeries(name or f"column {c + 1}", vals, labels))
    return out


def _is_number(cell: str) -> bool:
    if not cell.strip():
        return True
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _from_json(path: Path, text: str) -> list[OutsideSeries]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(str(path), f"line {e.lineno}, column {e.colno}: not JSON ({e.msg}); pass a JSON list of "
                         "numbers") from None
    if isinstance(doc, dict):
        return [OutsideSeries(str(k), [_number(path, v, f"series {k!r}, item {i}") for i, v in enumerate(vs)])
                for k, vs in doc.items() if isinstance(vs, list)]
    if not isinstance(doc, list):
        raise InputError(str(path), "expected a JSON list of numbers (or of objects, or an object of lists)")
    if all(not isinstance(v, dict) for v in doc):
        return [OutsideSeries("value", [_number(path, v, f"item {i}") for i, v in enumerate(doc)])]
    if not all(isinstance(v, dict) for v in doc):
        raise InputError(str(path), "a JSON list mixes objects and values; give every item the same shape")
    keys = list(dict.fromkeys(k for d in doc for k in d))
    idx = next((k for k in keys if k.lower() in INDEX_NAMES), None)
    labels = [str(d.get(idx, "")) for d in doc] if idx is not None else None
    return [OutsideSeries(k, [_number(path, d.get(k), f"item {i}, key {k!r}") for i, d in enumerate(doc)], labels)
            for k in keys if k != idx]


# ------------------------------------------------------------------ scoring a detector (as TCPDBench scores them)
def f_measure(truth: list[int], pred: list[int], margin: int = 5) -> float:
    """TCPDBench's F1 for one annotator: the start counts as a change point of both, each prediction matches one
    true change point within ``margin``."""
    t, x = {0, *truth}, sorted({0, *pred})
    used: set[int] = set()
    tp = 0
    for c in sorted(t):
        near = [p for p in x if abs(p - c) <= margin and p not in used]
        if near:
            used.add(min(near, key=lambda p: abs(p - c)))
            tp += 1
    precision, recall = tp / len(x), tp / len(t)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def covering(truth: list[int], pred: list[int], n: int) -> float:
    """TCPDBench's covering of the true segmentation by the predicted one."""
    def segs(cps: list[int]) -> list[set[int]]:
        edges = [0, *sorted(c for c in set(cps) if 0 < c < n), n]
        return [set(range(a, b)) for a, b in zip(edges, edges[1:]) if b > a]
    g, p = segs(truth), segs(pred)
    return sum(len(a) * max(len(a & b) / len(a | b) for b in p) for a in g) / n
