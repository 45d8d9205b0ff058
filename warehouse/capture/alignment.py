"""The history attribution: every trace op gets a block and layer, beside the oracle's attribution.

The report keeps the oracle's rule (the trace inherits the eager attribution only when both op-code sequences
are identical). History needs more, because real captures replay a trace several times and traces drift from
eager by an op or two:

1. The trace is cut into *iterations*: by ``METAL TRACE REPLAY SESSION ID`` when the file has it (in order of
   first appearance), else by the eager length when the trace is the eager sequence repeated k times, else one.
2. Each iteration takes block and layer from the eager op at the same position (``position``) when its op codes
   equal eager's; otherwise the two op-code sequences are aligned (:func:`align`: walk both, and where they
   differ resynchronise at the nearest pair of positions within a window that starts a run of equal op codes;
   linear in the length for the few drifts real traces have, where an LCS (difflib) is quadratic on these
   repetitive sequences: 330 s for a 100,000-op capture): matched ops take the eager op's attribution
   (``aligned``), the few others are ``unmatched`` (block '?').
3. Every other op (eager, custom sections, outside sections) keeps its own signpost attribution (``signpost``).

Ingest feeds :class:`HistoryTracker` row by row and writes each op with its answer. The common cases are
settled as the rows stream: an iteration that matches eager by position, and one that differs, from its first
difference on (it is aligned as it streams: :func:`align` can stop and resume). At the end only the answers
that turn out wrong are corrected: an iteration's ops before its first difference, the few answered while the
alignment waited past a drift, and iterations found short only at the end.
"""
from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field



SIGNPOST, POSITION, ALIGNED, UNMATCHED = "signpost", "position", "aligned", "unmatched"
WINDOW = 64  # how far ahead (in either sequence) a resynchronisation is looked for
CONFIRM = 3  # equal op codes in a row that make a resynchronisation point
BUDGET = 5_000_000  # comparisons per alignment; past it, the rest of the trace stays unmatched
STREAMING = True  # whether an iteration to be aligned is answered as it streams (False: the tests' reference)


def align(a: Sequence[int], b: Sequence[int]) -> dict[int, int]:
    """``{index in b: index in a}`` for the ops of ``b`` matched to ops of ``a``, in order: equal runs are
    matched; at a difference, the nearest pair of offsets (fewest ops skipped in both) within :data:`WINDOW`
    whose op codes agree for :data:`CONFIRM` ops (or to the end) resumes the matching."""
    out: dict[int, int] = {}
    _Aligner(a).advance(b, out, final=True)
    return out


class _Aligner:
    """:func:`align` that can stop and resume as ``b`` grows: each decision needs ``b`` only up to
    :data:`WINDOW` + :data:`CONFIRM` ops past it, so run on a ``b`` that is still streaming it decides every op
    that far behind the newest exactly as the whole ``b`` would (it waits for more otherwise)."""

    def __init__(self, a: Sequence[int]):
        self.a = a
        self.i = self.j = 0  # next op of a and of b to match: the ops of b before j are decided
        self.budget = BUDGET
        self.stopped = False  # no resynchronisation (or a exhausted): every op of b from j on is unmatched

    def advance(self, b: Sequence[int], out: dict[int, int], final: bool) -> None:
        """Match as far as ``b`` allows (all of it when ``final``), adding ``{index in b: index in a}``."""
        a, i, j, budget = self.a, self.i, self.j, self.budget
        na, nb = len(a), len(b)

        def confirmed(x: int, y: int) -> bool:
            k = 0
            while k < CONFIRM and x + k < na and y + k < nb:
                if a[x + k] != b[y + k]:
                    return False
                k += 1
            return True

        while i < na and j < nb:
            if a[i] == b[j]:
                out[j] = i
                i += 1
                j += 1
                continue
            if not final and nb - j <= WINDOW + CONFIRM:
                break  # the search below may look that far ahead in b: wait until b is that long
            ahead: dict[int, list[int]] = {}
            for di in range(min(WINDOW, na - i) + 1):
                if i + di < na:
                    ahead.setdefault(a[i + di], []).append(di)
            best: tuple[int, int] | None = None
            for dj in range(min(WINDOW, nb - j - 1) + 1):
                if best is not None and dj >= best[0] + best[1]:
                    break
                for di in ahead.get(b[j + dj], ()):
                    budget -= 1
                    if (di or dj) and (best is None or di + dj < sum(best)) and confirmed(i + di, j + dj):
                        best = (di, dj)
                        break
            budget -= WINDOW
            if best is None or budget < 0:
                self.stopped = True  # no resynchronisation near: the rest stays unmatched
                break
            i, j = i + best[0], j + best[1]
        self.stopped = self.stopped or i >= na
        self.i, self.j, self.budget = i, j, budget


