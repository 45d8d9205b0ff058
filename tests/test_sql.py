"""warehouse sql (read-only, formats) and warehouse schema."""
from __future__ import annotations

import json

from corpus import cases


def test_sql_formats(wh):
    assert wh("ingest", cases()["dlv3_same"]).exit_code == 0
    sql = "SELECT section, ops, ROUND(CAST(kernel_sum_us AS NUMERIC), 1) AS k FROM section_summary ORDER BY section"
    r = wh("sql", sql)
    assert r.exit_code == 0
    assert r.output.splitlines()[0].split() == ["section", "ops", "k"]
    r = wh("sql", sql, "--format", "csv")
    assert r.output.splitlines()[0] == "section,ops,k"
    assert r.output.splitlines()[1].startswith("eager,387,")
    data = json.loads(wh("sql", sql, "--format", "json").output)
    assert [d["section"] for d in data] == ["eager", "trace"] and data[0]["ops"] == 387
    r = wh("sql", "--format", "md", input="SELECT COUNT(*) AS n FROM op")
    assert r.output.splitlines() == ["| n |", "|---|", "| 774 |"]


def test_sql_is_read_only(wh, db_url):
    assert wh("ingest", cases()["dlv3_same"]).exit_code == 0
    for stmt in ("DELETE FROM op", "UPDATE run SET label = 'x'", "DROP TABLE op", "CREATE TABLE t (a int)",
                 "INSERT INTO run_tag (run_id, key, value) VALUES (1, 'a', 'b')"):
        r = wh("sql", stmt)
        assert r.exit_code == 2, stmt
        assert r.output.startswith("Error: ") and "read-only" in r.output, r.output
    assert wh("sql", "SELECT COUNT(*) FROM op", "--format", "csv").output.splitlines()[1] == "774"
    r = wh("sql", "SELEC nonsense")
    assert r.exit_code == 2 and r.output.startswith("Error: SQL error")


def test_schema_lists_tables_and_views(wh):
    r = wh("schema")  # reads only: no warehouse is created
    assert r.exit_code == 2 and r.output.startswith("Error: no warehouse at"), r.output
    assert wh("db", "upgrade").exit_code == 0
    r = wh("schema")
    assert r.exit_code == 0
    for name in ("table run", "table op", "table signpost", "table section", "view section_summary",
                 "view by_layer", "view layer_cost_split"):
        assert name in r.output
    data = json.loads(wh("schema", "--json").output)
    op = next(o for o in data if o["name"] == "op")
    assert {"kernel_ns", "place_id", "hist_place_id", "occurrence"} <= {c["name"] for c in op["columns"]}
