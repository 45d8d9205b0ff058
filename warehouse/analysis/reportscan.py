"""The report's scans: what the OPT_BASELINE report sums, one section of one run at a time, in the oracle's order
(:class:`_SectionScan`), fed either by ingest as it writes the ops (:class:`ReportFeed`, no second read) or by a
read of ``op_detail`` (:mod:`warehouse.analysis.report`, which assembles the document from them)."""
from __future__ import annotations

import json
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

from sqlalchemy import Connection, text

from warehouse.capture.plan import FEED_MAX_OPS
from warehouse.registry.columns import AT
from warehouse.registry.contract import EAGER, SECTIONS, TRACE, is_post
from warehouse.registry.measures import KEY_TEXTS, REPORT_TABLES
from warehouse.store import dialect


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

    MAX_OPS = FEED_MAX_OPS  # beyond, read back: the scans and the fork that computes their parts cost memory

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
        """One op of the eager or trace section (``typed`` as :data:`warehouse.registry.columns.OP_COLUMNS`)."""
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
