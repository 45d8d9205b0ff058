"""Edits of a capture's rows that tests make to build nights with a known change: read, scale durations, write."""
from __future__ import annotations

import csv
from pathlib import Path

TIMES = ("DEVICE KERNEL DURATION [ns]", "DEVICE FW DURATION [ns]")


def read_rows(path: Path) -> list[dict[str, str]]:
    """The file's rows as dicts (a BOM, if any, left out of the first name)."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def read_lists(path: Path, encoding: str = "utf-8") -> list[list[str]]:
    """The file's rows as lists of cells, the header first (the file closed after)."""
    with open(path, newline="", encoding=encoding) as fh:
        return list(csv.reader(fh))


def read_dicts(path: Path) -> list[dict[str, str]]:
    """The file's rows as dicts, as they are (a BOM stays in the first name)."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def write_lists(path: Path, rows: list[list[str]], lineterminator: str = "\r\n") -> None:
    """``rows`` (lists of cells) as a CSV."""
    with open(path, "w", newline="") as fh:
        csv.writer(fh, lineterminator=lineterminator).writerows(rows)


def write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    """``rows`` as a CSV with their first row's columns (a column added to every row is written last)."""
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def scale_times(row: dict[str, str], factor: float) -> None:
    """The op's kernel and FW durations times ``factor`` (whole ns, as the profiler writes them)."""
    for c in TIMES:
        if row[c].strip():
            row[c] = f"{float(row[c]) * factor:.0f}"
