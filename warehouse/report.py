"""The OPT_BASELINE report (JSON + Markdown) of a run, from the database alone.

The contract is ``profile_summary.py`` (the user's summariser): the same keys in the same order, the same rows in
the same order, the same strings, and float sums to the last bit. Floating-point addition is not associative,
so the sums are accumulated here, in Python, over one ordered read of the ``op_detail`` view (section, then
position): that gives the oracle's exact numbers, and so its order of near-tied rows, on every back end and
whatever the physical order of the rows. It is also one read instead of eight GROUP BY sorts. The summary
views (``section_summary``, ``by_*``, ``layer_cost_split``) compute the same tables in SQL for users; a test
holds them equal to this report.

The parts computed from ops are computed once, at ingest, and stored in ``run_report`` (a report then costs a
few kilobytes of reading, not every op); ``warehouse check`` computes them again and compares.
"""
from __future__ import annotations

import heapq
import json
import statistics
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any

from sqlalchemy import Connection, Engine, func, select, text

from warehouse.contract import EAGER, FEW_CORES, SECTIONS, TOP, TRACE, is_post
from warehouse import dialect
from warehouse import schema as t
from warehouse.measures import KEY_TEXTS, REPORT_TABLES

from warehouse.cellstore import compresses
from warehouse.memory import trim_heap
from warehouse.packing import pack_pieces, pack_text, unpack_text
from warehouse.columns import AT

# One op as the report reads it from op_detail (names, categories and shapes are looked up, not read per op).
_COLS = ("pos", "op_code_id", "block", "layer", "kernel_us", "fw_us", "op2op_us", "fw_start_cycle", "fw_end_cycle",
         "cores", "fidelity")
(POS, CODE, BLOCK, LAYER, KERN, FW, GAP, START, END, CORES, FID) = range(len(_COLS))


# The group tables (measures.REPORT_TABLES): their keys are read with the ops, from the registry's SQL.
GROUPS = tuple(t.key for t in REPORT_TABLES)
_KEYS = slice(len(_COLS), len(_COLS) + len(REPORT_TABLES))
_SELECT = ", ".join(list(_COLS) + [f"{t.expr} AS key_{i}" for i, t in enumerate(REPORT_TABLES)])


class _Sums:
    """One group table of a section: per key, in the order keys first appear, its op count and its kernel and gap
    sums. The sums are numpy's ``add.at``, which adds a batch's values one after the other in op order: the same
    additions from the same 0.0, so the same digits, as the oracle's running ``+=``."""

    def __init__(self) -> None:
        import numpy as np

        self.index: dict[str, int] = {}
        self.count = np.zeros(0, dtype=np.int64)
        self.kern = np.zeros(0)
        self.gap = np.zeros(0)

    def add(self, keys: Sequence[str], kern: Any, gap: Any) -> None:
        """Ops with these keys and values (numpy arrays, in op order)."""
        import numpy as np

        index = self.index
        for k in dict.fromkeys(keys):  # (the batch's keys once each, in the order they first appear)
            if k not in index:
                index[k] = len(index)
        idx = np.fromiter(map(index.__getitem__, keys), dtype=np.int64, count=len(keys))
        if len(index) > len(self.count):  # (new keys: room for them, and for as many more)
            more = max(len(index), 2 * len(self.count)) - len(self.count)
            self.count = np.concatenate([self.count, np.zeros(more, dtype=np.int64)])
            self.kern = np.concatenate([self.kern, np.zeros(more)])
            self.gap = np.concatenate([self.gap, np.zeros(more)])
        np.add.at(self.count, idx, 1)
        np.add.at(self.kern, idx, kern)
        np.add.at(self.gap, idx, gap)

    def items(self) -> Iterator[tuple[str, tuple[int, float, float]]]:
        """(key, (ops, kernel sum, gap sum)) in the order the keys first appeared."""
        count, kern, gap = self.count.tolist(), self.kern.tolist(), self.gap.tolist()
        return ((key, (count[i], kern[i], gap[i])) for key, i in self.index.items())

    def rows(self, total: float) -> Iterator[dict[str, Any]]:
        """The table's rows, by kernel time, largest first (ties in the order the keys first appeared, as the
        oracle's stable sort leaves them), one at a time: a million-op section's 80,000 layers are never all
        Python objects at once."""
        import numpy as np

        n = len(self.index)
        keys = list(self.index)  # (in index order: the order of first appearance)
        order = np.argsort(-self.kern[:n], kind="stable").tolist()
        for at in range(0, n, 1000):
            part = order[at:at + 1000]
            count, kern, gap = self.count[part].tolist(), self.kern[part].tolist(), self.gap[part].tolist()
            for i, c, s, gs in zip(part, count, kern, gap):
                yield {"key": keys[i], "ops": c, "kernel_us": round(s, 1), "share": round(s / total, 4),
                       "gap_us": round(gs, 1)}


