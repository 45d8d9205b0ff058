#!/usr/bin/env python3
"""Regenerate the per-op analysis goldens in ``tests/golden/ttperf/`` with tt-perf-report 1.4.1.

    python scripts/regen_ttperf.py [--tt-perf-report PATH] [--corpus ../shared/corpus]

tt-perf-report must be installed in a venv of its own (``python -m venv /tmp/ttpr && /tmp/ttpr/bin/pip install
tt-perf-report==1.4.1``); pass its ``tt-perf-report`` executable. The six public captures are copied from the
corpus's ``ttperf/`` (made by the same command); the real captures of ``tests/data/ttperf_extra/`` and the variants
of ``tests/ttperf_cases.py`` are run here (a multi-host one: its rank files given together).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from ttperf_cases import BUILDERS, RANKED  # noqa: E402

GOLDEN = ROOT / "tests" / "golden" / "ttperf"
FLAGS = ["--ignore-signposts", "--no-summary", "--raw-op-codes"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--tt-perf-report", default="/tmp/ttpr/bin/tt-perf-report")
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    a = ap.parse_args()
    GOLDEN.mkdir(parents=True, exist_ok=True)
    corpus = Path(a.corpus) / "ttperf"
    if corpus.is_dir():
        for f in sorted(corpus.glob("*.csv")):
            shutil.copyfile(f, GOLDEN / f.name)
            print(f"copied {f.name}")
    # real captures not in the corpus (tests/data/ttperf_extra, with their sources in its README)
    for f in sorted((ROOT / "tests" / "data" / "ttperf_extra").glob("*.csv")):
        out = GOLDEN / f.name
        subprocess.run([a.tt_perf_report, str(f), *FLAGS, "--csv", str(out)], check=True, stdout=subprocess.DEVNULL)
        print(f"wrote {out.name}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in BUILDERS.items():
            src = build(Path(tmp) / name)
            out = GOLDEN / f"{name}.csv"
            subprocess.run([a.tt_perf_report, str(src), *FLAGS, "--csv", str(out)], check=True,
                           stdout=subprocess.DEVNULL)
            print(f"wrote {out.name}")
        # multi-host captures: tt-perf-report given every rank's file, in rank order
        (GOLDEN / "ranks").mkdir(exist_ok=True)
        for name, split in RANKED.items():
            files = split(Path(tmp) / name)
            out = GOLDEN / "ranks" / f"{name}.csv"
            subprocess.run([a.tt_perf_report, *map(str, files), *FLAGS, "--csv", str(out)], check=True,
                           stdout=subprocess.DEVNULL)
            print(f"wrote ranks/{out.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
