#!/usr/bin/env python3
"""A long randomised search of the CSV parser (the suite's own run is derandomised so that CI is deterministic).

    python scripts/fuzz.py [--examples 2000] [--rounds 5]

Each round runs tests/test_hostile.py::test_parser_fuzz with a new random seed and the given number of
examples; Hypothesis prints the seed and the smallest failing file when it finds one.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    env = dict(os.environ, WAREHOUSE_FUZZ_EXAMPLES=str(a.examples))
    for r in range(a.rounds):
        print(f"round {r + 1} of {a.rounds}: {a.examples} examples", flush=True)
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests/test_hostile.py::test_parser_fuzz", "--hypothesis-seed", str(int.from_bytes(
                                os.urandom(4), "big")), "--hypothesis-show-statistics"], cwd=ROOT, env=env)
        if p.returncode:
            return p.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
