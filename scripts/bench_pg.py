#!/usr/bin/env python3
"""Benchmark of ingest on PostgreSQL, against `psql \\copy` of the same CSV measured in the same run.

    python scripts/bench_pg.py --pg-url postgresql+psycopg://USER@HOST:PORT/DB [--ops 100000] [--repeat 3]
                               [--only dlv3|oft] [--out bench-out/pg]

On the bench's realistic 100,000-op captures (scripts/bench.py's `realistic_csv`: every row distinct), for each
template:
- P1. `warehouse ingest` wall / `psql \\copy` of the file into a table of text columns, wall            (<= 2)
- P1c. the same with CPU: the client's process tree and the server's (its postmaster's own and reaped backends'
  CPU, read from /proc: the server must run on this machine, else the line says it cannot be measured)
- P2. database growth of the first night / the CSV's size                                           (<= 0.15)
- P2b. the same model's next night (its static cells, places and rollup keys stored already)
A database is made for each repeat (CREATE DATABASE on the server of ``--pg-url``) and dropped after; the best
of ``--repeat`` runs is kept. No network beyond that server.
"""
from __future__ import annotations

import argparse
import csv
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import BENCH_SOURCES, ROOT, WAREHOUSE, line, measured, realistic_csv  # noqa: E402

CLK_TCK = 100  # (Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these)


def _stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the process's name (state, ppid, ...)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _postmaster_cpu(url: URL) -> Callable[[], float] | None:
    """A function giving the CPU seconds the server has used so far (the postmaster and every backend it reaped,
    as /proc/<postmaster>/stat counts them), or None when the server's processes cannot be read here."""
    eng = create_engine(url)
    with eng.connect() as c:
        backend = int(c.execute(text("SELECT pg_backend_pid()")).scalar_one())
        try:
            parent = int(_stat(backend)[1])
        except (OSError, ValueError, IndexError):
            return None
    eng.dispose()

    def cpu() -> float:
        own = _stat(parent)
        total = sum(int(f) for f in own[11:15])  # utime, stime, cutime, cstime (the backends it reaped)
        for entry in Path("/proc").iterdir():  # (and the backends alive now: a backend ends after its client)
            if entry.name.isdigit():
                try:
                    fields = _stat(int(entry.name))
                except (OSError, IndexError):
                    continue
                if int(fields[1]) == parent:
                    total += int(fields[11]) + int(fields[12])
        return total / CLK_TCK
    try:
        cpu()
    except OSError:
        return None
    return cpu


@contextmanager
def scratch_database(url: URL) -> Iterator[URL]:
    """A new, empty database on ``url``'s server, dropped after."""
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    name = f"wh_bench_{uuid.uuid4().hex[:10]}"
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield url.set(database=name)
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def database_size(url: URL) -> int:
    eng = create_engine(url)
    with eng.connect() as c:
        size = int(c.execute(text("SELECT pg_database_size(current_database())")).scalar() or 0)
    eng.dispose()
    return size


