"""warehouse copy: a local SQLite warehouse into another (PostgreSQL in CI), lossless and idempotent."""
from __future__ import annotations

import json

from click.testing import CliRunner

from corpus import cases
from warehouse.cli import cli


def test_copy_lossless_idempotent(tmp_path, db_url):
    local = str(tmp_path / "local.db")
    run = CliRunner()

    def inv(db, *a):
        return run.invoke(cli, ["--db", db, *map(str, a)], catch_exceptions=False)
    for name in ("dlv3_same", "clip_replays3", "ttperfreport__bh20_oft_integral_image_trace"):
        assert inv(local, "ingest", cases()[name], "--label", "L", "--tag", f"case={name}").exit_code == 0
    odd = tmp_path / "ops_perf_results_odd.csv"
    odd.write_bytes(b"OP CODE,OP TYPE,DEVICE KERNEL DURATION [ns]\nMatmul,tt_dnn_device\r\nConv2d,tt_dnn_device,5")
    assert inv(local, "ingest", odd).exit_code == 0
    r = run.invoke(cli, ["copy", "--from", local, "--to", db_url])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[-1] == "4 copied, 0 already there"
    r = run.invoke(cli, ["copy", "--from", local, "--to", db_url])
    assert r.output.splitlines()[-1] == "0 copied, 4 already there"
    src = json.loads(inv(local, "runs", "--json", "--warnings").output)
    dst = json.loads(inv(db_url, "runs", "--json", "--warnings").output)
    for a, b in zip(src, dst):
        assert {k: v for k, v in a.items() if k != "id"} == {k: v for k, v in b.items() if k != "id"}
        assert inv(local, "export", a["id"]).stdout_bytes == inv(db_url, "export", b["id"]).stdout_bytes
        inv(local, "report", a["id"], "--json", tmp_path / "a.json", "-q")
        inv(db_url, "report", b["id"], "--json", tmp_path / "b.json", "-q")
        assert json.loads((tmp_path / "a.json").read_text()) == json.loads((tmp_path / "b.json").read_text())
    assert any(d["warnings"] for d in dst)  # the odd file's short row warning travelled too


def test_copy_selected_runs(tmp_path, db_url):
    local = str(tmp_path / "local.db")
    run = CliRunner()
    for name in ("dlv3_same", "segenc_notrace"):
        run.invoke(cli, ["--db", local, "ingest", str(cases()[name])])
    r = run.invoke(cli, ["copy", "--from", local, "--to", db_url, "2"])
    assert r.exit_code == 0 and r.output.splitlines()[-1] == "1 copied, 0 already there"
    r = run.invoke(cli, ["copy", "--from", local, "--to", db_url, "9"])
    assert r.exit_code == 2 and r.output.startswith("Error: no run 9")
    r = run.invoke(cli, ["copy", "--from", str(tmp_path / "none.db"), "--to", db_url])
    assert r.exit_code == 2 and "no warehouse" in r.output
