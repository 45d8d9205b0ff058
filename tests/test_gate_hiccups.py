"""The gate reads a move from its ops before it blocks: a hiccup in eager and another in the trace (a farm with many
hiccups has them on the same night a few times a month) is no regression, whichever channels it passed; the same op
x4 in both sections blocks once it holds a second night; a real change of every op of a code blocks at once."""
from __future__ import annotations

import shutil
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import BACKENDS, _new_url, make_invoke
from csvedit import read_rows, scale_times, write_rows

HERE = Path(__file__).parent
DLV3 = HERE / "data/seedfmt/dlv3_same/ops_perf_results_2026_11_01_02_00_00.csv"
CODE = "Pool2D"  # three ops of ~70 us in each section: one x4 moves the op code by ~+100 %


def _night(src: Path, dst: Path, code: str, scale: Callable[[str, int], float]) -> None:
    """``src`` written to ``dst`` with the durations of the ``code`` ops scaled by ``scale(section, occurrence)``."""
    rows = read_rows(src)
    section, seen = "", {"eager": 0, "trace": 0}
    for r in rows:
        if r["OP TYPE"] == "signpost":
            section = r["OP CODE"] if r["OP CODE"] in ("eager", "trace") else section
            continue
        if r["OP CODE"] == code and section in seen:
            scale_times(r, scale(section, seen[section]))
            seen[section] += 1
    write_rows(dst, rows)


SLICE = "SliceDeviceOperation"  # its first two ops (58 us each) are block stage0.block1's (335 us)
CASES: dict[str, tuple[str, list[Callable[[str, int], float]]]] = {
    # night 10: a hiccup in each section, at different ops of one block and op code (the block moves ~+50 % in
    # both, by the same op code, alike: every channel a block has agrees)
    "two_hiccups": (SLICE, [lambda s, i: 4.0 if (s, i) in (("eager", 0), ("trace", 1)) else 1.0]),
    # the same op x4 in both sections, one night, then two nights running
    "same_op_once": (CODE, [lambda s, i: 4.0 if i == 0 else 1.0]),
    "same_op_twice": (CODE, [lambda s, i: 4.0 if i == 0 else 1.0] * 2),
    # a real change: every op of the code 40 % slower
    "every_op": (CODE, [lambda s, i: 1.4]),
}


@pytest.fixture(scope="module", params=BACKENDS)
def gate(request, tmp_path_factory, generated):
    """Nine quiet nights (no hiccups), then each case's nights, one label each, in one warehouse."""
    folder = tmp_path_factory.mktemp("hiccups")
    gen = _new_url(request.param, folder)
    wh = make_invoke(next(gen))
    for seed, (name, (code, nights)) in enumerate(CASES.items(), 61):
        d = folder / name  # (each its own nights: a file already stored is not stored again)
        shutil.copytree(generated("mkhistory", DLV3, "--nights", "9", "--seed", str(seed), "--outliers", "0"), d)
        quiet = sorted(d.glob("ops_perf_results_*.csv"))
        for k, scale in enumerate(nights):  # (each from another quiet night: the same file twice is stored once)
            _night(quiet[-1 - k], d / f"ops_perf_results_2026_10_{10 + k:02d}_02_00_00.csv", code, scale)
        r = wh("ingest", d, "--label", name)
        assert r.exit_code == 0, r.output
    yield wh
    for _ in gen:
        pass


def _last(wh, label: str) -> tuple[int, list[dict]]:
    r = wh("regressions", "--label", label, "--last", "1", "--format", "json")
    return r.exit_code, [c for c in json.loads(r.stdout)["findings"] if c["kind"] != "suspicious"]


def _suspicious(wh, label: str, key: str = CODE) -> list[dict]:
    r = wh("regressions", "--label", label, "--last", "1", "--format", "json")
    return [f for f in json.loads(r.stdout)["suspicious"] if f["key"] == key]


def test_a_hiccup_in_each_section_at_different_ops_is_no_regression(gate):
    code, blocking = _last(gate, "two_hiccups")
    assert (code, blocking) == (0, [])
    # (it was red: eager and the trace both moved the block by ~+50 %, alike within a tenth, by one op code)
    assert _suspicious(gate, "two_hiccups", "stage0.block1"), "the move is still said"


