"""The report is the oracle's, for every corpus case, from the database alone."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from corpus import GOLDEN, cases

PARITY = Path(__file__).parent / "parity.py"


@pytest.mark.parametrize("case", list(cases()))
def test_report_matches_oracle(corpus_wh, case, tmp_path):
    invoke, ids, _ = corpus_wh
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    r = invoke("report", ids[case], "--json", out_json, "--md", out_md)
    assert r.exit_code == 0, r.output
    p = subprocess.run([sys.executable, str(PARITY), str(GOLDEN / f"{case}.json"), str(out_json),
                        "--md", str(GOLDEN / f"{case}.md"), str(out_md)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout
    # stdout is the Markdown text, as the oracle prints it
    assert r.output == out_md.read_text()
    assert json.loads(out_json.read_text())["csv"].endswith(cases()[case].name)


def test_report_latest_and_label(wh, corpus_copy):
    a = corpus_copy("dlv3_same")
    assert wh("ingest", a, "--label", "dlv3").exit_code == 0
    b = corpus_copy("segenc_notrace")
    assert wh("ingest", b, "--label", "seg").exit_code == 0
    r = wh("report", "latest", "--label", "dlv3")
    assert r.exit_code == 0
    assert "eager: ops 387" in r.output
    r = wh("report", "latest")
    assert "eager: ops 1004" in r.output  # segenc was captured later (2026-11-03)


def test_report_unknown_run(wh, corpus_copy):
    wh("ingest", corpus_copy("dlv3_same"))
    r = wh("report", "99")
    assert r.exit_code == 1
    assert r.output.startswith("Error: no run 99")
    r = wh("report", "nope")
    assert r.exit_code == 1 and "expected a run id" in r.output
    r = wh("report", "latest", "--label", "missing")
    assert r.exit_code == 1 and "no runs with label 'missing'" in r.output
