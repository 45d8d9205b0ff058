"""What a CI system reads: `--junit FILE` (valid JUnit XML, one failure per regression cause, skipped for
insufficient data) and the job summary appended to `$GITHUB_STEP_SUMMARY`, from `regressions` and `changes`."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from conftest import BACKENDS, _new_url, make_invoke

HERE = Path(__file__).resolve().parent
SCHEMA = xmlschema.XMLSchema(str(HERE / "schema" / "junit.xsd"))
MKSERIES = HERE / "mkseries.py"
OFT = HERE / "data/seedfmt/oft_mismatch/ops_perf_results_2026_11_02_02_00_00.csv"


@pytest.fixture(scope="module", params=BACKENDS)
def wh(request, tmp_path_factory, generated):
    """Nine nights of a 3,141-op model with one block 30 % slower in the last (label ``slow``), and a label of
    two nights (too little history to judge)."""
    folder = tmp_path_factory.mktemp("ci")
    gen = _new_url(request.param, folder)
    invoke = make_invoke(next(gen))
    slow = generated("mkseries", OFT, "--runs", "9", "--seed", "21", "--slow-block", "stage2.block1")
    assert invoke("ingest", slow, "--label", "slow").exit_code == 0
    young = generated("mkseries", OFT, "--runs", "2", "--seed", "22")
    assert invoke("ingest", young, "--label", "young").exit_code == 0
    invoke.folder = folder
    yield invoke
    for _ in gen:
        pass


def _suites(path: Path) -> ET.Element:
    SCHEMA.validate(str(path))  # (raises with the line and what is wrong)
    return ET.parse(path).getroot()


def test_gate_junit_has_one_failure_per_regression_cause(wh, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("# nightly\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out = tmp_path / "gate.xml"
    r = wh("regressions", "--label", "slow", "--junit", out, "--format", "json")
    assert r.exit_code == 3, r.output
    import json
    doc = json.loads(r.stdout)
    regressions = [c for c in doc["findings"] if c["kind"] == "regression"]
    root = _suites(out)
    failures = [c for c in root.iter("testcase") if c.find("failure") is not None]
    assert len(failures) == len(regressions) >= 1
    assert {c.get("name") for c in failures} == {f"{c['by']} {c['key']} [{c['id']}]" for c in regressions}
    assert root.get("failures") == str(len(regressions))
    cov = next(c for c in root.iter("testcase") if c.get("classname") == "coverage")
    assert cov.find("skipped") is None and "series judged" in (cov.findtext("system-out") or "")
    # the job summary: appended (what was there stays), the Markdown table with the cause's id
    text = summary.read_text()
    assert text.startswith("# nightly\n") and regressions[0]["id"] in text and "| id |" in text


def test_insufficient_data_is_skipped_not_passed(wh, tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    out = tmp_path / "young.xml"
    r = wh("regressions", "--label", "young", "--junit", out)
    assert r.exit_code in (0, 3), r.output
    root = _suites(out)
    cov = next(c for c in root.iter("testcase") if c.get("classname") == "coverage")
    skipped = cov.find("skipped")
    assert skipped is not None and skipped.get("message", "").startswith("insufficient data"), ET.tostring(root)


def test_changes_junit_and_summary(wh, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out = tmp_path / "changes.xml"
    r = wh("changes", "--label", "slow", "--junit", out)
    assert r.exit_code == 0, r.output
    root = _suites(out)
    assert root.find("testsuite") is not None
    assert summary.exists() and summary.read_text().strip()


def test_junit_to_an_unwritable_place_is_one_error_line(wh, tmp_path):
    r = wh("regressions", "--label", "slow", "--junit", tmp_path / "no" / "such" / "dir" / "x.xml")
    assert r.exit_code not in (0, 3) and r.output.strip().splitlines()[-1].startswith("Error: "), r.output
