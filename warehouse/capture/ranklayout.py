"""Where a multi-host capture's files lie: ``tt-run --tracy`` writes one ordinary report per rank, under
``<folder>/rank<N>/<report dir>/ops_perf_results_*.csv`` (no database here: ingest asks before it opens one)."""
from __future__ import annotations

import re
from pathlib import Path

from warehouse.errors import UsageError

HOST_TAG, RANK_TAG = "host", "rank"
_RANK_DIR = re.compile(r"rank(\d+)")


def rank_of(path: Path) -> tuple[Path, int] | None:
    """(the folder holding the ``rank<N>`` folders, N) of a file inside a ``rank<N>`` folder, else None."""
    parts = path.parts
    for i in range(len(parts) - 2, -1, -1):
        m = _RANK_DIR.fullmatch(parts[i])
        if m:
            return Path(*parts[:i]), int(m.group(1))
    return None


def captures(files: list[Path]) -> list[list[Path]]:
    """The multi-host captures among ``files``, each its files in rank order: the files in ``rank<N>`` folders of
    one folder, when ranks 0 .. R-1 (R >= 2) are all there with as many files each (the k-th file of every rank,
    by path, make the k-th capture). A lone ``rank0`` folder is no capture. Any other layout is an error: which
    ranks are missing, or how many files each holds."""
    by_folder: dict[Path, dict[int, list[Path]]] = {}
    for f in files:
        where = rank_of(f)
        if where is not None:
            by_folder.setdefault(where[0], {}).setdefault(where[1], []).append(f)
    out = []
    for folder, ranks in by_folder.items():
        if len(ranks) < 2:
            continue
        missing = sorted(set(range(max(ranks) + 1)) - set(ranks))
        counts = {r: len(v) for r, v in sorted(ranks.items())}
        if missing or len(set(counts.values())) > 1:
            why = (f"rank(s) {', '.join(map(str, missing))} missing" if missing else
                   "files per rank differ (" + ", ".join(f"rank{r}: {n}" for r, n in counts.items()) + ")")
            raise UsageError(f"{folder}: a multi-host capture (rank<N> folders) whose {why}: give each rank's "
                             "files, or ingest the files one by one and join them with `warehouse ranks`")
        per_rank = [sorted(ranks[r]) for r in range(len(ranks))]
        out += [[files_k[k] for files_k in per_rank] for k in range(len(per_rank[0]))]
    return out
