"""Rendering rows for the terminal: aligned tables, CSV, JSON and Markdown."""
from __future__ import annotations

import csv
import io
import json
import math
from datetime import date, datetime
from decimal import Decimal
from typing import Any
from collections.abc import Callable, Iterable, Sequence


# A spreadsheet runs a cell that starts with one of these as a formula (=HYPERLINK(...) from a tag or a label
# reaches whoever opens the CSV): such a text is written with a leading ' (tt-perf-report escapes them too).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(v: Any) -> Any:
    """A CSV cell that no spreadsheet runs: a text that looks like a formula gets a leading ``'``; None is empty."""
    if isinstance(v, str) and v.startswith(FORMULA_START):
        return "'" + v
    return "" if v is None else v


_MD = str.maketrans({"|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;", "\n": " ", "\r": " "})


def md_text(s: Any) -> str:
    """A text for a Markdown table cell: ``|`` escaped, HTML's ``<``, ``>`` and ``&`` as entities (a label or a key
    of ``<script>`` stays text wherever the Markdown is rendered), one line."""
    return str(s).translate(_MD)


def json_safe(obj: Any) -> Any:
    """``obj`` with every float that is not finite made None: JSON has no NaN or Infinity, and readers refuse them
    (1e308 durations sum to inf)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if hasattr(obj, "to_json"):  # a result of the application layer: its document
        return json_safe(obj.to_json())
    return obj


def plain(v: Any) -> Any:
    """A value as both back ends print it: a float to 15 significant digits (the digits a double holds exactly:
    ``69557.18100000001`` prints ``69557.181``, as sqlite3 does, whatever order a back end added in), a whole
    float as an integer (op counts), a NUMERIC as a float, a boolean as 0 / 1 (SQLite has no booleans), a time as
    ``YYYY-MM-DD HH:MM:SS[.ffffff]`` (SQLite's stored text and PostgreSQL's timestamp alike)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, Decimal):
        v = float(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return v
        if v.is_integer() and abs(v) < 1e15:
            return int(v)
        return float(f"{v:.15g}")
    if isinstance(v, datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, str) and len(v) == 26 and v.endswith(".000000") and v[10] == " " and v[4] == "-":
        return v[:19]  # SQLAlchemy's SQLite text for a time with no fraction
    return v


def plain_row(r: Sequence[Any]) -> list[Any]:
    """:func:`plain` of every value of a row."""
    return [plain(v) for v in r]


def _cell(v: Any) -> str:
    v = plain(v)
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)  # the shortest text that reads back as this (15-digit) value
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def _one_line(s: str) -> str:
    return s if s.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain aligned text table (numbers right-aligned; control characters shown escaped, so that a row is
    one line)."""
    cells = [[_one_line(_cell(v)) for v in r] for r in rows]
    widths = [len(c) for c in columns]
    for r in cells:
        for i, v in enumerate(r):
            widths[i] = max(widths[i], len(v))
    numeric = [all(isinstance(r[i], (int, float, Decimal)) or r[i] is None for r in rows) and rows
               for i in range(len(columns))]
    def line(vals: Sequence[str]) -> str:
        cells = (v.rjust(w) if numeric[i] else v.ljust(w) for i, (v, w) in enumerate(zip(vals, widths)))
        return "  ".join(cells).rstrip()
    out = [line(list(columns)), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    return "\n".join(out)


def within_budget(head: list[str], rows: list[str], budget: int, full: str, reserve: int = 120) -> list[str]:
    """``head`` and as many ``rows`` as fit in ``budget`` characters (``reserve`` left for what follows), then
    "N more: FULL lists them all" when some were left out: a PR comment never passes GitHub's limit."""
    out = list(head)
    used = sum(len(x) + 1 for x in out)
    shown = 0
    for row in rows:
        if used + len(row) + reserve > budget:
            break
        out.append(row)
        used += len(row) + 1
        shown += 1
    if shown < len(rows):
        out.append(f"\n{len(rows) - shown} more: {full} lists them all")
    return out


def markdown(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub Markdown table."""
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    out += ["| " + " | ".join(md_text(_cell(v)) for v in r) + " |" for r in rows]
    return "\n".join(out)


def to_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    w.writerows([[csv_safe(v) for v in plain_row(r)] for r in rows])
    return buf.getvalue().rstrip("\n")


def _default(v: Any) -> Any:
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, datetime):
        return v.isoformat(sep=" ")  # one time format everywhere (see plain)
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.hex()
    raise TypeError(type(v).__name__)


def to_json(obj: Any) -> str:
    """``obj`` as indented JSON (numbers that are not finite as null)."""
    return json.dumps(json_safe(obj), indent=1, default=_default, ensure_ascii=False)


def records(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Rows as dicts of :func:`plain` values."""
    return [dict(zip(columns, plain_row(r))) for r in rows]


def stream(columns: Sequence[str], rows: Iterable[Sequence[Any]], fmt: str, write: Callable[[str], Any]) -> None:
    """Write rows as they come in a streaming format (csv, nl: one JSON object a line, json); the table formats
    need every row for their widths and are rendered whole."""
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([csv_safe(v) for v in plain_row(r)])
            if buf.tell() > 1 << 16:
                write(buf.getvalue())
                buf.seek(0)
                buf.truncate()
        write(buf.getvalue())
    elif fmt in ("nl", "json"):
        first = True
        if fmt == "json":
            write("[")
        for r in rows:
            obj = json.dumps(dict(zip(columns, json_safe(plain_row(r)))), default=_default, ensure_ascii=False)
            if fmt == "nl":
                write(obj + "\n")
            else:
                write(("\n " if first else ",\n ") + obj)
                first = False
        if fmt == "json":
            write("\n]\n" if not first else "]\n")
    else:
        write(render(columns, list(rows), fmt) + "\n")


def render(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str) -> str:
    """Rows in one of the output formats: table, csv, json, md."""
    if fmt == "csv":
        return to_csv(columns, rows)
    if fmt == "json":
        return to_json(records(columns, rows))
    if fmt == "nl":
        return "\n".join(json.dumps(json_safe(d), default=_default, ensure_ascii=False)
                         for d in records(columns, rows))
    if fmt == "md":
        return markdown(columns, rows)
    return table(columns, rows)
