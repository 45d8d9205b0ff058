"""The edges a hostile review found: ids that are too large or spelled oddly, tuning values that are not numbers,
a full disk, cells that are not numbers, markup and formulas in what the warehouse writes, values past the float
limit, negative durations."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from corpus import cases

SMALL = "ttperfreport__bh20_oft_integral_image_trace"


def _errors(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith("Error:")]


def _rewrite(src: Path, dst: Path, change) -> Path:
    """``dst``: ``src`` with ``change(row index, row, header index)`` applied to each data row."""
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    idx = {h: i for i, h in enumerate(rows[0])}
    out = [rows[0]] + [change(i, list(r), idx) for i, r in enumerate(rows[1:])]
    with open(dst, "w", newline="") as f:
        csv.writer(f, lineterminator="\r\n").writerows(out)
    return dst


def _op_rows(src: Path) -> list[int]:
    """The rows (numbered from 1 after the header) that are ops."""
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    t = rows[0].index("OP TYPE")
    return [i + 1 for i, r in enumerate(rows[1:]) if r[t] != "signpost"]


# ------------------------------------------------------------------------------------------------ ids
@pytest.mark.parametrize("ident", ["run:99999999999999999999999", "run:9223372036854775808"])
def test_a_huge_run_id_is_no_run(wh, ident):
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    r = wh("triage", ident, "--status", "invalid")
    assert r.exit_code == 2 and _errors(r.output) and "no run" in r.output and "Traceback" not in r.output, r.output
    r = wh("report", ident.split(":")[1])
    assert r.exit_code == 2 and "no run" in r.output, r.output


def test_triage_ids_are_normalised_and_can_be_cleared(wh):
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    for spelling in ("run:0001", "run:\u0661", " run:1\n"):  # (٣-style digits: Arabic-Indic one)
        r = wh("triage", spelling, "--status", "invalid")
        assert r.exit_code == 0, r.output
    listed = json.loads(wh("triage", "--format", "json").output)
    assert [d["id"] for d in listed] == ["run:1"], listed
    assert listed[0]["who"]  # (recorded even where $USER is unset: see test_who_without_user)
    r = wh("triage", "run:01", "--clear")
    assert r.exit_code == 0 and "removed" in r.output, r.output
    assert json.loads(wh("triage", "--format", "json").output) == []
    r = wh("triage", "run:1", "--clear")
    assert r.exit_code == 2 and "no decision" in r.output
    r = wh("triage", "run:x1", "--status", "invalid")
    assert r.exit_code == 2 and "expected a change id" in r.output


def test_who_without_user(wh, monkeypatch):
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("LOGNAME", raising=False)
    assert wh("triage", "run:1", "--status", "invalid").exit_code == 0
    assert json.loads(wh("triage", "--format", "json").output)[0]["who"]


# ------------------------------------------------------------------------------------------------ tuning values
@pytest.mark.parametrize("args", [["changes", "--fdr", "nan"], ["changes", "--min-sigmas", "nan"],
                                  ["changes", "--min-sigmas", "inf"], ["changes", "--min-us", "nan"],
                                  ["regressions", "--min-us", "inf"], ["sql", "SELECT 1", "--timeout", "nan"]])
def test_tuning_values_that_are_not_numbers_are_refused(wh, args):
    r = wh(*args)
    assert r.exit_code == 2 and "Traceback" not in r.output, (args, r.output)


# ------------------------------------------------------------------------------------------------ writing
def test_a_full_disk_is_exit_1(wh):
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    r = wh("export", "1", "-o", "/dev/full")
    assert r.exit_code == 1 and len(_errors(r.output)) == 1 and "/dev/full" in r.output, r.output


def test_a_cell_that_is_not_a_number_names_its_row_and_column(wh, tmp_path):
    src = cases()[SMALL]
    third = _op_rows(src)[2]

    def nan_cell(i, row, idx):
        if i + 1 == third:
            row[idx["DEVICE KERNEL DURATION [ns]"]] = "nan"
        return row
    f = _rewrite(src, tmp_path / "ops_perf_results_2026_01_01_02_00_00.csv", nan_cell)
    assert wh("ingest", f).exit_code == 0
    out = wh("runs", "--warnings").output
    line = next(ln for ln in out.splitlines() if "not finite" in ln)
    assert f"row {third}" in line and "DEVICE KERNEL DURATION [ns]" in wh("runs", "--warnings", "--json").output


def test_negative_durations_are_warned_with_row_and_column(wh, tmp_path):
    src = cases()[SMALL]
    ops = _op_rows(src)

    def negative(i, row, idx):
        if i + 1 in ops[1::2]:
            for c in ("DEVICE KERNEL DURATION [ns]", "DEVICE FW DURATION [ns]"):
                if row[idx[c]]:
                    row[idx[c]] = "-" + row[idx[c]]
        return row
    f = _rewrite(src, tmp_path / "ops_perf_results_2026_01_01_02_00_00.csv", negative)
    assert wh("ingest", f).exit_code == 0
    doc = json.loads(wh("runs", "--warnings", "--json").output)
    warns = doc[0]["warnings"] if isinstance(doc, list) else doc["runs"][0]["warnings"]
    text = json.dumps(warns)
    assert "negative kernel durations" in text and "negative FW durations" in text, text
    assert any(w.get("row") == ops[1] and w.get("column") == "DEVICE KERNEL DURATION [ns]" for w in warns
               if isinstance(w, dict)), warns


def test_markdown_escapes_markup(wh, tmp_path):
    src = cases()[SMALL]

    def script(i, row, idx):
        if row[idx["OP TYPE"]] != "signpost":
            name = "OP CODE" if "OP CODE" in idx else "OP NAME"
            row[idx[name]] = "<script>alert(1)</script>"
        return row
    f = _rewrite(src, tmp_path / "ops_perf_results_2026_01_01_02_00_00.csv", script)
    assert wh("ingest", f).exit_code == 0
    for args in (["perf", "latest", "--format", "md"], ["sql", "SELECT name FROM op_code", "--format", "md"]):
        r = wh(*args)
        assert r.exit_code == 0 and "<script>" not in r.output and "&lt;script&gt;" in r.output, (args, r.output)


def test_csv_outputs_escape_formulas(wh):
    assert wh("ingest", cases()[SMALL]).exit_code == 0
    r = wh("sql", "SELECT '=HYPERLINK(\"http://x\")' AS a, '+1' AS b, 5 AS c, -2 AS d", "--format", "csv")
    assert r.exit_code == 0, r.output
    row = list(csv.reader(r.output.splitlines()))[1]
    assert row == ["'=HYPERLINK(\"http://x\")", "'+1", "5", "-2"], row


# ------------------------------------------------------------------------------------------------ past the float limit
@pytest.fixture
def huge(tmp_path):
    """Three nights of a small capture, the last with every kernel and FW duration 1e308."""
    src = cases()[SMALL]
    files = []
    for night in range(3):
        def change(i, row, idx, night=night):
            k, f = idx["DEVICE KERNEL DURATION [ns]"], idx["DEVICE FW DURATION [ns]"]
            if row[k]:
                row[k] = "1e308" if night == 2 else str(float(row[k]) + night)
                row[f] = "1e308" if night == 2 else row[f]
            return row
        files.append(_rewrite(src, tmp_path / f"ops_perf_results_2026_01_0{night + 1}_02_00_00.csv", change))
    return files


def test_values_past_the_float_limit(wh, huge, db_url):
    for f in huge:
        assert wh("ingest", f).exit_code == 0
    r = wh("check")
    assert r.exit_code == 0 and r.output.strip() == "warehouse ok", r.output
    # (PostgreSQL refuses a product past the float limit: "value out of range"; SQLite makes it Infinity)
    inf_sql = "SELECT kernel_ns * 10 AS x FROM op WHERE run_id = 3 LIMIT 2" if not db_url.startswith("postgresql") \
        else "SELECT kernel_ns AS x FROM op WHERE run_id = 3 LIMIT 2"
    for args in (["trend", "--format", "json"], ["compare", "1", "3", "--format", "json"],
                 ["sql", inf_sql, "--format", "json"]):
        r = wh(*args)
        assert r.exit_code == 0, (args, r.output)
        assert "Infinity" not in r.output and "NaN" not in r.output, (args, r.output[:2000])
        json.loads(r.output)


def test_no_numpy_warning_reaches_stderr(huge, tmp_path):
    db = tmp_path / "w.db"
    for args in [["ingest", *map(str, huge)], ["check"], ["regressions"], ["trend"]]:
        p = subprocess.run([sys.executable, "-m", "warehouse", "--db", str(db), *args], capture_output=True,
                           text=True)
        assert "RuntimeWarning" not in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)


def test_charts_draw_no_value_that_is_not_finite():
    from warehouse.web.chart import Series, svg
    out = svg([Series("k", [("2026-01-01", 1, 1.0, False), ("2026-01-02", 2, float("inf"), False),
                            ("2026-01-03", 3, float("nan"), False), ("2026-01-04", 4, 2.0, False)])], "us")
    assert "nan" not in out.lower() and "inf" not in out.lower()
    assert out.count("<circle") == 2


def test_copy_says_triage_decisions_stay_behind(wh, db_url, tmp_path):
    from corpus import cases
    assert wh("ingest", cases()["dlv3_same"], "--label", "m").exit_code == 0
    assert wh("triage", "run:1", "--status", "invalid", "--note", "a broken card").exit_code == 0
    r = wh("copy", "--from", db_url, "--to", tmp_path / "other.db")
    assert r.exit_code == 0, r.output
    assert "1 triage decision(s) about these runs were not copied" in r.output and "run:1" in r.output


def test_a_change_judged_beyond_the_runs_level_says_so():
    """Every op 10 % slower and one block 30 %: the block's finding is +18 % beyond the run's level, while its
    printed before and after are measured; the line says both."""
    from warehouse.history.causes import Cause
    from warehouse.render.causes import line
    c = Cause("r-0", "regression", "block", "b0", "2026-11-09 02:00:00", 9, 100.0, 130.0, 18.2, 30.0, 1.0,
              ["trace"], ["kernel"], ["all"])
    assert "+18.2 % beyond the run's level (+30.0 % measured) (100.0 -> 130.0 us" in line(c)
    plain = Cause("r-1", "regression", "block", "b0", "2026-11-09 02:00:00", 9, 100.0, 118.0, 18.0, 18.0, 1.0,
                  ["trace"], ["kernel"], ["all"])
    assert "beyond" not in line(plain)
