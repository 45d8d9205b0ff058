"""`warehouse compare A B --by op`: a capture against itself with ops removed from one layer and inserted into another
(a known graph edit): every insert and removal named at its place, the matched ops unchanged, on both back ends."""
from __future__ import annotations

import csv
import json

import pytest

from conftest import BACKENDS, _new_url, make_invoke
from corpus import cases
from test_metrics_history import _members


@pytest.fixture(scope="module", params=BACKENDS)
def edited(request, tmp_path_factory):
    """Run 1: dlv3; run 2: the same with the first two eager ops of one layer removed and a copy of another
    layer's first eager op inserted after it. Returns (invoke, the removed ops, the inserted op)."""
    folder = tmp_path_factory.mktemp("opdiff")
    gen = _new_url(request.param, folder)
    wh = make_invoke(next(gen))
    src = cases()["dlv3_same"]
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    cols = list(rows[0])
    members = _members(rows)
    eager = [(i, m) for i, m in enumerate(members) if m is not None and m[0] == "eager" and m[2]]
    layers = list(dict.fromkeys(m[2] for _, m in eager))
    gone_layer, grown_layer = layers[3], layers[7]
    gone = [i for i, m in eager if m[2] == gone_layer][:2]
    grown = next(i for i, m in eager if m[2] == grown_layer)
    out = []
    for i, r in enumerate(rows):
        if i in gone:
            continue
        out.append(r)
        if i == grown:
            out.append(dict(r))
    edit = folder / "ops_perf_results_2026_11_02_02_00_00.csv"
    with open(edit, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(out)
    assert wh("ingest", src).exit_code == 0
    assert wh("ingest", edit).exit_code == 0
    eager_pos = {i: k for k, (i, _) in enumerate(eager)}
    removed = [(eager_pos[i], rows[i]["OP CODE"], gone_layer) for i in gone]
    inserted = (eager_pos[grown] + 1 - len([g for g in gone if g < grown]), rows[grown]["OP CODE"], grown_layer)
    yield wh, removed, inserted
    for _ in gen:
        pass


def test_every_insert_and_removal_is_named_at_its_place(edited):
    wh, removed, inserted = edited
    r = wh("compare", "1", "2", "--by", "op", "--section", "eager", "--format", "json", "--top", "0")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    (sec,) = doc["sections"]
    assert sec["section"] == "eager"
    got_removed = [(o["pos"], o["op_code"], o["layer"]) for o in sec["removed_ops"]]
    got_inserted = [(o["pos"], o["op_code"], o["layer"]) for o in sec["inserted_ops"]]
    # (positions count the section's ops with a duration, of each run)
    assert [(c, ly) for _, c, ly in got_removed] == [(c, ly) for _, c, ly in removed]
    assert [(c, ly) for _, c, ly in got_inserted] == [inserted[1:]]
    # the matched ops are the same ops: no delta; the totals keep the edit apart
    assert sec["totals_us"]["matched_delta"] == 0 and sec["matched"] > 300
    assert sec["totals_us"]["removed"] > 0 and sec["totals_us"]["inserted"] > 0
    assert sec["totals_us"]["net"] == pytest.approx(sec["totals_us"]["inserted"] - sec["totals_us"]["removed"],
                                                    abs=1e-3)
    for o in sec["inserted_ops"] + sec["removed_ops"]:
        assert o["after"] is None or o["after"]["pos"] < o["pos"] + 3


def test_text_and_markdown_name_them(edited):
    wh, removed, inserted = edited
    text = wh("compare", "1", "2", "--by", "op", "--section", "eager").output
    assert "+ #" in text and inserted[1] in text and "- #" in text and removed[0][1] in text
    md = wh("compare", "1", "2", "--by", "op", "--format", "md").output
    assert "| eager (0) |" in md and "| inserted |" in md and "| removed |" in md
    r = wh("compare", "1", "2", "--by", "op", "--section", "nosuch")
    assert r.exit_code == 2 and r.output.startswith("Error: ")
