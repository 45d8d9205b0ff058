"""Ingest's two halves (warehouse/capture/rowprep.py): a file read in a worker process stores exactly what the same file
read in-process stores (every table through natural keys, warnings and errors included), the token table can
restart mid-file, and a worker that dies or is left behind never leaves a process or half a run."""
from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest
from sqlalchemy import text

from conftest import make_invoke
from test_parallel import FILES, _dump
from warehouse.capture import plan as budgets
from warehouse.capture import prepared, rowprep
from warehouse.store.db import open_db
from warehouse.errors import InputError, WarehouseError
from warehouse.runs.ingest import ingest_file

HEAD = "OP CODE,OP TYPE,ATTRIBUTES,DEVICE KERNEL DURATION [ns],OP TO OP LATENCY [ns],CORE COUNT,HOST START TS"


def _odd_files(d: Path) -> None:
    """Files that take the reader's rarer paths: quotes, short rows, blank lines, cells that are not numbers."""
    (d / "ops_perf_results_quoted.csv").write_text(
        HEAD + "\r\n" + "\r\n".join(f'Matmul,tt_dnn_device,"{{\'a\': {i}, \'b\': 2}}",{i},5,64,{i}' for i in range(30))
        + "\r\n", newline="")
    (d / "ops_perf_results_short.csv").write_text(
        HEAD + "\n" + "Matmul,tt_dnn_device,x,7\n\n" + "eager,signpost,,,,,9\n" + "Add,tt_dnn_device,,nan,oops,64,1\n"
        + "eager_end,signpost,,,,,10\n", newline="")


def _folder(tmp: Path) -> Path:
    d = tmp / "nightly"
    d.mkdir()
    for i, src in enumerate(FILES):
        shutil.copyfile(src, d / f"ops_perf_results_{i}.csv")
    _odd_files(d)
    (d / "ops_perf_results_x_bad.csv").write_bytes(HEAD.encode() + b"\nAdd,tt_dnn_device,\xff,1,1,1,1\n")
    return d


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The same folder ingested with every file read by a worker, and with every file read in-process."""
    tmp = tmp_path_factory.mktemp("prep")
    folder = _folder(tmp)
    out = []
    real_init = rowprep.RowSource.__init__
    for mode, threshold in (("worker", 0), ("inline", 1 << 62)):
        (tmp / mode).mkdir()
        url = str(tmp / mode / "warehouse.db")
        used: list[bool] = []

        def init(self, *a, _used=used, **k):
            real_init(self, *a, **k)
            _used.append(self.worker)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(budgets, "WORKER_MIN_BYTES", threshold)
            mp.setattr(rowprep, "BATCH", 700)  # several batches, chunks across batch ends
            mp.setattr(rowprep.threading, "active_count", lambda: 1)  # (a thread left by another test)
            mp.setattr(rowprep.RowSource, "__init__", init)
            res = make_invoke(url)("ingest", folder, "--label", "nightly")
        assert used and set(used) == {mode == "worker"}  # every file read the way this ingest is meant to
        out.append((url, res))
    return out


def test_worker_stores_what_inline_stores(both):
    (w_url, w_res), (i_url, i_res) = both
    a, b = _dump(w_url), _dump(i_url)
    assert len(a["run"]) == len(FILES) + 2 and a["op"] and a["cells"] and a["warning"]
    for table in a:
        assert a[table] == b[table], table
    assert w_res.output.count("Error:") == 1
    strip = [x.split(" ops,")[0] for x in w_res.output.splitlines()]
    assert strip == [x.split(" ops,")[0] for x in i_res.output.splitlines()]
    assert "ops_perf_results_x_bad.csv: row 1" in w_res.output  # the row, raised where the worker met it


def test_token_table_restarts(tmp_path, monkeypatch):
    """A file with more distinct static tuples than the reader remembers: tokens restart, nothing changes."""
    src = FILES[0]
    stored = []
    for cap in (3, 1 << 30):
        monkeypatch.setattr(prepared, "MAX_TOKENS", cap)
        monkeypatch.setattr(rowprep, "BATCH", 200)
        url = str(tmp_path / f"w{cap}.db")
        eng = open_db(url)
        r = ingest_file(eng, src, worker=True)
        assert r.ops > 0
        eng.dispose()
        stored.append(_dump(url))
    assert stored[0] == stored[1]


_EARLIER: set[int] = set()  # children this process had before the test (another module's), by pid


@pytest.fixture(autouse=True)
def _earlier_children():
    """What the test finds must be its own: a child left by an earlier test of this process (a pool's resource
    tracker that has ended and is not waited for yet is a zombie with no command line) is not this test's."""
    import psutil
    _EARLIER.clear()
    _EARLIER.update(p.pid for p in psutil.Process().children(recursive=True))
    yield