class _SectionScan:
    """One pass over a section's ops in file order, keeping only what the report needs: the sums' terms as
    compact arrays (Python's ``sum`` over them gives the oracle's digits, whatever its summation algorithm), the
    group sums as the oracle adds them, and per layer the kernel times of its ops. About 40 bytes per op, so that
    computing a report at the end of a million-op ingest stays within its memory budget. Ops are added a batch
    at a time, as columns (:meth:`add_columns`)."""

    def __init__(self, groups: bool = True, layers: bool = True) -> None:
        """``groups``, ``layers``: whether the group tables' sums, the layers' ops are kept (a big run's report
        is read back twice, each part on its own: see :func:`_read_back`)."""
        self.with_groups, self.with_layers = groups, layers
        self.kern, self.fw, self.gaps = array("d"), array("d"), array("d")
        self.cores: Counter[float] = Counter()  # a few distinct counts: their median from the tally
        self.start: float | None = None
        self.end: float | None = None
        self.fid: Counter[str] = Counter()
        self.groups: tuple[_Sums, ...] = tuple(_Sums() for _ in GROUPS)
        # per op of a layer (|post glue left out): the layer's index (layers in the order they first appear),
        # the kernel time and whether it computes: 13 bytes an op, not an array pair per layer (80,000 of them)
        self.layers: dict[str, int] = {}
        self.lay_id, self.lay_kern, self.lay_comp = array("i"), array("d"), bytearray()

    def add(self, batch: Sequence[Any], compute: dict[int, bool], groups_only: bool = False) -> None:
        """Add ops read from op_detail (rows as :data:`_COLS` and the group keys)."""
        import numpy as np

        if not batch:
            return
        cols = list(zip(*batch))
        kern, fw, gaps = (np.array(cols[i], dtype=np.float64) for i in (KERN, FW, GAP))
        self.add_columns(kern, fw, gaps, cols[CORES], cols[START], cols[END], cols[FID], cols[_KEYS], cols[LAYER],
                         [compute[c] for c in cols[CODE]], groups_only)

    def add_columns(self, kern: Any, fw: Any, gaps: Any, cores: Sequence[Any],
                    starts: Sequence[Any], ends: Sequence[Any], fids: Sequence[Any], keys: Sequence[Sequence[str]],
                    layers: Sequence[str | None], compute: Sequence[bool], groups_only: bool = False) -> None:
        """Add a batch of ops, a sequence per column in op order (``kern``, ``fw``, ``gaps``: float64 numpy
        arrays; ``keys``: one sequence per group table); ``groups_only``: only the group tables and the layers
        (:class:`ReportFeed` shares the rest between two scans of the same ops)."""
        if not groups_only:
            self.kern.frombytes(kern.tobytes())
            self.fw.frombytes(fw.tobytes())
            self.gaps.frombytes(gaps.tobytes())
            self.cores.update(map(float, cores))
            st = min((v for v in starts if v and v > 0), default=None)
            if st is not None and (self.start is None or st < self.start):
                self.start = st
            en = max((v for v in ends if v and v > 0), default=None)
            if en is not None and (self.end is None or en > self.end):
                self.end = en
            self.fid.update(f for f in fids if f)
        if self.with_groups:
            for sums, table_keys in zip(self.groups, keys):
                sums.add(table_keys, kern, gaps)
        if not self.with_layers:
            return
        index, ids, kerns, comps = self.layers, self.lay_id, self.lay_kern, self.lay_comp
        for lay, kv, comp in zip(layers, kern.tolist(), compute):
            if lay and not is_post(lay):
                i = index.get(lay)
                if i is None:
                    i = index[lay] = len(index)
                ids.append(i)
                kerns.append(kv)
                comps.append(comp)

    def _layer_ops(self) -> Iterator[tuple[str, list[float], list[int]]]:
        """Each layer (in the order they first appeared) with its ops' kernel times and compute flags, in op
        order; a thousand layers' at a time are Python objects."""
        import numpy as np

        if not self.layers:
            return
        ids = np.frombuffer(self.lay_id, dtype=np.int32)
        order = np.argsort(ids, kind="stable")  # (by layer, each layer's ops in op order)
        bounds = np.searchsorted(ids[order], np.arange(len(self.layers) + 1)).tolist()
        kern = np.frombuffer(self.lay_kern, dtype=np.float64)
        comp = np.frombuffer(bytes(self.lay_comp), dtype=np.uint8)
        names = list(self.layers)
        for c0 in range(0, len(names), 1000):
            c1 = min(c0 + 1000, len(names))
            part = order[bounds[c0]:bounds[c1]]
            ks, fs = kern[part].tolist(), comp[part].tolist()
            for li in range(c0, c1):
                a, b = bounds[li] - bounds[c0], bounds[li + 1] - bounds[c0]
                yield names[li], ks[a:b], fs[a:b]

    def group_tables(self, total: float, raw: bool = False) -> dict[str, Any]:
        """The group tables (sorted() is stable: ties keep the order of first appearance, as in the oracle);
        ``raw``: each as its JSON text, made a row at a time (:class:`_Raw`)."""
        out: dict[str, Any] = {}
        for name, agg in zip(GROUPS, self.groups):
            out[name] = _list_json(agg.rows(total)) if raw else list(agg.rows(total))
        return out

    def precision_split(self, raw: bool = False) -> dict[str, Any]:
        """The layer cost split (``|post`` glue excluded): compute, movement between the first and last compute
        op, split before, finish after."""
        tot: dict[str, Any] = {"layers": 0, "compute_us": 0.0, "movement_us": 0.0, "split_us": 0.0,
                               "finish_us": 0.0, "compute_ops": 0, "ops": 0}
        # each layer's figures in compact arrays, not a tuple each (80,000 layers of a million-op section: 18 MB):
        # its name, ops and compute ops, and its four sums rounded (a sum of nothing is the int 0, printed "0",
        # which ``whole`` remembers)
        names: list[str] = []
        counts, sums, whole = array("q"), array("d"), bytearray()
        for lay, kern, flags in self._layer_ops():
            comp = [k for k, f in enumerate(flags) if f]
            if not comp:
                continue
            a, z = comp[0], comp[-1]
            cset = set(comp)
            figures = (sum(kern[k] for k in comp), sum(kern[k] for k in range(a, z + 1) if k not in cset),
                       sum(kern[k] for k in range(a)), sum(kern[k] for k in range(z + 1, len(kern))))
            names.append(lay)
            counts.extend((len(kern), len(comp)))
            sums.extend(round(v, 1) if isinstance(v, float) else v for v in figures)
            whole.extend(not isinstance(v, float) for v in figures)
            tot["layers"] += 1
            for k, v in zip(("compute_us", "movement_us", "split_us", "finish_us"), figures):
                tot[k] += v
            tot["compute_ops"] += len(comp)
            tot["ops"] += len(kern)
        out: dict[str, Any] = {k: (round(v, 1) if isinstance(v, float) else v) for k, v in tot.items()}
        rows = self._split_rows(names, counts, sums, whole)
        out["per_layer"] = _list_json(rows) if raw else list(rows)
        return out

    @staticmethod
    def _split_rows(names: list[str], counts: array, sums: array, whole: bytearray) -> Iterator[dict[str, Any]]:
        """The layers' rows by cost (compute + movement + split + finish, rounded, added in that order), largest
        first, ties in layer order (the stable sort of the oracle)."""
        import numpy as np

        v = np.frombuffer(sums, dtype=np.float64).reshape(-1, 4) if len(sums) else np.zeros((0, 4))
        order = np.argsort(-(v[:, 0] + v[:, 1] + v[:, 2] + v[:, 3]), kind="stable").tolist()
        for i in order:
            figs = [0 if whole[4 * i + j] else sums[4 * i + j] for j in range(4)]
            yield dict(zip(_SPLIT, (names[i], counts[2 * i], counts[2 * i + 1], *figs)))


