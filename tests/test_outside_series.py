"""`warehouse changes --series FILE` and `warehouse.detect_changes`: the history detector on an outside series,
scored as TCPDBench scores detectors (F1 with a margin of 5 points) on seeded series with known change points."""
from __future__ import annotations

import json
import math
import random

import pytest
from click.testing import CliRunner

import warehouse
from warehouse.cli import cli
from warehouse.history.outside import f_measure


def _series(seed: int) -> tuple[list[float], list[int]]:
    """A noisy positive series of 80-160 points with 0-3 steps of 4-15 % (at least 10 points apart)."""
    rng = random.Random(seed)
    n = rng.randint(80, 160)
    k = rng.randint(0, 3)
    cps: list[int] = []
    while len(cps) < k:
        c = rng.randint(10, n - 10)
        if all(abs(c - d) >= 10 for d in cps):
            cps.append(c)
    cps.sort()
    level, out = 100.0, []
    for i in range(n):
        if i in cps:
            level *= rng.choice([1, -1]) * rng.uniform(0.04, 0.15) + 1
        out.append(level * rng.gauss(1, 0.01))
    return out, cps


def test_known_steps_are_found_with_a_high_f1():
    scores, nothing = [], []
    for seed in range(40):
        v, cps = _series(seed)
        found = [c.index for c in warehouse.detect_changes(v).changes]
        scores.append(f_measure(cps, found))
        nothing.append(f_measure(cps, []))
    mean = sum(scores) / len(scores)
    assert mean >= 0.95, (mean, scores)
    assert mean > sum(nothing) / len(nothing) + 0.2


def test_exact_index_and_no_change_on_noise():
    rng = random.Random(7)
    v = [50 * (1.1 if i >= 30 else 1.0) * rng.gauss(1, 0.01) for i in range(70)]
    rep = warehouse.detect_changes(v)
    assert [c.index for c in rep.changes] == [30]
    assert rep.changes[0].after / rep.changes[0].before == pytest.approx(1.1, abs=0.02)
    quiet = [50 * rng.gauss(1, 0.01) for _ in range(200)]
    assert warehouse.detect_changes(quiet).changes == []


def test_smooth_drift_is_one_drift_not_a_staircase():
    rng = random.Random(3)
    v = [100 * (1 + 0.3 / (1 + math.exp(-(i - 60) / 8))) * rng.gauss(1, 0.005) for i in range(120)]
    rep = warehouse.detect_changes(v)
    assert len(rep.changes) <= 1 and len(rep.drifts) == 1, rep.to_json()


def test_cli_on_csv_and_json(tmp_path):
    rng = random.Random(11)
    rows = ["date,tokens_per_s,latency_ms"]
    for i in range(60):
        rows.append(f"2026-09-{i // 2 + 1:02d}T{i % 2}," f"{100 * (0.9 if i >= 40 else 1) * rng.gauss(1, 0.01):.3f},"
                    f"{20 * rng.gauss(1, 0.01):.3f}")
    csv_file = tmp_path / "ci.csv"
    csv_file.write_text("\n".join(rows) + "\n")
    r = CliRunner().invoke(cli, ["changes", "--series", str(csv_file), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [(c["series"], c["index"], c["at"]) for c in doc["changes"]] == [("tokens_per_s", 40, "2026-09-21T0")]
    assert {s["name"] for s in doc["series"]} == {"tokens_per_s", "latency_ms"}
    text = CliRunner().invoke(cli, ["changes", "--series", str(csv_file)]).output
    assert "step at index 40" in text and "latency_ms: 0 change(s)" in text
    js = tmp_path / "s.json"
    js.write_text(json.dumps([5.0 * (2 if i >= 25 else 1) * rng.gauss(1, 0.01) for i in range(50)]))
    doc = json.loads(CliRunner().invoke(cli, ["changes", "--series", str(js), "--format", "json"]).output)
    assert [c["index"] for c in doc["changes"]] == [25]


@pytest.mark.parametrize("content, where", [
    ("t,v\n1,2\n2,abc\n3,4\n", "row 3, column 'v'"),
    ("t,v\n1,2\n2\n", "row 3"),
    ("[1, 2, \"x\"]", "item 2"),
    ("{not json", "line 1, column 2"),
    ("t,v\n1,\n2,\n", "fewer than 2 numbers"),
])
def test_bad_series_files_give_one_error_line(tmp_path, content, where):
    f = tmp_path / "bad.csv"
    f.write_text(content)
    r = CliRunner().invoke(cli, ["changes", "--series", str(f)])
    assert r.exit_code != 0 and r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert r.output.startswith("Error: ") and where in r.output and str(f) in r.output, r.output
    assert "Traceback" not in r.output


def test_a_first_column_of_labels_is_the_index(tmp_path):
    rng = random.Random(5)
    f = tmp_path / "commits.csv"
    f.write_text("sha,tokens_per_s\n" + "".join(f"c{i:03d},{100 * (0.9 if i >= 30 else 1) * rng.gauss(1, 0.01):.3f}\n"
                                                  for i in range(60)))
    doc = json.loads(CliRunner().invoke(cli, ["changes", "--series", str(f), "--format", "json"]).output)
    assert [s["name"] for s in doc["series"]] == ["tokens_per_s"]
    assert [(c["index"], c["at"]) for c in doc["changes"]] == [(30, "c030")]