def _children() -> list:
    """The children this process forked during the test (the reader's worker; one left over, even a zombie, is a
    leak): not multiprocessing's resource tracker, which another test's process pool may have started."""
    import psutil
    out = []
    for p in psutil.Process().children(recursive=True):
        if p.pid in _EARLIER:
            continue
        try:
            if "resource_tracker" in " ".join(p.cmdline()):
                continue
        except psutil.Error:  # (a zombie has no command line left: it is one of ours, not waited for)
            pass
        out.append(p)
    return out


def test_duplicate_stops_the_worker(tmp_path):
    eng = open_db(str(tmp_path / "w.db"))
    assert not ingest_file(eng, FILES[0], worker=True).existing
    assert ingest_file(eng, FILES[0], worker=True).existing
    assert not _children()
    eng.dispose()


def test_worker_killed_is_one_error_and_nothing_stored(tmp_path, monkeypatch):
    """A reader that dies (out of memory, killed) fails the file with a sentence, and rolls it back."""
    from warehouse.capture.synthetic import scale_csv
    big = tmp_path / "ops_perf_results_big.csv"
    # (dlv3, sectioned) 60 batches: far more than the pipe holds, so the reader cannot be done
    assert scale_csv(FILES[-2], big, 6000) > 5000
    monkeypatch.setattr(rowprep, "BATCH", 100)
    eng = open_db(str(tmp_path / "w.db"))
    seen = []

    def progress(_n: int) -> None:
        if not seen:
            seen.append(1)
            for p in _children():
                os.kill(p.pid, signal.SIGKILL)
    with pytest.raises(WarehouseError, match="the process reading the file stopped unexpectedly"):
        ingest_file(eng, big, worker=True, progress=progress)
    with eng.connect() as c:
        assert c.execute(text("SELECT COUNT(*) FROM run")).scalar() == 0
        assert c.execute(text("SELECT COUNT(*) FROM op")).scalar() == 0
    assert not _children()
    assert not ingest_file(eng, big, worker=True).existing  # and the next try stores it
    eng.dispose()


@pytest.mark.parametrize("tail", [b"Add,\xfe\n", b"Add" + b",1" * 400 + b"\n"])
def test_worker_error_is_the_reader_error(tmp_path, tail):
    """A file that is not UTF-8 at some row, or a row longer than its header: the same InputError (file, row,
    column) from the worker as in-process."""
    f = tmp_path / "ops_perf_results_bad.csv"
    f.write_bytes(FILES[0].read_bytes() + tail)
    errors = []
    for worker in (True, False):
        eng = open_db(str(tmp_path / f"w{worker}.db"))
        with pytest.raises(InputError) as e:
            ingest_file(eng, f, worker=worker)
        errors.append((str(e.value), e.value.row, e.value.column))
        eng.dispose()
    assert errors[0] == errors[1] and errors[0][1] is not None