_SPLIT = ("layer", "ops", "compute_ops", "compute_us", "movement_us", "split_us", "finish_us")


class _Raw(list):
    """JSON text that goes into a document as it is, in pieces: a big list dumped an item at a time (a million-op
    run's report parts as Python dicts held 150 MB more at the end of its ingest than their text), its pieces
    never joined but into the document (:func:`_pieces`)."""


def _list_json(items: Any) -> _Raw:
    """``json.dumps(list(items), ensure_ascii=False)``, without the whole list: 1,000 items at a time, so that the
    encoder's C loop does the work (an item at a time, its Python entry cost a tenth of storing the report parts)
    and the list held stays small. (The same text: items of one dumps are joined by ", " as the list's are.)"""
    it = iter(items)
    parts = _Raw(["["])
    while chunk := list(islice(it, 1000)):
        if len(parts) > 1:
            parts.append(", ")
        parts.append(json.dumps(chunk, ensure_ascii=False)[1:-1])
    parts.append("]")
    return parts


def _dumps(items: Any) -> str:
    """``json.dumps(dict(items), ensure_ascii=False)`` of (key, value) pairs (a dict's items, or a generator:
    each value is dumped before the next is made) whose values, at any depth of dicts, may be :class:`_Raw`
    texts: the text of the document with those values parsed back."""
    return "".join(_pieces(items))


def _pieces(items: Any) -> Iterator[str]:
    """:func:`_dumps`' text in pieces, each value's as soon as it is made (a million-op run's document, 42 MB,
    need never be held whole: see :func:`store_parts`)."""
    yield "{"
    sep = ""
    # (no enumerate(): it keeps its last item for reuse, and so a section's texts, 20 MB of a million-op run's,
    # while the next section is made)
    for k, v in items:
        yield f"{sep}{json.dumps(k, ensure_ascii=False)}: "
        sep = ", "
        if isinstance(v, _Raw):
            yield from v
        elif isinstance(v, dict):
            yield from _pieces(v.items())
        else:
            yield json.dumps(v, ensure_ascii=False)
        del v
    yield "}"


