#!/usr/bin/env python3
"""Regenerate tests/golden/history/: what `changes`, `regressions`, `trend` and `compare` print as JSON on two
built histories (tests/history_cases.py), so that a change of the code's layout, or of anything else that should
not move a history output, is caught by tests/test_history_golden.py.

    python scripts/regen_history_golden.py          (after a deliberate change of history outputs only)
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from history_cases import COMMANDS, build, outputs  # noqa: E402


def main() -> int:
    out = ROOT / "tests" / "golden" / "history"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = build(Path(tmp))
        for name, doc in outputs(db).items():
            (out / f"{name}.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"{len(COMMANDS)} outputs written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