def test_typing_by_column_is_typing_by_cell():
    """The column-wise fast path types every cell as its column's parser does alone, and counts the same cells
    as not numbers (random rows, fixed seed)."""
    import random
    from warehouse.capture.csvfile import Layout
    header = ["OP CODE"] + [k.csv for k in prepared.TYPED]
    lay = Layout("x", header, "OP CODE", "\n", False, [0], list(range(1, len(header))),
                 {h: i for i, h in enumerate(header)})
    pool = ["", "12", "-3", "1.5", "nan", "inf", "x", " 7 ", "1e400", "99999999999", "12345678901234567890", "3.0",
            "2147483648", "1_000", "  "]
    rng = random.Random(3)
    for _ in range(300):
        cells = prepared.Cells(lay)
        rows = [["Add"] + [rng.choice(pool) if rng.random() < 0.3 else str(rng.randint(0, 9))
                           for _ in prepared.TYPED] + [""] for _ in range(rng.randint(1, 20))]
        got = cells.typed([cells.raw(r) for r in rows])
        want, bad = [], {}
        for r in rows:
            vals = []
            for k, cell in zip(prepared.TYPED, r[1:]):
                h, v = k.csv, prepared.PARSE[k.kind](cell)
                vals.append(None if v in (None, "") else v)
                if v is None and cell.strip():
                    bad[h] = bad.get(h, 0) + 1
            want.append(tuple(vals))
        assert got == want and cells.unparsable == bad, rows


def test_no_worker_from_a_threaded_process(tmp_path, monkeypatch):
    """A process that runs threads (a web app calling the API) reads in-process: forking it could deadlock."""
    monkeypatch.setattr(budgets, "WORKER_MIN_BYTES", 0)
    monkeypatch.setattr(rowprep.threading, "active_count", lambda: 2)
    with rowprep.RowSource(FILES[0]) as src:
        assert not src.worker
    monkeypatch.setattr(rowprep.threading, "active_count", lambda: 1)
    with rowprep.RowSource(FILES[0]) as src:
        assert src.worker


def test_a_reader_failure_that_does_not_pickle_is_one_line(tmp_path, monkeypatch):
    """An unexpected exception in the worker that cannot cross the pipe still reaches the caller, as one line
    naming the file and where it happened; nothing is stored."""
    class Odd(Exception):  # (a local class: pickle cannot send it)
        pass

    def boom(self):
        raise Odd("boom")
    monkeypatch.setattr(prepared.Preparer, "finish", boom)
    eng = open_db(str(tmp_path / "w.db"))
    with pytest.raises(WarehouseError, match=r"reading failed \(Odd\('boom'\) at test_rowprep.py:\d+\)$"):
        ingest_file(eng, FILES[0], worker=True)
    with eng.connect() as c:
        assert c.execute(text("SELECT COUNT(*) FROM run")).scalar() == 0
    eng.dispose()


def test_worker_parse_is_checked_against_the_consumers_hash(tmp_path, monkeypatch):
    """With a worker, a file is hashed as it is parsed (the worker's scan leaves the hash out), and that is the
    run's hash. The consumer hashes the file first only when a stored run has its size: then its content may be
    stored already, found without reading a row. The bytes the worker parsed must then be the bytes the consumer
    hashed: a file that differs between the two passes (here: the consumer's hash is not that of the bytes
    parsed, as when the file was rewritten in place at the same size and time) is refused, and nothing is
    stored."""
    import hashlib

    real = rowprep.hash_file
    hashed: list[str] = []

    def counted(f, path):
        hashed.append(real(f, path))
        return hashed[-1]
    monkeypatch.setattr(rowprep, "hash_file", counted)
    data = FILES[0].read_bytes()
    at = data.rindex(b"1")  # (a digit of the last rows: a file of the same size, another content)
    assert at > data.index(b"\n")
    twin = tmp_path / "ops_perf_results_twin.csv"
    twin.write_bytes(data[:at] + b"2" + data[at + 1:])
    eng = open_db(str(tmp_path / "w.db"))
    first = ingest_file(eng, twin, worker=True)
    assert hashed == []  # (no stored run of its size: hashed as parsed, in the worker)
    with eng.connect() as c:
        assert c.execute(text("SELECT sha256 FROM run WHERE id = :r"), {"r": first.run_id}).scalar() == \
            hashlib.sha256(twin.read_bytes()).hexdigest()

    monkeypatch.setattr(rowprep, "hash_file", lambda f, path: "0" * 64)
    with pytest.raises(InputError, match="changed while it was being read"):
        ingest_file(eng, FILES[0], worker=True)
    with eng.connect() as c:
        assert c.execute(text("SELECT COUNT(*) FROM run")).scalar() == 1
    monkeypatch.setattr(rowprep, "hash_file", counted)
    r = ingest_file(eng, FILES[0], worker=True)
    assert not r.existing and r.ops > 0 and len(hashed) == 1  # (its size is stored: hashed first, here)
    with eng.connect() as c:  # the run's hash is the file's
        assert c.execute(text("SELECT sha256 FROM run WHERE id = :r"), {"r": r.run_id}).scalar() == \
            hashlib.sha256(data).hexdigest()
    again = ingest_file(eng, FILES[0], worker=True)
    assert again.existing and again.run_id == r.run_id and len(hashed) == 2
    eng.dispose()


