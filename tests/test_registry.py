"""One registry of groupings and metrics: a grouping added as one entry shows up in the rollups, the series views,
the CLI's choices, compare, trend and regressions, with nothing else changed."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from corpus import cases

# Runs in a fresh interpreter: the entry is added before the rest of the package reads the registry.
SCRIPT = """
import json, sys
from warehouse.registry import measures
measures.GROUPINGS.append(measures.Grouping("fidelity-class", "fidelity class",
    "CASE WHEN op_code LIKE '%Matmul%' OR op_code LIKE '%Conv%' THEN 'compute' ELSE 'other' END",
    "compute op codes apart from the rest"))
from click.testing import CliRunner
from warehouse.cli import cli
db, files = sys.argv[1], sys.argv[2:]
run = CliRunner()
out = {}
def inv(*a):
    r = run.invoke(cli, ["--db", db, *a])
    return {"exit": r.exit_code, "out": r.stdout, "err": r.stderr}
for f in files:
    out.setdefault("ingest", []).append(inv("ingest", f, "--label", "x"))
out["compare"] = inv("compare", "1", "2", "--by", "fidelity-class", "--format", "json")
out["trend"] = inv("trend", "--by", "fidelity-class", "--format", "json")
out["regressions"] = inv("regressions", "--label", "x", "--by", "fidelity-class", "--format", "json")
out["sql"] = inv("sql", "SELECT key, kernel_us FROM series_fidelity_class WHERE run_id = 1 AND section = 'trace' "
                 "ORDER BY key", "--format", "json")
out["help"] = inv("regressions", "--help")
print(json.dumps(out))
"""


def test_new_grouping_is_one_entry(tmp_path):
    from warehouse.capture.synthetic import nightly_series
    (tmp_path / "n").mkdir()
    files = list(nightly_series(cases()["dlv3_same"], tmp_path / "n", 9, noise=0.01,
                                slow={8: ("Conv2d", 1.5)}, seed=5))
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "w.db"), *map(str, files)],
                       capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert all(r["exit"] == 0 for r in out["ingest"]), out["ingest"]
    assert out["compare"]["exit"] == 0, out["compare"]
    assert {r["key"] for r in json.loads(out["compare"]["out"])["rows"]} == {"compute", "other"}
    assert out["trend"]["exit"] == 0 and set(json.loads(out["trend"]["out"])["keys"]) == {"compute", "other"}
    reg = json.loads(out["regressions"]["out"])
    assert out["regressions"]["exit"] == 3 and any(
        f["by"] == "fidelity-class" and f["key"] == "compute" for f in reg["regressions"])
    rows = json.loads(out["sql"]["out"])
    assert [r["key"] for r in rows] == ["compute", "other"]
    assert "fidelity-class" in out["help"]["out"]