def test_the_same_op_x4_in_both_sections_blocks_on_its_second_night(gate):
    code, blocking = _last(gate, "same_op_once")
    assert (code, blocking) == (0, [])
    assert _suspicious(gate, "same_op_once")
    code, blocking = _last(gate, "same_op_twice")
    assert code == 3
    assert _names(blocking[0], CODE), blocking


def test_every_op_of_a_code_slower_blocks_on_its_first_night(gate):
    code, blocking = _last(gate, "every_op")
    assert code == 3
    assert _names(blocking[0], CODE), blocking


def _names(cause: dict, code: str) -> bool:
    """Whether a cause is the op code's or holds it (a block whose one op moved nests its op code)."""
    return cause["key"] == code or any(_names(c, code) for c in cause.get("contributors", []))



def test_two_parts_corroborate_only_when_both_moved():
    """A key's parts (devices, pairs) corroborate its move when the typical one moved: of two, both (their plain
    median is their mean, which one hiccuped part moves by half)."""
    import numpy as np

    from warehouse.history.evidence import _typical
    from warehouse.history.judge import Judged

    def judged(rel: list[float]) -> Judged:
        a = np.array(rel)
        one = np.ones_like(a)
        return Judged(one, one, a, one, a, one, 0.01 * one, one, one)
    move = float(np.log1p(0.4))
    assert not _typical(judged([0.8, 0.0]), [0, 1], move)
    assert _typical(judged([0.4, 0.38]), [0, 1], move)
    assert not _typical(judged([0.8, 0.0, 0.01]), [0, 1, 2], move)
    assert _typical(judged([0.8, 0.3, 0.01]), [0, 1, 2], move)
    assert not _typical(judged([-0.4, -0.4]), [0, 1], move)


# ------------------------------------------------------------------------------ `changes`: a week of hiccups
BLOCK = "stage0.block1"  # 335 us in eager: eight ops of 3-71 us


def _block_night(src: Path, dst: Path, scale: Callable[[str, int], float]) -> None:
    """``src`` written to ``dst`` with the durations of block ``BLOCK``'s ops scaled by ``scale(section, i)`` (i:
    the op's place in the block)."""
    rows = read_rows(src)
    section, block, t = "", "", 0
    eager: list[tuple[str, int]] = []  # eager's ops in order: (block, place in the block)
    for r in rows:
        if r["OP TYPE"] == "signpost":
            name = r["OP CODE"]
            if name in ("eager", "trace"):
                section, block = name, ""
            elif name.startswith("m:"):
                block = name[2:]
            continue
        if section == "eager":
            eager.append((block, sum(1 for b, _ in eager if b == block)))
            mine, i = eager[-1]
        elif section == "trace":  # (the trace has no signposts: its ops are eager's, in eager's order)
            mine, i = eager[t % len(eager)]
            t += 1
        else:
            continue
        if mine == BLOCK:
            scale_times(r, scale(section, i))
    write_rows(dst, rows)


@pytest.fixture(scope="module", params=BACKENDS)
def week(request, tmp_path_factory, generated):
    """Nine quiet nights, then seven in which the block's trace hiccups at a different op each night (x4), or
    in which every op of the block is 30 % slower in both sections: one label each."""
    folder = tmp_path_factory.mktemp("week")
    gen = _new_url(request.param, folder)
    wh = make_invoke(next(gen))
    big = [0, 2, 3, 7, 1]  # (the block's ops of 34-71 us, a different one each night)
    cases = {"hiccup_week": lambda n: (lambda s, i: 4.0 if s == "trace" and i == big[n % len(big)] else 1.0),
             "slower_block": lambda n: (lambda s, i: 1.3),
             "eager_only": lambda n: (lambda s, i: 1.3 if s == "eager" and n == 6 else 1.0)}
    for seed, (name, scale) in enumerate(cases.items(), 71):
        d = folder / name
        shutil.copytree(generated("mkhistory", DLV3, "--nights", "16", "--seed", str(seed), "--outliers", "0"), d)
        for n, f in enumerate(sorted(d.glob("ops_perf_results_*.csv"))[9:]):
            _block_night(f, f, scale(n))
        assert wh("ingest", d, "--label", name).exit_code == 0
    yield wh
    for _ in gen:
        pass


