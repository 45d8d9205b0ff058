"""User SQL cannot make the warehouse allocate without bound: a deflate bomb built inside the query, and every
function on SQLite's allow-list given its worst input, run in a process whose peak memory is measured."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zlib

import pytest

from corpus import cases
from warehouse.store.sqlguard import SQLITE_FUNCTIONS


def _bomb_sql(declared: int) -> str:
    """A 2 KB statement whose deflate stream inflates to 1 GB: 1,000 copies of a sync-flushed block of 1 MB of
    zeros, repeated by replace() inside the query."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = comp.compress(b"\0" * (1 << 20)) + comp.flush(zlib.Z_SYNC_FLUSH)
    assert b"\0" not in block or True  # (a NUL inside is fine: the CAST keeps the bytes)
    return (f"SELECT length(sqlar_uncompress(CAST(x'78da' || replace(hex(zeroblob(1000)), '00', "
            f"CAST(x'{block.hex()}' AS TEXT)) AS BLOB), {declared})) AS n")


_RUN = textwrap.dedent("""
    import json, resource, sys
    from warehouse import Warehouse
    from warehouse.errors import WarehouseError
    wh = Warehouse(sys.argv[1])
    out = []
    for stmt in json.loads(sys.stdin.read()):
        try:
            with wh.sql(stmt, timeout_s=5) as res:
                rows = list(res.rows)
            out.append(["ok", repr(rows)[:200]])
        except WarehouseError as e:
            out.append(["refused", str(e)[:300]])
    print(json.dumps({"results": out, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""")


def _run(db: str, statements: list[str]) -> dict:
    p = subprocess.run([sys.executable, "-c", _RUN, db], input=json.dumps(statements), capture_output=True,
                       text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    from warehouse import Warehouse
    path = str(tmp_path_factory.mktemp("bomb") / "w.db")
    Warehouse(path).ingest(cases()["ttperfreport__bh20_oft_integral_image_trace"])
    return path


def _baseline(db: str) -> float:
    return _run(db, ["SELECT 1"])["peak_mib"]


def test_a_deflate_bomb_is_refused_within_bounded_memory(db):
    base = _baseline(db)
    got = _run(db, [_bomb_sql(1_000_000_000), _bomb_sql(2000), _bomb_sql(1 << 20)])
    big, small, mib = got["results"]
    assert big[0] == "refused" and "sqlar_uncompress" in big[1], big
    # a small declared size inflates that much and no further (the stream goes on: refused, never 1 GB)
    assert small[0] == "refused" and "past the size" in small[1], small
    assert mib[0] == "refused", mib
    assert got["peak_mib"] - base < 64, (got["peak_mib"], base)  # it was 1,037 MiB


def test_sqlar_uncompress_still_reads_the_cells(db):
    got = _run(db, ["SELECT COUNT(*) FROM csv_cell"])
    assert got["results"][0][0] == "ok" and got["results"][0][1] != "[(0,)]", got


# Worst inputs by argument: a 1 MiB text, a huge count, the bomb's blob, and calls that grow a value row by row
_BIG_TEXT = "replace(hex(zeroblob(524288)), '0', 'x')"
_HUGE = "2000000000"


def _calls(fn: str) -> list[str]:
    """Statements that give ``fn`` its worst input: every arity up to 3 with the largest arguments, as a scalar,
    and over a million rows as an aggregate or window function."""
    if fn in ("->", "->>"):
        return [f"SELECT json_array({_BIG_TEXT}) {fn} '$[0]'"]
    args = [_BIG_TEXT, _HUGE, _BIG_TEXT]
    out = [f"SELECT {fn}()"]
    for k in range(1, 4):
        out.append(f"SELECT length({fn}({', '.join(args[:k])}))")
        out.append(f"SELECT length({fn}({', '.join([_HUGE] * k)}))")
    if fn in ("printf", "format"):  # widths and precisions that repeat a character
        out += [f"SELECT length({fn}('%.*c', {_HUGE}, 'x'))", f"SELECT length({fn}('%{_HUGE}d', 1))",
                f"SELECT length({fn}('%.{_HUGE}f', 1.0))", f"SELECT length({fn}('%*s', {_HUGE}, 'x'))"]
    # as an aggregate over many rows of a large value (group_concat, json_group_array, string_agg...)
    rows = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
    out.append(rows + f"SELECT length({fn}({_BIG_TEXT}, ',')) FROM n")
    out.append(rows + f"SELECT length({fn}({_BIG_TEXT})) FROM n")
    return out


def test_every_allowed_function_is_bounded(db):
    """Each function on the allow-list with its worst input: each call answers or is refused, and the process's
    peak memory stays within a few times the value limit (16 MiB), whatever the function."""
    statements = [s for fn in sorted(SQLITE_FUNCTIONS) for s in _calls(fn)]
    base = _baseline(db)
    got = _run(db, statements)
    assert len(got["results"]) == len(statements)
    assert got["peak_mib"] - base < 200, (got["peak_mib"], base)
    # not a vacuous run: the growing ones were refused at the limit, the small ones answered
    kinds = {r[0] for r in got["results"]}
    assert kinds == {"ok", "refused"}, kinds
    assert any("limit" in r[1] or "too big" in r[1] for r in got["results"] if r[0] == "refused")
