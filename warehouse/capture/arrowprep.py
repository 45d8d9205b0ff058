"""The columnar fast path of :mod:`warehouse.capture.rowprep`: a plain capture's rows parsed by pyarrow's compiled CSV
reader and prepared column by column, giving exactly the batches the line-by-line path gives.

A capture as tt-metal writes it (no quote, no CR, no NUL byte, no blank line: :func:`usable`) is read by
``pyarrow.csv`` in windows of a few thousand rows, every cell a string. What the line path does per cell in
Python is done here per column in C: the static cells of a row joined into its interning key, the export cells
(stored-once ones replaced) joined into their JSON, the typed columns cast. Python is left with one loop over
the rows (tokens, attribution's input) and the perf shape of each new static tuple.

Whatever this path does not handle exactly (a row of the wrong width, a cell that needs escaping or holds a
separator, bytes that are not UTF-8, a line longer than two blocks) stops it *before* the window it is in changes
any state: :func:`columnar_batches` returns how many rows it gave, and the line path reads on from the next one
(it reports the problem, if it is one, naming its row). Numbers that the compiled casts might read otherwise than
Python does (blanks, ``+``, ``_``, NaN, an overflow) are parsed by the line path's own column code.
"""
from __future__ import annotations

import io
from collections.abc import Generator, Iterator
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from warehouse.capture.packing import cut_chunks
from warehouse.registry.columns import DIGITS, FLOAT, INT32, TEXT
from warehouse.capture.cellcodec import NULL
from warehouse.capture.prepared import BATCH, MAX_TOKENS, TYPED, Batch, Chunk, Preparer, parse_int

# Measured on a realistic 100k-op capture: windows of 1 batch make the whole ingest ~15 % slower, of 8 slower too
# (the writer waits longer for the first); 2-4 batches are the fastest, and 2 hold ~70 MiB less than 4
WINDOW = 2 * BATCH  # rows prepared at a time (a multiple of BATCH: batches are cut as the line path cuts them)
BLOCK = 2 << 20  # bytes read and parsed at a time (a line longer than about two sends the file to the line path)
SEP = "\x1f"  # joins a row's static cells into its key and its export cells before the JSON (never in tt-metal's)
_NULL = str(NULL)
# A cell these patterns accept is read by the cast exactly as the line path reads it (float(), int(), strip()).
_INT32 = 2 ** 31
_TEXT_EDGE = r"^[^!-~]|[^!-~]$"  # a cell that may start or end with a blank: Python's strip() decides
_CANONICAL = {kind: rf"^(?:0|-?[1-9][0-9]{{0,{digits - 1}}})$" for kind, digits in DIGITS.items()}
# (a quote needs escaping too, but the columnar path reads no file that has one; \x1d marks the stored-once cells:
# counted instead)
_NEEDS_ESCAPE = r'[\\\x00-\x1c\x1e\x1f]'


class _Irregular(Exception):
    """A window the columnar path does not prepare exactly; the line path takes over at its first row."""


def columnar_batches(prep: Preparer) -> Generator[Batch, None, int | None]:
    """The batches of ``prep``'s file, from pyarrow; returns None when every row was given, else the number of
    rows given (a multiple of :data:`BATCH`) where the line path must go on."""
    reader = prep.reader
    width = len(reader.layout.header)
    names = [f"c{i}" for i in range(width)]
    done = 0
    schema = pa.schema([(name, pa.string()) for name in names])
    options = (pacsv.ReadOptions(use_threads=False, block_size=2 * BLOCK, column_names=names),
               pacsv.ParseOptions(quote_char=False, double_quote=False, newlines_in_values=False),
               pacsv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()),
                                    strings_can_be_null=False, quoted_strings_can_be_null=False))
    blocks = _blocks(reader.rest(), *options)
    pool = pa.default_memory_pool()
    window = _Window(prep)
    pending: list[pa.RecordBatch] = []
    have = 0
    while True:
        try:
            rb = next(blocks)
        except StopIteration:
            rb = None
        except (_Irregular, pa.ArrowException, OSError):
            return _stop(prep, done)
        if rb is not None:
            pending.append(rb)
            have += rb.num_rows
            if have < WINDOW:
                continue
        take = have if rb is None else have - have % BATCH
        table = pa.Table.from_batches(pending, schema=schema)
        try:
            batches = window.prepare(table.slice(0, take).combine_chunks(), done, final=rb is None)
        except _Irregular:
            return _stop(prep, done)
        yield from batches
        done += take
        reader.rows_read = done
        if rb is None:
            return None
        pending, have = table.slice(take).to_batches(), have - take
        del table, batches
        # (the allocator keeps freed pages otherwise: ~2x the memory of a 100k-op ingest; a columnar file is never
        # big, see warehouse.capture.plan, so the C heap needs no trimming here)
        pool.release_unused()