def _libpq(url: URL) -> str:
    """``url`` as psql takes it (no SQLAlchemy driver name)."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def _sql(url: URL) -> str:
    return url.render_as_string(hide_password=False)


def _run(cmd: list[str], server: Callable[[], float] | None) -> tuple[float, float, float | None]:
    """Wall seconds, the client tree's CPU seconds and the server's CPU seconds (None: not measurable) of ``cmd``."""
    before = _settled(server) if server else None
    wall, cpu, _ = measured(cmd)
    return wall, cpu, (_settled(server) - before) if server and before is not None else None


def _settled(server: Callable[[], float]) -> float:
    """The server's CPU once the backend of a client that just ended is reaped: read until two readings 0.1 s
    apart agree (at most 3 s). A backend ends after its client, and until the postmaster reaps it its CPU is in
    neither the postmaster's children's count nor, once it has exited, a live backend's: read at once, `\\copy`'s
    server CPU read 0.04 s."""
    last = server()
    for _ in range(30):
        time.sleep(0.1)
        now = server()
        if now == last:
            return now
        last = now
    return last


def ingest_runs(url: URL, nights: list[Path], server: Callable[[], float] | None
                ) -> tuple[tuple[float, float, float | None], list[int]]:
    """The first night's ingest (wall, client CPU, server CPU) into a new warehouse, and each night's growth."""
    with scratch_database(url) as db:
        measured(WAREHOUSE + ["--db", _sql(db), "db", "upgrade"])
        sizes = [database_size(db)]
        first = None
        for night in nights:
            got = _run(WAREHOUSE + ["--db", _sql(db), "ingest", str(night)], server)
            first = first or got
            sizes.append(database_size(db))
    assert first is not None
    return first, [b - a for a, b in zip(sizes, sizes[1:])]


def copy_reference(url: URL, csv_path: Path, psql: str, server: Callable[[], float] | None
                   ) -> tuple[float, float, float | None]:
    """`psql \\copy` of ``csv_path`` into a new table of text columns (one per CSV column), as a process."""
    with open(csv_path, newline="") as f:
        header = next(csv.reader(f))
    columns = ", ".join(f'"c{i}" text' for i in range(len(header)))  # (names as given may repeat)
    with scratch_database(url) as db:
        eng = create_engine(db)
        with eng.begin() as c:
            c.execute(text(f"CREATE TABLE capture ({columns})"))
        eng.dispose()
        return _run([psql, "-q", _libpq(db), "-c", f"\\copy capture FROM '{csv_path}' WITH (FORMAT csv, HEADER true)"],
                    server)


def _least(runs: list[tuple[float, float, float | None]]) -> tuple[float, float, float | None]:
    servers = [r[2] for r in runs if r[2] is not None]
    return min(r[0] for r in runs), min(r[1] for r in runs), min(servers) if servers else None


def figures(url: URL, tag: str, nights: list[Path], repeat: int, psql: str) -> list[dict]:
    """Lines P1, P1c, P2 and P2b for one template's two nights."""
    server = _postmaster_cpu(url)
    ingests: list[tuple[float, float, float | None]] = []
    copies: list[tuple[float, float, float | None]] = []
    growth: list[int] = []
    for _ in range(repeat):  # (interleaved: a disturbance of the machine touches both sides alike)
        got, growth = ingest_runs(url, nights, server)
        ingests.append(got)
        copies.append(copy_reference(url, nights[0], psql, server))
    (wi, ci, si), (wc, cc, sc) = _least(ingests), _least(copies)
    size = nights[0].stat().st_size
    out = [line(f"P1. PostgreSQL ingest / psql \\copy, wall ({tag})", f"{wi / wc:.2f} ({wi:.2f}/{wc:.2f}s)",
                "<= 2", wi / wc <= 2)]
    if si is not None and sc is not None:
        out.append(line(f"P1c. the same, CPU of client and server ({tag})",
                        f"{(ci + si) / (cc + sc):.2f} ({ci:.2f}+{si:.2f}/{cc:.2f}+{sc:.2f}s)", "", None))
    else:
        out.append(line(f"P1c. the same, CPU (server's processes not readable here) ({tag})",
                        f"client {ci:.2f}/{cc:.2f}s", "", None))
    out.append(line(f"P2. PostgreSQL growth, first night / CSV size ({tag})", f"{growth[0] / size:.3f}", "<= 0.15",
                    growth[0] / size <= 0.15))
    if len(growth) > 1:
        out.append(line(f"P2b. the next night of the same model / CSV size ({tag})",
                        f"{growth[1] / nights[1].stat().st_size:.3f}", "", None))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg-url", required=True, help="a PostgreSQL server (a database is made on it per repeat)")
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=sorted(BENCH_SOURCES))
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "pg"))
    a = ap.parse_args()
    psql = shutil.which("psql") or next((str(p) for p in sorted(Path("/usr/lib/postgresql").glob("*/bin/psql"))), None)
    if psql is None:
        print("Error: psql not found (the reference, `psql \\copy`): install PostgreSQL's client", file=sys.stderr)
        return 2
    url = make_url(a.pg_url)
    out = Path(a.out)
    for tag, real in BENCH_SOURCES.items():
        if a.only and tag != a.only:
            continue
        folder = out / tag
        nights = [realistic_csv(real, folder / "night1", a.ops),  # (the nights of scripts/bench.py's figure 2)
                  realistic_csv(real, folder / "night2", a.ops, seed=2, layout_seed=1,
                                name="ops_perf_results_2026_01_02_02_00_00.csv")]
        figures(url, tag, nights, a.repeat, psql)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
