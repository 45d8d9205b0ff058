"""The test tiers' own machinery: ``--skip-passed-in`` (conftest) deselects exactly the tests a JUnit report says
passed, so .ci/run runs each test once (the README's fresh clone first, then the rest)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def _pytest(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=ROOT,
                          capture_output=True, text=True)


def test_skip_passed_in_deselects_what_passed_and_nothing_else(tmp_path):
    target = "tests/test_process_tricks.py"
    junit = tmp_path / "tier.xml"
    ran = _pytest(target, "-k", "pause", f"--junitxml={junit}")
    assert ran.returncode == 0, ran.stdout
    passed = int(ran.stdout.strip().splitlines()[-1].split(" passed")[0].split()[-1])
    total = _pytest(target, "--co")
    skipped = _pytest(target, "--co", f"--skip-passed-in={junit}")
    n_all = int(total.stdout.strip().splitlines()[-1].split()[0])
    assert passed >= 1 and f"{n_all - passed}/{n_all} tests collected ({passed} deselected)" in skipped.stdout, \
        skipped.stdout