def _blocks(f: io.BufferedIOBase, *options: Any) -> Iterator[pa.RecordBatch]:
    """The rows of ``f`` parsed a block of whole lines at a time. (Not pyarrow's streaming reader: it reads ahead
    from the Python file on a thread of its own, and the memory it holds grows to ~4x what the rows need.)"""
    carry = b""
    while True:
        data = f.read(BLOCK)
        if data:
            data = carry + data if carry else data
            cut = data.rfind(b"\n") + 1
            if not cut:
                if len(data) > BLOCK:
                    raise _Irregular  # a line longer than a block: the line path reads it
                carry = data
                continue
            data, carry = data[:cut], data[cut:]
        elif carry:
            data, carry = carry, b""
        else:
            return
        yield from pacsv.read_csv(pa.BufferReader(data), *options).to_batches()


def _stop(prep: Preparer, done: int) -> int:
    """Hand over to the line path: its token table is keyed by cell tuples, ours by joined cells."""
    n = len(prep.reader.layout.static_idx)
    joined = cast(dict[str, int], prep.tokens)  # the columnar path keyed them by joined text
    prep.tokens = {(tuple(k.split(SEP)) if n else ()): v for k, v in joined.items()}
    return done


class _Window:
    """Prepares windows of one file's rows (a pyarrow table of string columns) into batches."""

    def __init__(self, prep: Preparer):
        self.prep = prep
        lay = prep.reader.layout
        self.static_idx, self.volatile_idx = lay.static_idx, lay.volatile_idx
        cells = prep.cells
        self.type_i, self.name_i, self.attr_i, self.host_i, self.arch_i = (
            cells.op_type, cells.name, cells.attributes, cells.host_start, cells.arch)
        self.typed_at = [lay.col(k.csv) for k in TYPED]
        self.once = [(lay.volatile_idx[o.slot], _CANONICAL[o.column.kind]) for o in prep.once]
        self.once_at = {i for i, _ in self.once}
        # Whether the cells must be checked for the separators and for what JSON escapes: not when the scan saw
        # no such byte in the file (it is hashed again as it is parsed, so these are the bytes parsed).
        self.checked = prep.reader.scan.escapes

    def prepare(self, t: pa.Table, done: int, final: bool) -> list[Batch]:
        """The batches of ``t``, whose first row is row ``done + 1``: checked whole before any state changes."""
        n = t.num_rows
        a = [t.column(i).chunk(0) if t.column(i).num_chunks == 1 else t.column(i).combine_chunks()
             for i in range(t.num_columns)]
        if n:
            sp = pc.equal(a[self.type_i], "signpost") if self.type_i is not None else pa.repeat(False, n)
            ops = pc.invert(sp)
            keys = self._keys(a, n)
            texts = self._texts(a, n, ops)
            typed = self._typed(a, ops, done)
            is_sp = sp.to_pylist()
            sp_idx = pc.indices_nonzero(sp)
            signs = self._signposts(a, sp_idx) if len(sp_idx) else []
            names = a[self.name_i].to_pylist()
            self._arch(a, ops)
        else:
            keys, texts, typed, is_sp, signs, names = pa.array([], pa.string()), [], [], [], [], []
        return self._batches(t, done, final, n, keys, texts, typed, is_sp, signs, names)

    def _keys(self, a: list[pa.Array], n: int) -> pa.Array:
        """Each row's static cells joined: its key in the token table (left to pyarrow: the rows' keys are
        dictionary-encoded a batch at a time, so only a batch's distinct keys become Python strings)."""
        static = [a[i] for i in self.static_idx]
        if not static:
            return pa.repeat("", n)
        joined = pc.binary_join_element_wise(*static, SEP) if len(static) > 1 else static[0]
        if self.checked and (pc.sum(pc.count_substring(joined, SEP)).as_py() or 0) != n * (len(static) - 1):
            raise _Irregular  # a cell holds the separator
        return joined

    def _texts(self, a: list[pa.Array], n: int, ops: pa.Array) -> list[str]:
        """Each row's export cells as JSON, as :func:`warehouse.capture.cellcodec.encode_volatile` makes them (the op's
        canonical cells of the stored-once columns JSON null)."""
        cols, nulls = [], 0
        for i in self.volatile_idx:
            col = a[i]
            for at, pattern in self.once:
                if at == i:
                    hit = pc.and_(ops, pc.match_substring_regex(col, pattern))
                    nulls += pc.sum(hit).as_py() or 0
                    col = pc.if_else(hit, _NULL, col)
            cols.append(col)
        if not cols:
            return ["[]"] * n
        # The JSON's separators are the join's: a cell holds no quote and no comma (the columnar path reads files
        # without quotes), so the trailing empty cells are the trailing run of quotes and commas.
        first = pc.binary_join_element_wise('["', cols[0], "")
        joined = pc.binary_join_element_wise(first, *cols[1:], '","') if len(cols) > 1 else first
        if self.checked and ((pc.sum(pc.count_substring(joined, _NULL)).as_py() or 0) != nulls
                             or pc.any(pc.match_substring_regex(joined, _NEEDS_ESCAPE)).as_py()):
            raise _Irregular  # a cell needs escaping in JSON, or holds the NULL mark: encode_volatile's slow path
        trimmed = pc.utf8_rtrim(joined, characters='",')
        text = pc.binary_join_element_wise(trimmed, '"]', "")
        empty = pc.equal(trimmed, "[")  # (a row whose cells are all empty)
        if pc.any(empty).as_py():
            text = pc.if_else(empty, "[]", text)
        if nulls:
            text = pc.replace_substring(text, f'"{_NULL}"', "null")
        return text.to_pylist()

    def _typed(self, a: list[pa.Array], ops: pa.Array, done: int) -> list[tuple]:
        """The TYPED values of the op rows, as :meth:`warehouse.capture.prepared.Cells.typed` gives them."""
        n_ops = pc.sum(ops).as_py() or 0
        cols: list[list] = []

        def rows() -> list[int]:  # (the op rows' numbers: asked for by a warning only)
            return [done + 1 + i for i in pc.indices_nonzero(ops).to_pylist()]
        for j, (k, at) in enumerate(zip(TYPED, self.typed_at)):
            if at is None:
                cols.append([None] * n_ops)
                continue
            col = a[at].filter(ops)
            vals = self._cast(k.kind, col)
            cols.append(vals if vals is not None else self.prep.cells.column(j, col.to_pylist(), rows))
        return list(zip(*cols))

    @staticmethod
    def _cast(kind: str, col: pa.Array) -> list | None:
        """``col`` typed by the compiled cast, or None when some cell is not in the form it reads as Python does.
        The cast refuses what Python's float() and int() would read otherwise (blanks, ``_``, non-ASCII digits,
        an int64 overflow): only what it accepts and Python does not is looked for (hexadecimal integers, numbers
        that are not finite, 32-bit overflows), a search a column rather than a regular expression a cell."""
        if kind == TEXT:
            if pc.any(pc.match_substring_regex(col, _TEXT_EDGE)).as_py():
                return None
            return [v or None for v in col.to_pylist()]
        if kind != FLOAT and (pc.any(pc.match_substring(col, "x")).as_py() or pc.any(pc.match_substring(col, "X"))
                              .as_py()):
            return None  # (the cast reads 0x10 as 16; Python's int() refuses it)
        empty = pc.equal(col, "")
        try:
            vals = pc.cast(pc.if_else(empty, pa.scalar(None, pa.string()), col),
                           pa.float64() if kind == FLOAT else pa.int64())
        except pa.ArrowInvalid:
            return None
        if kind == FLOAT and pc.all(pc.is_finite(vals)).as_py() is False:
            return None  # NaN, or an infinity (an overflow too): the line path counts it as not a number
        if kind == INT32 and len(vals) - vals.null_count:
            low, high = pc.min_max(vals).values()
            if low.as_py() < -_INT32 or high.as_py() >= _INT32:
                return None  # (beyond 32 bits: the line path counts it as not a number)
        return vals.to_pylist()

    def _signposts(self, a: list[pa.Array], idx: pa.Array) -> list[tuple]:
        """(message, host start) of each signpost row, as the line path reads them."""
        n = len(idx)
        msgs = a[self.attr_i].take(idx).to_pylist() if self.attr_i is not None else [""] * n
        hosts = a[self.host_i].take(idx).to_pylist() if self.host_i is not None else [None] * n
        return [(m.strip() or None, parse_int(h) if h is not None else None) for m, h in zip(msgs, hosts)]

    def _arch(self, a: list[pa.Array], ops: pa.Array) -> None:
        """The first op's DEVICE ARCH (the first that is not blank), once."""
        if self.prep.arch is None and self.arch_i is not None:
            for v in a[self.arch_i].filter(ops).to_pylist():
                if v.strip():
                    self.prep.arch = v.strip()
                    return

    def _batches(self, t: pa.Table, done: int, final: bool, n: int, keys: pa.Array, texts: list[str],
                 typed: list[tuple], is_sp: list[bool], signs: list[tuple], names: list[str]) -> list[Batch]:
        """Cut the window in batches as the line path does, giving tokens and new perf shapes in row order."""
        prep = self.prep
        tokens, shaped = prep.tokens, prep.shaped
        n_static = len(self.static_idx)
        starts = list(range(0, n, BATCH))
        if final and n % BATCH == 0:
            starts.append(n)  # (the line path ends with a batch of the rows after the last whole one: maybe none)
        typed_it, sign_it = iter(typed), iter(signs)
        out = []
        for s in starts:
            b = Batch(first_token=prep.next_token)
            rows, new_keys, need = b.rows, b.keys, []
            e = min(s + BATCH, n)
            # The batch's distinct keys in the order they first appear (the dictionary's order): new ones take
            # their tokens in that order, as the line path gives them row by row.
            enc = pc.dictionary_encode(keys.slice(s, e - s))
            own = []
            for key in enc.dictionary.to_pylist():
                tok = tokens.get(key)
                if tok is None:
                    tok = tokens[key] = prep.next_token
                    prep.next_token += 1
                    new_keys.append(tuple(key.split(SEP)) if n_static else ())
                own.append(tok)
            row_toks = [own[i] for i in enc.indices.to_pylist()]
            for w, tok in zip(range(s, e), row_toks):
                row_no = done + w + 1
                if is_sp[w]:
                    rows.append((row_no, names[w], tok, None, *next(sign_it)))
                else:
                    if tok not in shaped:
                        shaped.add(tok)
                        need.append((w, tok))
                    rows.append((row_no, names[w], tok, next(typed_it)))
            prep.pending += zip(range(done + s + 1, done + e + 1), row_toks, texts[s:e])
            if need:
                whole = t.take([w for w, _ in need])
                cells = zip(*[whole.column(i).to_pylist() for i in range(whole.num_columns)])
                for (w, tok), row in zip(need, cells):
                    shape = prep.analyzer.shape(list(row), names[w])
                    b.shapes.append((tok, shape.digest(), shape))
            b.chunks = [Chunk([r for r, _, _ in part], [x for _, _, x in part], [tok for _, tok, _ in part])
                        for part in cut_chunks(prep.pending, final and s == starts[-1])]
            if len(tokens) > MAX_TOKENS:  # (as the line path bounds it, at the same batches)
                tokens.clear()
                shaped.clear()
                b.forget = True
            b.bytes_read = prep.reader.bytes_read
            out.append(b)
        return out