class ReportFeed:
    """The report's section scans, fed by ingest op by op in file order with the values that the op_detail view
    gives for them, so that storing the report parts costs no second read of the ops (which would be a third of
    an ingest's time after the rows are written).

    Which blocks and layers the trace's ops report is decided only at the file's end (the oracle's rule: the
    eager op's at the same position when both op code sequences are equal), so while the trace's op codes
    match the eager section's position by position it is scanned both ways. When neither way applies (a trace
    op ahead of the eager section) :meth:`scans` gives None and the parts are read from the database as before.
    ``warehouse check`` computes the parts from the database and compares."""

    MAX_OPS = 150_000  # beyond, the scans' ~60 bytes an op would break an ingest's memory budget: read back

    def __init__(self, conn: Connection):
        self.conn = conn
        self.fed = 0
        self.plus_zero = not dialect.keeps_negative_zero(conn)  # (a -0.0 as it will read back)
        self.own = {s: _SectionScan() for s in SECTIONS}
        self.inherited: _SectionScan | None = _SectionScan()
        self.codes: dict[int, tuple[str, str, bool]] = {}  # op_code id -> name, category, is_compute
        self.compute: dict[int, bool] = {}
        self._learning()

    def _learning(self) -> None:
        """Start with nothing learned per op or per key (at the start, and when a run passes the budget: a
        capture whose layers are all new holds a key nearly per op, 56 MiB of a 300,000-op ingest)."""
        self.eager_codes = array("q")
        self.eager_places = array("i")  # each eager position's (block, layer), as an index of ``pairs``
        self.pairs: list[tuple[str, str]] = []
        self.pair_ix: dict[tuple[str, str], int] = {}
        self.keys: dict[tuple[int, str, str], tuple] = {}  # (op code, block, layer) -> the group tables' keys
        self.texts: dict[str, str] = {}  # the keys' texts, shared
        self.pending: list[tuple] = []  # the current batch's ops
        self.held: list[tuple] = []  # the earlier batches', each as a tuple of columns (see flush)

    def op(self, section: str, pos: int, code: int, block: str, layer: str, typed: Sequence[Any],
           fidelity: str) -> None:
        """One op of the eager or trace section (``typed`` as :data:`warehouse.columns.OP_COLUMNS`)."""
        if self.fed > self.MAX_OPS:
            return
        alt: tuple[str, str] | None = None
        if section == EAGER:
            self.eager_codes.append(code)
            ix = self.pair_ix.get((block, layer))
            if ix is None:
                ix = self.pair_ix[(block, layer)] = len(self.pairs)
                self.pairs.append((block, layer))
            self.eager_places.append(ix)
        elif self.inherited is not None:
            if pos < len(self.eager_codes) and self.eager_codes[pos] == code:
                alt = self.pairs[self.eager_places[pos]]
            else:
                self.inherited = None  # the sequences differ here (or the eager op is not known yet)
        k, f, g = typed[AT.kernel_ns], typed[AT.fw_ns], typed[AT.op2op_ns]
        self.pending.append((section, pos, code, block, layer, alt, 0 if k is None else k, 0 if f is None else f,
                             0 if g is None else g, typed[AT.fw_start_cycle], typed[AT.fw_end_cycle],
                             typed[AT.cores] or 0, fidelity))

    def _learn_keys(self, wanted: set[tuple[int, str, str]]) -> None:
        """The group tables' keys of every (op code, block, layer) not known yet: in Python when every table's
        expression has its mirror (measures.KEY_TEXTS: a realistic capture meets 40,000 new ones, a tenth of the
        feed's time in SQL), else by the registry's SQL, one statement per 500 of them."""
        missing = sorted(k for k in wanted if k not in self.keys)
        if not missing:
            return
        self._learn_codes(sorted({c for c, _, _ in missing if c not in self.codes}))
        share = self.texts.setdefault  # (each key text once: a block's and an op code's recur thousands of times)
        if all(tb.expr in KEY_TEXTS for tb in REPORT_TABLES):
            mirror = [KEY_TEXTS[tb.expr] for tb in REPORT_TABLES]
            for combo in missing:
                code, block, layer = combo
                name, cat, _ = self.codes[code]
                self.keys[combo] = tuple(share(k, k) for k in (f(block, layer, name, cat) for f in mirror))
            return
        exprs = ", ".join(tb.expr for tb in REPORT_TABLES)
        m = dialect.paramstyle_mark(self.conn)  # (the driver's own placeholders: text() parses its SQL each time)
        row = f"SELECT {m} AS i, CAST({m} AS TEXT) AS op_code, CAST({m} AS TEXT) AS category, " \
              f"CAST({m} AS TEXT) AS block, CAST({m} AS TEXT) AS layer"
        for i in range(0, len(missing), 500):
            keys = missing[i:i + 500]
            params: list[object] = []
            for j, (code, block, layer) in enumerate(keys):
                name, cat, _ = self.codes[code]
                params += [j, name, cat, block, layer]
            sql = f"SELECT i, {exprs} FROM ({' UNION ALL '.join([row] * len(keys))}) x ORDER BY i"
            for j, *key in self.conn.exec_driver_sql(sql, tuple(params)):
                self.keys[keys[j]] = tuple(share(k, k) for k in key)

    def _learn_codes(self, new_codes: list[int]) -> None:
        """Name, category and compute flag of op codes not known yet, from the database."""
        for i in range(0, len(new_codes), 500):
            part = new_codes[i:i + 500]
            marks = ", ".join(f":c{j}" for j in range(len(part)))
            for code, name, cat, comp in self.conn.execute(text(
                    f"SELECT id, name, category, is_compute FROM op_code WHERE id IN ({marks})"),
                    {f"c{j}": c for j, c in enumerate(part)}):
                self.codes[code] = (name, cat, bool(comp))
                self.compute[code] = bool(comp)

    def flush(self) -> None:
        """End a batch of rows: its ops are kept, a batch as columns, for :meth:`scans` to add at the end (where
        ingest computes them on the other core, see :meth:`ready`: adding them here was a sixth of the time of
        the process that writes the rows)."""
        self.fed += len(self.pending)
        if self.fed > self.MAX_OPS:  # a big run: its parts are read from the database at the end
            self.give_up()
            return
        if self.pending:
            # (as columns: a tuple per column holds 8 bytes an op where a tuple per op held about 150)
            self.held.append(tuple(zip(*self.pending)))
            self.pending = []

    def give_up(self) -> None:
        """Keep nothing more: the run is too big for the feed (ingest foresees it), its parts are read back."""
        self.fed = self.MAX_OPS + 1
        self.own, self.inherited = {}, None
        self._learning()

    def ready(self) -> None:
        """Read what :meth:`scans` needs from the database (the op codes fed, and the group keys when a table has
        no Python mirror), so that it needs none: a forked process may then compute the scans."""
        self._learn_codes(sorted({c for batch in self.held for c in set(batch[2])} - self.codes.keys()))
        if not all(tb.expr in KEY_TEXTS for tb in REPORT_TABLES):
            self._drain()

    def scannable(self, same: bool) -> bool:
        """Whether :meth:`scans` will give scans (not None) for the file's rule."""
        return self.fed <= self.MAX_OPS and (not same or self.inherited is not None)

    def _drain(self) -> None:
        """Add the ops held to the scans, a batch at a time and in file order."""
        for batch in self.held:
            self._drain_batch(batch)
        self.held = []

    def _drain_batch(self, batch: tuple) -> None:
        """Add one batch held (a tuple of columns) to the scans."""
        secs, _, code, block, layer, alt = batch[:6]
        self._learn_keys(set(zip(code, block, layer)) | {(c, *a) for c, a in zip(code, alt) if a is not None})
        if secs.count(secs[0]) == len(secs):  # (a batch of one section: its columns as they are)
            self._add(secs[0], batch)
            return
        ops = list(zip(*batch))  # (a batch across a section's end)
        for sec in SECTIONS:
            part = [op for op in ops if op[0] == sec]
            if part:
                self._add(sec, tuple(zip(*part)))

    def _add(self, sec: str, cols: tuple) -> None:
        """One section's ops of a batch, as columns, to its scan (and the trace's to the inherited scan too)."""
        import numpy as np

        _, pos, code, block, layer, alt, k, f, g, st, en, cores, fid = cols
        # the values op_detail gives: microseconds, an op-to-op gap of 0 at a section's first op
        kern = np.array(k, dtype=np.float64) / 1000.0
        fw = np.array(f, dtype=np.float64) / 1000.0
        gap = np.where(np.array(pos) == 0, 0.0, np.array(g, dtype=np.float64) / 1000.0)
        if self.plus_zero:
            kern, fw, gap = kern + 0.0, fw + 0.0, gap + 0.0
        keys, compute = self.keys, self.compute
        flags = [compute[c] for c in code]
        own = list(zip(*(keys[cbl] for cbl in zip(code, block, layer))))
        self.own[sec].add_columns(kern, fw, gap, cores, st, en, fid, own, layer, flags)
        if sec == TRACE and self.inherited is not None:
            # (while the trace may inherit, its every op has the eager op's block and layer at its position)
            have = [i for i, a in enumerate(alt) if a is not None]
            if have:
                pairs = [(code[i], *alt[i]) for i in have]
                inherited = list(zip(*(keys[p] for p in pairs)))
                self.inherited.add_columns(kern[have], fw[have], gap[have], (), (), (), (), inherited,
                                           [p[2] for p in pairs], [flags[i] for i in have],
                                           groups_only=True)  # (the same values as the own trace's)

    def scans(self, same: bool) -> dict[str, _SectionScan] | None:
        """The eager and trace scans for the file's rule (``same``: the sequences are equal), or None when the
        database must be read (see :meth:`ready` for a process without the database)."""
        self.flush()
        self._drain()
        if self.fed > self.MAX_OPS:
            return None
        if not same:
            return self.own
        x, own = self.inherited, self.own[TRACE]
        if x is None:
            return None
        x.kern, x.fw, x.gaps, x.cores, x.start, x.end, x.fid = own.kern, own.fw, own.gaps, own.cores, own.start, \
            own.end, own.fid
        return {EAGER: self.own[EAGER], TRACE: x}