def test_a_sender_that_fails_ends_the_worker(tmp_path, monkeypatch):
    """The worker sends from a thread of its own: if sending fails for a reason other than the consumer going,
    the worker ends (its reading thread may be blocked on a full queue and must not be left there), and the
    consumer says so on one line; nothing is stored."""
    class Broken:
        def write(self, buf):
            raise ValueError("a failure of the pipe's own")

        def flush(self):
            pass
    real = rowprep._Sender.__init__

    def init(self, out):
        real(self, out)
        self.out = Broken()  # (before any item is queued: the sending thread writes only what is queued)
    # (the fork carries the patch into the worker; the consumer only receives)
    monkeypatch.setattr(rowprep._Sender, "__init__", init)
    eng = open_db(str(tmp_path / "w.db"))
    with pytest.raises(WarehouseError, match=r"the process reading the file stopped unexpectedly \(exit code 1\)"):
        ingest_file(eng, FILES[0], worker=True)
    with eng.connect() as c:
        assert c.execute(text("SELECT COUNT(*) FROM run")).scalar() == 0
    assert not _children()
    eng.dispose()


def test_read_ahead_is_taken_over_by_the_ingest(tmp_path, monkeypatch):
    """The API forks the first file's reader before it opens the warehouse; the ingest takes that reader over
    (same run, byte-identical export) and none is left running, also when the ingest never happens or the reader
    packs chunks for the other back end."""
    import io

    from warehouse.api import Warehouse
    from warehouse.runs import ingest as ing

    monkeypatch.setattr(budgets, "WORKER_MIN_BYTES", 0)
    started: list[rowprep.RowSource | None] = []
    forked: list[bool] = []
    used: list[rowprep.RowSource] = []
    real_ahead, real_once = rowprep.read_ahead, ing._ingest_once

    def ahead(path, compress):
        started.append(real_ahead(path, compress))
        forked.append(started[-1] is not None and started[-1].worker)
        return started[-1]

    def once(engine, req, source, scan):
        used.append(source)
        return real_once(engine, req, source, scan)
    monkeypatch.setattr(rowprep, "read_ahead", ahead)
    monkeypatch.setattr(ing, "_ingest_once", once)
    wh = Warehouse(str(tmp_path / "w.db"))
    (out,) = wh.ingest(FILES[0])
    assert out.error is None and forked == [True] and used == started
    assert started[0] is not None and started[0]._proc is None  # (its worker is done and stopped)
    buf = io.BytesIO()
    wh.export(out.run_id, buf)
    assert buf.getvalue() == FILES[0].read_bytes()

    # a reader for the other back end is not used (and is stopped); one never used is stopped by its owner
    wrong = real_ahead(FILES[1], compress=False)
    assert wrong is not None
    ing.ingest_file(wh.engine, FILES[1], worker=wrong)
    assert used[-1] is not wrong and wrong._proc is None
    unused = real_ahead(FILES[1], compress=True)
    assert unused is not None and unused._proc is not None
    unused.close()
    assert unused._proc is None and not _children()

    # a file that cannot be read is left to the ingest, which names its problem
    assert real_ahead(tmp_path / "missing.csv", compress=True) is None
