"""The public Python API, and the documentation's notebook example run as it stands."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_readme_python_example_runs(tmp_path, capsys):
    page = (ROOT / "docs" / "python-api.md").read_text()
    code = re.search(r"# Python API.*?```python\n(.*?)```", page, re.S).group(1)
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out.splitlines()
    cases = len(list((ROOT / "tests" / "data" / "seedfmt").iterdir()))
    assert out[0] == str(list(range(1, cases + 1))) and float(out[1]) > 0 and out[3].endswith("regression(s)")
    assert (tmp_path / "notebook.db").exists()


def test_api_reads_never_create_and_errors_are_library_errors(tmp_path):
    from warehouse import Warehouse
    from warehouse.errors import NotFound, UsageError
    wh = Warehouse(str(tmp_path / "none.db"))
    with pytest.raises(UsageError, match="no warehouse at"):
        wh.runs()
    assert not (tmp_path / "none.db").exists()
    wh2 = Warehouse(str(tmp_path / "w.db"))
    res = wh2.ingest([str(tmp_path / "missing.csv")])
    assert res[0].error.endswith("no such file")
    with pytest.raises(NotFound):
        wh2.report(7)