def _scan(conn: Connection, run_id: int, section: str, compute: dict[int, bool], groups: bool = True,
          layers: bool = True, groups_only: bool = False) -> _SectionScan:
    """The ops of one section, in file order, read in batches from the driver's own cursor (the report touches
    every op of a run; SQLAlchemy's row objects would cost a tenth of its time). Position order is file order
    within a section name, and (run_id, row_no) is indexed: no sort is needed. ``groups``, ``layers``,
    ``groups_only``: what is kept (see :class:`_SectionScan`)."""
    mark = dialect.paramstyle_mark(conn)
    scan = _SectionScan(groups, layers)
    cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cur.execute(f"SELECT {_SELECT} FROM op_detail WHERE run_id = {mark} AND section = {mark} ORDER BY row_no",
                    (run_id, section))
        while batch := cur.fetchmany(1000):
            scan.add(batch, compute, groups_only)
    finally:
        cur.close()
    return scan


def _read_back(conn: Connection, run_id: int, section: str, compute: dict[int, bool],
               raw: bool) -> tuple[_SectionScan, _Pure]:
    """A section's scan and its :func:`_pure` part from the database; a big run's (over ReportFeed.MAX_OPS ops)
    in two reads of its ops, the sums, tops and layer split first, then the group tables, so that a million-op
    run's ~80,000 layers and its group tables' keys (15 MB each) are never held together."""
    big = conn.execute(select(func.count()).select_from(t.op).where(t.op.c.run_id == run_id)).scalar_one() \
        > ReportFeed.MAX_OPS
    if not big:
        x = _scan(conn, run_id, section, compute)
        return x, _pure(x, raw)
    x = _scan(conn, run_id, section, compute, groups=False)
    order, gap_order, sums, split = _tops_sums_split(x, raw)
    trim_heap()
    g = _scan(conn, run_id, section, compute, layers=False, groups_only=True)
    tables = g.group_tables(sums[0] or 1.0, raw)
    return x, (order, gap_order, tables, split, sums)


