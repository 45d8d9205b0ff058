"""The dashboard's history pages read true: a slower outlier night is shaded as worse, suspicious moves are counted
apart from improvements, and the trend chart's axis fits the values (a 30 % step is not flattened against zero)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import make_invoke

HERE = Path(__file__).resolve().parent
OFT = HERE / "data/seedfmt/oft_mismatch/ops_perf_results_2026_11_02_02_00_00.csv"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from warehouse.web.app import create_app
    folder = tmp_path_factory.mktemp("charts")
    subprocess.run([sys.executable, str(HERE / "mkseries.py"), str(OFT), str(folder / "n"), "--runs", "9", "--seed",
                    "21", "--slow-block", "stage2.block1"], check=True, capture_output=True)
    db = str(folder / "w.db")
    assert make_invoke(db)("ingest", folder / "n", "--label", "oft").exit_code == 0
    return TestClient(create_app(db), base_url="http://127.0.0.1")


def test_a_slower_outlier_is_shaded_worse(client):
    page = client.get("/changes?label=oft").text
    rows = re.findall(r'<tr class="cause ([a-z]+)" id="o-[0-9a-f]+">', page)
    assert rows and rows[0] == "worse", rows


def test_the_verdict_counts_suspicious_moves_apart(client):
    page = client.get("/regressions?label=oft").text
    verdict = re.search(r'<p class="verdict" id="verdict">(.*?)</p>', page, re.S).group(1)
    assert re.match(r"1 regression\(s\), 0 improvement\(s\), \d+ suspicious move\(s\)", verdict), verdict


def test_the_trend_axis_fits_the_values(client):
    page = client.get("/trend?label=oft&by=block&key=stage2.block1&last=0").text
    labels = [float(v.replace(",", "")) for v in re.findall(r'text-anchor="end" class="axis">([0-9,.]+)</text>', page)]
    assert labels and min(labels) > 0.5 * max(labels), labels  # (not from zero: the step fills the chart)