def test_a_week_of_hiccups_at_different_ops_is_no_step(week):
    """Each night after the ninth, one op of the block x4 in the trace, a different one each night: the block's
    trace sum is ~+50 % for a week, which a change-point detector reads as a step and its end; its ops say no op
    moved twice."""
    doc = json.loads(week("changes", "--label", "hiccup_week", "--format", "json").stdout)
    assert [c for c in doc["changes"] if c["key"] == BLOCK] == [], doc["changes"]


def test_a_move_in_eager_alone_is_no_regression(week):
    """The last night, every op of the block 30 % slower in eager and not in the trace, which runs the same ops:
    the sections disagree, so the gate holds the move as suspicious, never as a regression (exit 3)."""
    r = week("regressions", "--label", "eager_only", "--last", "1", "--format", "json")
    found = [(c["kind"], c["by"], c["key"]) for c in json.loads(r.stdout)["findings"]]
    assert ("regression", "block", BLOCK) not in found and r.exit_code != 3, (r.exit_code, found)
    assert ("suspicious", "block", BLOCK) in found, found


def test_a_slower_block_is_still_a_step(week):
    doc = json.loads(week("changes", "--label", "slower_block", "--format", "json").stdout)
    steps = [(c["by"], c["key"], c["time"][:10]) for c in doc["changes"]]
    assert ("block", BLOCK, "2026-10-10") in steps, steps


# ------------------------------------------------------------------------ a model with nothing to corroborate
def _eager_only(path: Path, scale: float) -> None:
    """The capture without its trace (eager alone: one section, one iteration, one device), with block
    ``BLOCK``'s ops times ``scale``."""
    _block_night(path, path, lambda s, i: scale)
    rows = read_rows(path)
    end = next(k for k, r in enumerate(rows) if r["OP TYPE"] == "signpost" and r["OP CODE"] == "eager_end")
    write_rows(path, rows[:end + 1])


@pytest.fixture(scope="module", params=BACKENDS)
def alone(request, tmp_path_factory, generated):
    """Twelve nights of eager alone; on the last, the block 40 % slower (label ``far``) or 8 % (``near``)."""
    folder = tmp_path_factory.mktemp("alone")
    gen = _new_url(request.param, folder)
    wh = make_invoke(next(gen))
    for seed, (name, last) in enumerate({"far": 1.4, "near": 1.08}.items(), 81):
        d = folder / name
        shutil.copytree(generated("mkhistory", DLV3, "--nights", "12", "--seed", str(seed), "--outliers", "0"), d)
        nights = sorted(d.glob("ops_perf_results_*.csv"))
        for k, f in enumerate(nights):
            _eager_only(f, last if k == len(nights) - 1 else 1.0)
        r = wh("ingest", d, "--label", name)
        assert r.exit_code == 0 and "warning" not in r.output.lower(), r.output
    yield wh
    for _ in gen:
        pass


def test_a_move_far_beyond_its_noise_blocks_where_nothing_can_corroborate(alone):
    """Eager alone has no other section, no replays, one device: a block 40 % slower, far beyond its noise and no
    one-op hiccup (eight ops), is a regression on its size alone; 8 % is as clear to its noise but not far beyond
    it, so it is suspicious, never exit 3."""
    r = alone("regressions", "--label", "far", "--last", "1", "--format", "json")
    doc = json.loads(r.stdout)
    found = {(c["kind"], c["by"], c["key"]): c for c in doc["findings"]}
    assert r.exit_code == 3 and ("regression", "block", BLOCK) in found, (r.exit_code, list(found))
    r = alone("regressions", "--label", "near", "--last", "1", "--format", "json")
    found = {(c["kind"], c["by"], c["key"]): c for c in json.loads(r.stdout)["findings"]}
    assert r.exit_code != 3 and ("regression", "block", BLOCK) not in found, (r.exit_code, list(found))
    assert ("suspicious", "block", BLOCK) in found, list(found)


def test_a_step_in_eager_and_trace_is_a_regression_on_its_first_night(week):
    """Every op of the block 30 % slower from the tenth night in both sections: on that night the sections agree
    (and the replays), so the gate blocks."""
    r = week("regressions", "--label", "slower_block", "--last", "7", "--format", "json")
    found = [(c["kind"], c["by"], c["key"], c["time"][:10]) for c in json.loads(r.stdout)["findings"]]
    assert r.exit_code == 3 and ("regression", "block", BLOCK, "2026-10-10") in found, (r.exit_code, found)