def _ops_at(conn: Connection, run_id: int, section: str, positions: set[int]) -> dict[int, Any]:
    """The few ops the top tables print, by position, with their shapes and memory configs."""
    if not positions:
        return {}
    return {r[0]: r for r in conn.execute(text(
        "SELECT pos, op_code_id, block, layer, fw_us, cores, fidelity, input0_shape, input0_memory, "
        f"output0_memory FROM op_detail WHERE run_id = :r AND section = :s AND pos IN "
        f"({', '.join(str(i) for i in sorted(positions))})"), {"r": run_id, "s": section})}


SORT_IN_MEMORY = 200_000  # gaps sorted here up to this many (a few MB); beyond, the database sorts them


def _gap_median(conn: Connection, run_id: int, section: str, gaps: array, n: int) -> float:
    """``statistics.median`` of the section's ``n`` positive op-to-op gaps after its first op (``gaps``: all of
    the section's, in file order). Up to :data:`SORT_IN_MEMORY` of them are sorted here; beyond, the middle one or
    two are picked by the database's sort (which spills to disk) rather than by sorting a million floats here,
    within an ingest's memory budget. Both give the same value: the same order statistics, the same arithmetic."""
    if n <= SORT_IN_MEMORY:
        return _positive_gap_median(gaps)
    mid = conn.execute(text(
        "SELECT op2op_us FROM op_detail WHERE run_id = :r AND section = :s AND pos > 0 AND op2op_us > 0 "
        "ORDER BY op2op_us LIMIT :k OFFSET :o"), {"r": run_id, "s": section, "k": 2 - n % 2, "o": (n - 1) // 2}
    ).scalars().all()
    return mid[0] if n % 2 == 1 else (mid[0] + mid[1]) / 2


def _tally_median(tally: dict[float, int]) -> float:
    """``statistics.median`` of the values counted in ``tally`` (the same value, by the same arithmetic)."""
    n = sum(tally.values())
    values = sorted(tally)

    def kth(k: int) -> float:  # the k-th smallest value (0-based)
        for v in values:
            k -= tally[v]
            if k < 0:
                return v
        raise IndexError(k)
    if n % 2 == 1:
        return kth(n // 2)
    return (kth(n // 2 - 1) + kth(n // 2)) / 2


# The half of a section's part that needs no database (see :func:`pure_parts`): its top op and gap positions,
# group tables and layer cost split.
# (and the section's sums, the number of its positive gaps after the first op and, when few enough to be sorted
# here, their median: see _gap_median)
_Pure = tuple[list[int], list[int], dict[str, Any], dict[str, Any], tuple[float, float, float, int, float | None]]


def _sums(x: _SectionScan) -> tuple[float, float, float, int, float | None]:
    """The section's kernel, FW and op-to-op sums (Python's ``sum`` over them, the oracle's), the number of its
    positive gaps after the first op, and their median when they are few enough to be sorted here (else None)."""
    n_nz = sum(1 for g in islice(x.gaps, 1, None) if g > 0)
    median = None
    if 0 < n_nz <= SORT_IN_MEMORY:  # (a million-op section's are sorted by the database, not held here)
        median = _positive_gap_median(x.gaps)
    return sum(x.kern), sum(x.fw), sum(x.gaps), n_nz, median


def _positive_gap_median(gaps: array) -> float:
    """``statistics.median`` of the positive op-to-op gaps after a section's first op, sorted here."""
    return statistics.median(sorted(g for g in islice(gaps, 1, None) if g > 0))


def _tops_sums_split(x: _SectionScan, raw: bool
                     ) -> tuple[list[int], list[int], tuple[float, float, float, int, float | None], dict[str, Any]]:
    """A section's top op and gap positions, its sums and its layer cost split; the layers it was made from are
    let go (a million-op section's are 15 MB, gone before its group tables are made)."""
    kern, gaps, n = x.kern, x.gaps, len(x.kern)
    # heapq.nsmallest is sorted(...)[:TOP], ties included, without sorting every op
    order = heapq.nsmallest(TOP, range(n), key=lambda i: -kern[i])
    gap_order = heapq.nsmallest(TOP, range(1, n), key=lambda i: -gaps[i])
    sums = _sums(x)
    split = x.precision_split(raw)
    x.layers, x.lay_id, x.lay_kern, x.lay_comp = {}, array("i"), array("d"), bytearray()
    return order, gap_order, sums, split


def _pure(x: _SectionScan, raw: bool) -> _Pure:
    order, gap_order, sums, split = _tops_sums_split(x, raw)
    # (the group tables made, then what they were made from let go before the next section is read)
    tables = x.group_tables(sums[0] or 1.0, raw)
    x.groups = ()
    return order, gap_order, tables, split, sums


def feed_parts(feed: ReportFeed, same: bool) -> tuple[dict[str, _SectionScan], dict[str, _Pure]] | None:
    """The scans of a ``feed`` (made :meth:`ReportFeed.ready`: no database is needed) and their
    :func:`pure_parts`, the scans holding only what :func:`store_parts` reads of them besides (their group
    tables and layers are in the pure parts, and stay out of the pipe); None when the database must be read.
    Ingest computes this in a forked process while it builds the rollups."""
    scans = feed.scans(same)
    if scans is None:
        return None
    return scans, pure_parts(scans)  # (which lets go of the scans' tables: they stay out of the pipe)


def pure_parts(scans: dict[str, _SectionScan]) -> dict[str, _Pure]:
    """What :func:`store_parts` computes from the ``scans`` without the database (most of its time): ingest
    computes it in a forked process (:mod:`warehouse.aside`) while it builds the rollups."""
    return {s: _pure(scans[s], raw=True) for s in SECTIONS}


def _section(conn: Connection, run_id: int, section: str, codes: dict[int, tuple[str, str, bool]],
             freq: float, scan: _SectionScan | None = None, raw: bool = False,
             pure: _Pure | None = None) -> dict[str, Any]:
    if scan is None:
        scan, pure = _read_back(conn, run_id, section, {i: c[2] for i, c in codes.items()}, raw)
    x = scan
    kern, gaps, n = x.kern, x.gaps, len(x.kern)
    span = (x.end - x.start) / freq if x.start is not None and x.end is not None else None
    order, gap_order, tables, split, (kern_sum, fw_sum, gap_sum, n_nz, median) = pure or _pure(x, raw)
    at = _ops_at(conn, run_id, section, set(order) | set(gap_order) | {i - 1 for i in gap_order})
    top_ops = [{"index": i, "op": codes[at[i][1]][0], "block": at[i][2], "layer": at[i][3],
                "kernel_us": round(kern[i], 1), "fw_us": round(at[i][4], 1), "cores": int(at[i][5]),
                "fidelity": at[i][6], "input0": at[i][7], "in0_mem": at[i][8], "out0_mem": at[i][9]}
               for i in order]
    top_gaps = [{"index": i, "op": codes[at[i][1]][0], "after": codes[at[i - 1][1]][0],
                 "gap_us": round(gaps[i], 1), "block": at[i][2], "layer": at[i][3]} for i in gap_order]
    if n_nz and median is None:
        median = _gap_median(conn, run_id, section, gaps, n_nz)
    out: dict[str, Any] = {"ops": n, "kernel_sum_us": round(kern_sum, 1), "fw_sum_us": round(fw_sum, 1),
           "op2op_sum_us": round(gap_sum, 1), "op2op_median_us": round(median, 2) if median is not None else None,
           "span_us": round(span, 1) if span else None, "freq_mhz": freq,
           "cores_median": _tally_median(x.cores) if n else None,
           "ops_below_120_cores": sum(k for c, k in x.cores.items() if 0 < c < FEW_CORES), "fidelity": dict(x.fid)}
    out.update(tables)
    out.update(top_ops=top_ops, top_gaps=top_gaps, precision_split=split)
    return out


def compute_parts(conn: Connection, run_id: int, freq: float,
                  scans: dict[str, _SectionScan] | None = None) -> dict[str, Any]:
    """The part of the report that comes from a run's ops (trace ids, replay sessions, the eager and trace
    sections), computed from the database in file order (or from ``scans`` fed at ingest, see
    :class:`ReportFeed`)."""
    return dict(_parts(conn, run_id, freq, scans, raw=False))


def parts_json(conn: Connection, run_id: int, freq: float, scans: dict[str, _SectionScan] | None = None,
               pure: dict[str, _Pure] | None = None, trace_ids: set[tuple[str, str]] | None = None) -> str:
    """``json.dumps(compute_parts(...), ensure_ascii=False)``, each section dumped as soon as it is computed and
    its big tables a row at a time (the memory of a million-op ingest's end); ``pure``: :func:`pure_parts` of
    the ``scans``, computed already."""
    return _dumps(_parts(conn, run_id, freq, scans, raw=True, pure=pure, trace_ids=trace_ids))


def _parts(conn: Connection, run_id: int, freq: float, scans: dict[str, _SectionScan] | None, raw: bool,
           pure: dict[str, _Pure] | None = None, trace_ids: set[tuple[str, str]] | None = None
           ) -> Iterator[tuple[str, Any]]:
    ids = trace_ids if trace_ids is not None else conn.execute(text(
        "SELECT DISTINCT trace_id, replay_session FROM op_detail WHERE run_id = :r AND section = 'trace'"),
        {"r": run_id}).all()
    codes = {i: (n, c, bool(x)) for i, n, c, x in conn.execute(
        text("SELECT id, name, category, is_compute FROM op_code"))}
    yield "trace_ids", sorted({r[0] for r in ids})
    yield "replay_sessions", sorted({r[1] for r in ids})
    for s in SECTIONS:
        if scans is None:
            trim_heap()  # (a section read back: what the last one held goes back first)
        yield s, _section(conn, run_id, s, codes, freq, scans[s] if scans else None, raw, pure[s] if pure else None)


def store_parts(conn: Connection, run_id: int, scans: dict[str, _SectionScan] | None = None,
                pure: dict[str, _Pure] | None = None, trace_ids: set[tuple[str, str]] | None = None) -> None:
    """Compute and store a run's report parts (at ingest, in the file's transaction, from the ``scans`` it fed,
    and ``pure``, :func:`pure_parts` of them when it was computed aside; and by migration 0007): `report` then
    reads a few kilobytes instead of every op. JSON keeps floats to the last bit and keys in order, so the
    stored document is the computed one. ``trace_ids``: the trace section's (trace id, replay session) pairs as
    ingest met them (else read)."""
    freq = float(conn.execute(select(t.run.c.freq_mhz).where(t.run.c.id == run_id)).scalar_one())
    conn.execute(t.run_report.delete().where(t.run_report.c.run_id == run_id))
    with dialect.small_sorts(conn):  # (a small page cache: a million-op ingest stays within its memory budget)
        pieces = _pieces(_parts(conn, run_id, freq, scans, raw=True, pure=pure, trace_ids=trace_ids))
        big = scans is None and conn.execute(select(func.count()).select_from(t.op).where(
            t.op.c.run_id == run_id)).scalar_one() > ReportFeed.MAX_OPS
        if big and compresses(conn):  # (a big run's document, compressed as it is made: the same bytes again)
            packed, size = pack_pieces(pieces)
        else:  # (a 100,000-op run's parts: 4.3 MB of JSON, 0.4 MB packed)
            packed, size = pack_text("".join(pieces), compresses(conn))
    conn.execute(t.run_report.insert().values(run_id=run_id, raw_size=size, doc=packed))


def backfill_parts(conn: Connection) -> int:
    """Store the report parts of every run that has none (runs stored before migration 0007); returns how many."""
    missing = list(conn.execute(text("SELECT id FROM run WHERE id NOT IN (SELECT run_id FROM run_report) "
                                     "ORDER BY id")).scalars())
    for run_id in missing:
        store_parts(conn, run_id)
    return len(missing)


def check_parts(conn: Connection, step: Callable[[], None] | None = None) -> list[str]:
    """Problems: runs whose stored report parts are missing or differ from parts computed again from their ops
    (``step`` is called after each run)."""
    problems = []
    stored = {r: unpack_text(d, n) for r, d, n in conn.execute(
        select(t.run_report.c.run_id, t.run_report.c.doc, t.run_report.c.raw_size)).all()}
    for run_id, freq in conn.execute(select(t.run.c.id, t.run.c.freq_mhz).order_by(t.run.c.id)).all():
        if run_id not in stored:
            problems.append(f"run {run_id}: no stored report parts (`warehouse db upgrade` builds them)")
        else:
            # compared as JSON text: the same keys, order and digits (and NaN equals NaN)
            doc = {k: json.dumps(v) for k, v in json.loads(stored[run_id]).items()}
            fresh = {k: json.dumps(v) for k, v in compute_parts(conn, run_id, float(freq)).items()}
            if doc != fresh:
                where = next((k for k in fresh if doc.get(k) != fresh[k]), "keys")
                problems.append(f"run {run_id}: the stored report disagrees with its ops (first: {where})")
        if step:
            step()
    return problems


def build_report(engine: Engine, run_id: int) -> dict[str, Any]:
    """The oracle's JSON document for a stored run: the run's own facts and its stored report parts (one
    snapshot: a run deleted meanwhile is not found, never half-read). A run without stored parts (a part deleted
    by hand) gets them computed from its ops, as they would have been stored."""
    from warehouse.db import read_snapshot
    from warehouse.reportdoc import report_doc

    with read_snapshot(engine) as conn:
        doc = report_doc(conn, run_id, compute=compute_parts)
    assert doc is not None  # (with ``compute`` given)
    return doc
