"""History outputs do not move unless meant to: `changes`, `regressions`, `trend` and `compare` on two built
histories print the JSON in tests/golden/history/ (scripts/regen_history_golden.py rewrites it after a deliberate
change)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from history_cases import COMMANDS, build, outputs

pytestmark = pytest.mark.slow  # (the slow tier: long built histories against golden outputs)

GOLDEN = Path(__file__).parent / "golden" / "history"


@pytest.fixture(scope="module")
def got(tmp_path_factory):
    return outputs(build(tmp_path_factory.mktemp("golden-history")))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_history_output_is_the_golden_one(got, name):
    want = json.loads((GOLDEN / f"{name}.json").read_text())
    assert json.loads(json.dumps(got[name], sort_keys=True)) == want