@dataclass
class Attributed:
    """History attribution of one op: its place (the id of its (block, layer) pair: 0 for none; ingest may give
    a place not interned yet as a negative number, which it fills in), how, iteration and position in it."""

    place: int
    how: str | None
    iteration: int | None
    iter_pos: int | None

    def values(self) -> tuple:
        return self.place, self.how, self.iteration, self.iter_pos


@dataclass
class HistoryTracker:
    """Feed eager and trace ops in file order; :meth:`trace_op` answers at once, :meth:`finish` lists the
    corrections for iterations that did not match eager op for op.

    The first op of an iteration that differs from eager settles it: that iteration (without replay ids, the
    whole trace) will be aligned. From there on :meth:`trace_op` answers its ops with an alignment that runs as
    they stream (:class:`_Aligner`), which is the final answer for every op it has decided on arrival (all but
    the few just past a drift), and :meth:`finish` corrects only the answers that differ from the final ones. A
    trace that drifts from eager (as real ones do) is then written once, not written and then rewritten op by
    op."""

    # One entry per op of a file, so compact: machine integers in arrays (4 bytes an op, no int objects: op code
    # ids, place ids, row numbers and iterations are under 2**31), each eager op's place as its id (a (block,
    # layer) pair of strings each took 34 MiB of a million-op ingest). The op codes are ingest's too (the
    # oracle's rule compares them).
    e_codes: array = field(default_factory=lambda: array("i"))
    e_place: array = field(default_factory=lambda: array("i"))
    t_rows: array = field(default_factory=lambda: array("i"))
    t_codes: array = field(default_factory=lambda: array("i"))
    t_iter: array = field(default_factory=lambda: array("i"))
    sessions: dict[str, int] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=dict)
    bad_iterations: set[int] = field(default_factory=set)
    by_session: bool | None = None
    # per trace op, the eager op its answer was taken from when it answered as aligned (-1: unmatched; -2: an
    # answer of another kind, which the final alignment always corrects)
    answered: array = field(default_factory=lambda: array("i"))
    # iterations being aligned as they stream (-1: the whole trace), with their op codes so far
    _streams: dict[int, tuple[_Aligner, array]] = field(default_factory=dict)
    _decided: dict[int, int] = field(default_factory=dict)  # (a streaming alignment's latest matches)

    def eager_op(self, code: int, place: int) -> None:
        """An eager op, its place (0: none; negative: not interned yet, see :attr:`e_place`)."""
        self.e_codes.append(code)
        self.e_place.append(place)

    def trace_op(self, row_no: int, code: int, replay: str | None, place: int, pos: int) -> Attributed:
        """The op's attribution: by position while its iteration matches eager, then from the streaming
        alignment of that iteration (corrected by :meth:`finish` where either turns out wrong)."""
        if self.by_session is None:
            self.by_session = bool(replay)
        n = len(self.e_codes)
        if self.by_session:
            it = self.sessions.setdefault(replay or "", len(self.sessions))
            ipos = self.counts.get(it, 0)
            self.counts[it] = ipos + 1
        elif n:
            it, ipos = divmod(pos, n)
        else:
            it, ipos = 0, pos
        self.t_rows.append(row_no)
        self.t_codes.append(code)
        self.t_iter.append(it)
        stream = self._streams.get(-1 if not self.by_session else it)
        if stream is not None:
            return self._streamed(stream, code, it if self.by_session else 0)
        if not n:  # no eager section to learn from: the trace's own signposts
            self.answered.append(-2)
            return Attributed(place, SIGNPOST if place else None, it, ipos)
        if ipos < n and self.e_codes[ipos] == code:
            self.answered.append(-2)
            return Attributed(self.e_place[ipos], POSITION, it, ipos)
        self.bad_iterations.add(it)
        if STREAMING:
            # This iteration (without replay ids: the whole trace) will be aligned: answer as that alignment
            # from here on. Its ops so far are the start of what it aligns.
            if self.by_session:
                codes = array("q", [c for c, x in zip(self.t_codes, self.t_iter) if x == it][:-1])
                stream = self._streams[it] = (_Aligner(self.e_codes), codes)
                return self._streamed(stream, code, it)
            stream = self._streams[-1] = (_Aligner(self.e_codes), array("q", self.t_codes[:-1]))
            return self._streamed(stream, code, 0)
        self.answered.append(-2)
        return Attributed(0, UNMATCHED, it, ipos)

    def _streamed(self, stream: tuple[_Aligner, array], code: int, it: int) -> Attributed:
        """The answer for the newest op of an iteration being aligned as it streams: aligned, or unmatched when
        decided so or still undecided (the alignment waits for the ops past a drift)."""
        aligner, codes = stream
        codes.append(code)
        k = len(codes) - 1
        found = self._decided
        if not aligner.stopped:
            found.clear()
            aligner.advance(codes, found, final=False)
        i = found.get(k, -1)
        self.answered.append(i)
        if i < 0:
            return Attributed(0, UNMATCHED, it, k)
        return Attributed(self.e_place[i], ALIGNED, it, k)

    def finish(self) -> list[tuple[int, Attributed]]:
        """``(row_no, attribution)`` for every trace op whose answer from :meth:`trace_op` was wrong: in the
        iterations that differ from eager (aligned), or in the whole trace when it is not k whole copies of eager
        and has no replay ids (then it is one iteration), the answers that differ from the final alignment."""
        n = len(self.e_codes)
        if not self.t_rows or not n:
            return []
        if not self.by_session and (len(self.t_codes) % n or self.bad_iterations):
            # not k copies of eager: one iteration, aligned whole; only the answers that differ are corrected
            self.t_iter = array("i", bytes(4 * len(self.t_rows)))  # all zero: one iteration
            fixes = self._align(list(range(len(self.t_rows))), 0, self.answered)
            self._streams.clear()
            return fixes
        if self.by_session:
            # an iteration shorter than eager matched op for op but misses ops: align it too
            self.bad_iterations |= {it for it, c in self.counts.items() if c != n}
        out: list[tuple[int, Attributed]] = []
        for it in sorted(self.bad_iterations):
            idx = [i for i, x in enumerate(self.t_iter) if x == it]
            out += self._align(idx, it, array("i", [self.answered[i] for i in idx]))
        self._streams.clear()
        return out

    def _align(self, idx: list[int], it: int, answered: array) -> list[tuple[int, Attributed]]:
        """Corrections for the trace ops ``idx`` aligned as one iteration ``it``: those whose answer (``answered``,
        one per op of ``idx``) was not the final one."""
        found = align(self.e_codes, [self.t_codes[i] for i in idx])
        out = []
        for k, i in enumerate(idx):
            if answered[k] == found.get(k, -1):
                continue  # answered as aligned to the same eager op (or as unmatched): already right
            if k in found:
                out.append((self.t_rows[i], Attributed(self.e_place[found[k]], ALIGNED, it, k)))
            else:
                out.append((self.t_rows[i], Attributed(0, UNMATCHED, it, k)))
        return out


