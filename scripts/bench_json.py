#!/usr/bin/env python3
"""The JSON encoders of ingest against orjson: is a faster library worth a dependency?

Three texts are made as JSON while a capture goes in: each row's volatile cells (``encode_volatile``: joined by
hand, the stdlib encoder only for a chunk with a cell that needs escaping), each chunk's interned-row ids
(``static_ids_json``) and the report's row lists (``_list_json``, the stdlib encoder 1,000 rows at a time). This
times each, best of 5, against orjson (when installed: ``pip install orjson``) and the stdlib encoder, on the rows of
a real capture (every cell of its op rows taken as volatile), and checks that the texts are equal.

    python scripts/bench_json.py [CSV]
"""
from __future__ import annotations

import csv
import importlib
import json
import re
import sys
import time
from collections.abc import Callable
from typing import Any
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT = ROOT / "tests" / "data" / "seedfmt" / "oft_mismatch" / "ops_perf_results_2026_11_02_02_00_00.csv"
_TRAILING_EMPTY = re.compile(r'(?:,"")+(?=\])')


def best_ms(fn: Callable[[], object], n: int = 20) -> float:
    """The best of 5 rounds of ``n`` calls, in ms a call."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e3


def main() -> int:
    from warehouse.analysis.reportscan import _list_json
    from warehouse.capture.cellcodec import encode_volatile
    from warehouse.store.cells import static_ids_json
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    with path.open(newline="", encoding="utf-8", errors="surrogateescape") as f:
        rows = list(csv.reader(f))[1:1001]
    width = max(map(len, rows))
    rows = [r + [""] * (width - len(r)) for r in rows]
    ids = list(range(5000, 6000))
    report_rows = [{"layer": r[0], "op": r[1], "count": i, "us": i * 1.25} for i, r in enumerate(rows)]
    orjson: Any = None
    try:  # optional: import by name so mypy need not find it installed
        orjson = importlib.import_module("orjson")
    except ImportError:
        print("orjson is not installed: only the stdlib encoder is timed beside the warehouse's")

    def per_row(dumps: Callable[[list[str]], str]) -> list[str]:
        out = []
        for r in rows:
            t = _TRAILING_EMPTY.sub("", dumps(r))
            out.append("[]" if t == '[""]' else t)
        return out
    stdlib_row = lambda r: json.dumps(r, ensure_ascii=False, separators=(",", ":"))  # noqa: E731
    cases: list[tuple[str, Callable[[], object], Callable[[], object], Callable[[], object] | None]] = [
        (f"volatile cells, {len(rows)} rows x {width}", lambda: encode_volatile(rows), lambda: per_row(stdlib_row),
         (lambda: per_row(lambda r: orjson.dumps(r).decode())) if orjson else None),
        ("chunk ids, 1,000 ints", lambda: static_ids_json(ids), lambda: json.dumps(ids, separators=(",", ":")),
         (lambda: orjson.dumps(ids).decode()) if orjson else None),
        (f"report rows, {len(report_rows)}", lambda: "".join(_list_json(report_rows)),
         lambda: json.dumps(report_rows, ensure_ascii=False), (lambda: orjson.dumps(report_rows)) if orjson else None),
    ]
    # the same texts (the report rows: the same document; the warehouse writes its lists a chunk at a time)
    assert encode_volatile(rows) == per_row(stdlib_row)
    assert static_ids_json(ids) == json.dumps(ids, separators=(",", ":"))
    assert json.loads("".join(_list_json(report_rows))) == report_rows
    print(f"{'text':34} {'warehouse':>10} {'stdlib':>10} {'orjson':>10}   (ms a call, best of 5; {path.name})")
    for name, ours, std, orj in cases:
        o = f"{best_ms(orj):10.3f}" if orj else f"{'-':>10}"
        print(f"{name:34} {best_ms(ours):10.3f} {best_ms(std):10.3f} {o}")
    if orjson:
        try:
            orjson.dumps(["\udcff"])
        except TypeError as e:
            print(f"orjson on a cell with a byte that is not UTF-8 (kept as a surrogate escape for a lossless "
                  f"export): {e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
