"""Two small built histories and the history commands whose JSON output tests/golden/history/ holds
(scripts/regen_history_golden.py writes them; tests/test_history_golden.py compares)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from corpus import DATA
from warehouse.cli import cli

HERE = Path(__file__).parent
SOURCES = {"dlv3": DATA / "seedfmt" / "dlv3_same" / "ops_perf_results_2026_11_01_02_00_00.csv",
           "clip": DATA / "seedfmt" / "clip_replays3" / "reports" / "ops_perf_results_2026_11_04_02_00_00.csv"}
HISTORIES = {"dlv3": ["--step", "block:stage2.block0:9:1.06", "--blip", "op:Matmul:6:1.4"],
             "clip": ["--step", "op:LayerNormDeviceOperation:10:1.08", "--replays", "12:2"]}
COMMANDS: dict[str, list[str]] = {
    "changes_dlv3": ["changes", "--label", "dlv3", "--format", "json"],
    "changes_clip": ["changes", "--label", "clip", "--format", "json"],
    "gate_dlv3": ["regressions", "--label", "dlv3", "--last", "6", "--format", "json"],
    "gate_clip": ["regressions", "--label", "clip", "--last", "6", "--format", "json"],
    "trend_dlv3": ["trend", "--label", "dlv3", "--by", "block", "--top", "5", "--format", "json"],
    "compare_dlv3": ["compare", "1", "14", "--by", "block", "--format", "json"],
}


def build(folder: Path) -> str:
    """The two histories (14 nights each, fixed seeds) in one SQLite warehouse; its path."""
    db = str(folder / "warehouse.db")
    for seed, (name, args) in enumerate(HISTORIES.items(), 501):
        subprocess.run([sys.executable, str(HERE / "mkhistory.py"), str(SOURCES[name]), str(folder / name),
                        "--nights", "14", "--seed", str(seed), *args], check=True, capture_output=True)
        r = CliRunner().invoke(cli, ["--db", db, "ingest", str(folder / name), "--label", name])
        assert r.exit_code == 0, r.output
    return db


def _stable(doc: Any) -> Any:
    """A document without what differs between two builds of the same history (ingest times, file paths)."""
    if isinstance(doc, dict):
        return {k: _stable(v) for k, v in doc.items() if k not in ("ingested_at", "seconds", "file", "source_path")}
    if isinstance(doc, list):
        return [_stable(v) for v in doc]
    return doc


def outputs(db: str) -> dict[str, Any]:
    """Each command's JSON document on the warehouse ``db``."""
    out = {}
    for name, args in COMMANDS.items():
        r = CliRunner().invoke(cli, ["--db", db, *args])
        assert r.exit_code in (0, 3), (name, r.output)
        out[name] = _stable(json.loads(r.stdout))
    return out
