"""The corpus cases copied from ``../shared/corpus`` into ``tests/data`` (real files and sectioned cases)."""
from __future__ import annotations

import math
from pathlib import Path

DATA = Path(__file__).parent / "data"
GOLDEN = Path(__file__).parent / "golden"


def cases() -> dict[str, Path]:
    """``{case name: CSV path}``: real files by stem, sectioned cases by folder name (``seedfmt``: the corpus's;
    ``built``: a corpus case changed to hold what the corpus lacks, such as a matmul in a ``|post`` layer)."""
    out = {p.stem: p for p in sorted((DATA / "real").glob("*.csv"))}
    for d in sorted((DATA / "seedfmt").iterdir()) + sorted((DATA / "built").iterdir()):
        out[d.name] = next(d.rglob("ops_perf_results*.csv"))
    return out


def number(text: str) -> float | None:
    """A cell's number as a reader would take it (``float``), None when it is none or not finite."""
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None
