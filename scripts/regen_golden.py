#!/usr/bin/env python3
"""Regenerate the golden reports in tests/golden/ by running the oracle on every corpus case in tests/data.

    python scripts/regen_golden.py [--oracle ../shared/oracle/profile_summary.py]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from corpus import GOLDEN, cases  # noqa: E402
from ttperf_cases import RANKED  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oracle", default=str(ROOT.parent / "shared" / "oracle" / "profile_summary.py"))
    a = ap.parse_args()
    if not Path(a.oracle).exists():
        print(f"Error: oracle not found at {a.oracle}; pass --oracle PATH", file=sys.stderr)
        return 1
    GOLDEN.mkdir(exist_ok=True)
    for name, csv in cases().items():
        subprocess.run([sys.executable, a.oracle, str(csv.relative_to(ROOT)), str(GOLDEN / f"{name}.json"),
                        "--md", str(GOLDEN / f"{name}.md")], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        print(f"{name}: {GOLDEN / name}.json, .md")
    # each rank's file of the built multi-host captures (tests/ttperf_cases.py): `report RUN --rank N`
    (GOLDEN / "ranks").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, split in RANKED.items():
            for rank, csv in enumerate(split(Path(tmp) / name)):
                out = GOLDEN / "ranks" / f"{name}_rank{rank}"
                subprocess.run([sys.executable, a.oracle, str(csv), f"{out}.json", "--md", f"{out}.md"], check=True,
                               stdout=subprocess.DEVNULL)
                print(f"{name} rank {rank}: {out}.json, .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
