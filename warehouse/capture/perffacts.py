"""What tt-perf-report knows about a device op that does not change from one call to the next.

`warehouse perf` reproduces the per-op table of tt-perf-report 1.4.1 (Tenstorrent's own reader of these CSVs,
Apache-2.0, `src/tt_perf_report/perf_report.py`). Its figures split in two:

* **static facts** of an op (this module): op category, the matmul / conv problem size and hence the FLOPs and
  DRAM bytes it must move, the datatypes and math fidelity, DRAM sharding. They depend only on the row's static
  cells (shapes, memory, datatypes, attributes), so ingest computes them once per distinct static cell tuple and
  interns them in ``perf_shape`` (cheap: a run has hundreds of distinct tuples, not one per op);
* **timed figures** (:mod:`warehouse.analysis.perf`): device time, op-to-op gap, achieved GB/s and TFLOPs, % of peak,
  Bound. They need the op's duration, so they are computed when read, by the ``op_perf`` view for SQL and by
  :mod:`warehouse.analysis.perf` for the command (held equal by tests).

The facts below (peaks, bandwidths, core counts, categories) are the public facts of tt-perf-report 1.4.1; the
code is ours. Cells are read as pandas reads them there: the texts in :data:`NA_TEXTS` are missing values.
"""
from __future__ import annotations

import hashlib
import json
import math
import re

from warehouse.capture.csvfile import VOLATILE
from collections.abc import Callable
from dataclasses import dataclass, fields

# --- Facts (tt-perf-report 1.4.1, perf_report.py: ArchitectureSpec registrations) -------------------------------
# name: (worker cores, cores of a DRAM-sharded matmul, DRAM GB/s, TFLOPs per core for HiFi4, HiFi3, HiFi2, LoFi).
# Blackhole-family peaks are 4096 x 1.35 GHz per core divided by the fidelity phases (4, 3, 2, 1); Wormhole's are
# its published chip peaks over 72 cores, HiFi3 derived as HiFi4 x 4/3.
_WH_HIFI4 = 74 / 72
_BH = 4096 * 1.35 / 1000
_N1 = 4096 * 0.65 / 1000
ARCHS: dict[str, tuple[int, int, float, float, float, float, float]] = {
    "wormhole": (64, 12, 288.0, _WH_HIFI4, _WH_HIFI4 * 4 / 3, 148 / 72, 262 / 72),
    "blackhole": (110, 8, 512.0, _BH / 4, _BH / 3, _BH / 2, _BH),
    "blackhole_p100": (110, 7, 448.0, _BH / 4, _BH / 3, _BH / 2, _BH),
    "bh20": (20, 8, 512.0, _BH / 4, _BH / 3, _BH / 2, _BH),
    "n1": (20, 8, 120.0, _N1 / 4, _N1 / 3, _N1 / 2, _N1),
}
ARCH_ALIASES = {"wormhole_b0": "wormhole", "p100": "blackhole_p100", "p100a": "blackhole_p100",
                "blackhole_p100a": "blackhole_p100", "p150": "blackhole", "p150a": "blackhole",
                "p150b": "blackhole", "p150c": "blackhole", "blackhole_p150": "blackhole"}
FIDELITIES = ("HiFi4", "HiFi3", "HiFi2", "LoFi")  # the order of the TFLOPs columns above
DEFAULT_ARCH = "wormhole"  # tt-perf-report's default when a file names no DEVICE ARCH


def normalize_arch(name: str | None) -> str | None:
    """tt-perf-report's architecture name for a ``DEVICE ARCH`` cell (None: unknown to it)."""
    n = (name or DEFAULT_ARCH).lower()
    n = ARCH_ALIASES.get(n, n)
    return n if n in ARCHS else None


# Op categories (tt-perf-report 1.4.1, OPERATION_CATEGORIES): the first token of the op code, or the token
# with "DeviceOperation" appended; host fallbacks carry "(torch)" anywhere in the op code.
HOST_MARKER = "(torch)"
_CATEGORIES = {
    "Compute": "AllGatherMatmul RMSAllGather ScaledDotProductAttentionDecode SdpaDecode RotaryEmbeddingLlama "
               "RotaryEmbedding SDPAOperation OptimizedConvNew Conv2d Matmul BinaryNg Binary Unary Pool2D UpSample "
               "UpsampleOperation GroupNorm GridSample Accumulation LayerNorm ScaledDotProductAttention Reduce "
               "FastReduceNC ArgMax Softmax Embeddings MinimalMatmulOp SparseMatmul IntImg GridSampleOperation "
               "MoeGroupedTopk MaskedBincount OffsetCumsum UnifiedRoutedExpertFfn PostCombineReduce",
    "DM": "PagedUpdateCacheDeviceOperation Move Copy InterleavedToSharded ShardedToInterleaved "
          "InterleavedToShardedPartial ShardedToInterleavedPartial Halo Where CloneOperation Reshard",
    "CCL": "AllGather AllGatherAsync AllGatherConcat ReduceScatter ReduceScatterMinimalAsync "
           "ReduceScatterMinimalDirect StridedReduceScatterAsync LlamaReduceScatter DeepseekMoEReduceScatter "
           "StridedAllGatherAsync SliceReshardAsync SelectiveReduceCombine ReduceToRootOp AllReduceAsync "
           "AllToAllAsync AllToAllAsyncGeneric AllToAllDispatch AllToAllDispatchMetadata AllToAllCombine "
           "AllBroadcast Broadcast SendAsync RecvAsync SendDirectAsync RecvDirectAsync Dispatch Combine",
    "TM": "NLPCreateHeadsDecodeDeviceOperation NLPCreateQKVHeadsDecodeDeviceOperation "
          "NLPConcatHeadsDecodeDeviceOperation Fold CreateQKVHeadsDeviceOperation ConcatenateHeads Reshape "
          "ReshapeView Transpose Permute Slice PaddedSlice SliceWrite Concat Split Repeat TilizeWithValPadding "
          "Tilize UntilizeWithUnpadding Untilize Typecast NLPConcatHeads NlpCreateHeads Ternary FillPad "
          "PadDeviceOperation",
}
_CATEGORY_OF = {f"{op}{suffix}": cat for cat, ops in _CATEGORIES.items() for op in ops.split()
                for suffix in ("", "DeviceOperation")}
COLLECTIVE = ("AllGather", "ReduceScatter", "AllReduce")  # merged across devices by their mean duration

# pandas' default missing-value texts: tt-perf-report reads the CSV with pandas, so these cells are NaN there.
NA_TEXTS = frozenset(["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                      "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"])
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
MAX_CORES = 1 << 20  # larger "core counts" are corrupt cells (tt-perf-report: MAX_PLAUSIBLE_CORE_COUNT)
MAX_DIM = 1 << 32  # larger tensor dimensions are corrupt cells (MAX_PLAUSIBLE_TENSOR_DIM)
_SHORT = {"FLOAT32": "FP32", "BFLOAT16": "BF16", "BFLOAT8_B": "BFP8", "BFLOAT4_B": "BFP4"}


def category(op_code: str) -> str:
    """tt-perf-report's op category: Compute, DM, CCL, TM, Host or Other."""
    if HOST_MARKER in op_code:
        return "Host"
    tokens = op_code.split(maxsplit=1)
    return _CATEGORY_OF.get(tokens[0], "Other") if tokens else "Other"


def sanitize(text: str) -> str:
    """Control characters dropped, as tt-perf-report does to every op code it prints."""
    return _CONTROL.sub("", text)


def finite(text: str | None) -> float | None:
    """A cell as a finite float, or None (missing, not a number, infinite)."""
    if text is None or text in NA_TEXTS:
        return None
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def whole(text: str | None) -> int | None:
    """A cell holding a whole number, or None (a fraction is a corrupt cell, never truncated)."""
    v = finite(text)
    return int(v) if v is not None and v.is_integer() else None


def core_count(text: str | None) -> int | None:
    """A plausible core count, or None."""
    v = whole(text)
    return v if v is not None and 0 < v <= MAX_CORES else None


def dim(text: str | None) -> int | None:
    """A tensor dimension cell, ``physical[logical]`` or bare: the physical size, or None."""
    if text is not None and "[" in text and "]" in text:
        text = text.split("[")[0]
    v = whole(text)
    return v if v is not None and 0 < v <= MAX_DIM else None


def csv_format(header: list[str]) -> str:
    """tt-perf-report's CSV era: ``v2.1`` (DEVICE ARCH / AVAILABLE WORKER CORE COUNT), ``v2`` (_PAD[LOGICAL]
    shapes) or ``v1``."""
    if "DEVICE ARCH" in header or "AVAILABLE WORKER CORE COUNT" in header:
        return "v2.1"
    return "v2" if any("_PAD[LOGICAL]" in h for h in header) else "v1"


@dataclass(frozen=True)
class PerfShape:
    """The static facts of an op for the per-op analysis (one ``perf_shape`` row)."""

    category: str
    is_host: bool
    label: str  # tt-perf-report's "OP Code": the op code, with the problem size / config of matmul, conv, halo
    analysis: str  # full (matmul: DRAM and FLOPs), flops_only (conv), none
    peak_fidelity: str | None  # MATH FIDELITY when tt-perf-report knows its peak (HiFi4, HiFi3, HiFi2, LoFi)
    math_fidelity: str | None  # the "Math Fidelity" text: "HiFi2 BF16 x BFP8 => BF16" or "BF16, BF16 => BF16"
    flop_count: float | None  # floating-point operations of one call
    dram_bytes: float | None  # bytes a matmul moves from and to DRAM
    dram_sharded: bool  # a DRAM-sharded matmul runs on the architecture's DRAM-interface cores
    cores: int | None  # CORE COUNT, when plausible
    available_cores: int | None  # AVAILABLE WORKER CORE COUNT, when plausible
    sub_device: str | None  # SUB DEVICE ID
    in0_dtype: str | None
    in1_dtype: str | None
    out_dtype: str | None
    in0_memory: str | None
    inner_block: int | None  # in0_block_w of the program config
    subblock_h: int | None
    subblock_w: int | None
    # The report's static cells (OPT_BASELINE prints them): OP TYPE as written, MATH FIDELITY, INPUT_0_MEMORY and
    # OUTPUT_0_MEMORY stripped (None when empty), input 0's logical shape WxZxYxX by the oracle's rule.
    op_type: str = ""
    fidelity: str | None = None
    input0_shape: str = ""
    input0_memory: str | None = None
    output0_memory: str | None = None
    # every input / output tensor with a cell: (io, idx, w, z, y, x, w_pad, z_pad, y_pad, x_pad, layout, datatype,
    # memory); the perf_tensor rows
    tensors: tuple = ()

    def digest(self) -> bytes:
        """The interning key: a hash of every fact. (The same JSON as ``asdict``, whose recursive deep copy
        cost 0.4 ms a shape: a file whose every row has its own ATTRIBUTES has a shape per row.)"""
        got = self.__dict__.get("_digest")  # (memoised shapes are shared by many rows: hash each once)
        if got is None:
            facts = {f: getattr(self, f) for f in _SHAPE_FIELDS}
            got = self.__dict__["_digest"] = hashlib.blake2b(json.dumps(facts, sort_keys=True).encode(),
                                                             digest_size=16).digest()
        return got


_SHAPE_FIELDS = tuple(f.name for f in fields(PerfShape))
# op codes whose analysis reads ATTRIBUTES (a matmul's program config, a conv's, a halo's); any other op reads
# only its program_config
_ATTRS_READ_BY = ("Matmul", "OptimizedConvNew", "Conv2d", "HaloDeviceOperation")
_MEMO_MAX = 8192
_ORACLE_DIM = re.compile(r"\s*([0-9]+)(?:\[([0-9]+)\])?")


def _oracle_logical(v: str) -> str:
    """'32[16]' (padded[logical]) -> '16'; '7' -> '7'; anything else '?' (the oracle's rule for input 0)."""
    m = _ORACLE_DIM.match(v)
    return (m.group(2) or m.group(1)) if m else "?"


_TENSOR_COLUMN = re.compile(r"(INPUT|OUTPUT)_(\d+)_(W|Z|Y|X|LAYOUT|DATATYPE|MEMORY)(_PAD\[LOGICAL\])?")
_DIM_PAIR = re.compile(r"(\d+)(?:\[(\d+)\])?")
_MAX_STORED_DIM = (1 << 63) - 1


def _dim_pair(text: str) -> tuple[int | None, int | None]:
    """'32[16]' -> (32, 16); '7' -> (7, 7); anything else (None, None)."""
    m = _DIM_PAIR.fullmatch(text)
    if not m:
        return None, None
    pad = int(m.group(1))
    logical = int(m.group(2)) if m.group(2) else pad
    if pad > _MAX_STORED_DIM or logical > _MAX_STORED_DIM:  # a 64-bit column; a corrupt cell is no dimension
        return None, None
    return pad, logical


def _attribute(attrs: str, name: str) -> str | None:
    q = re.search(rf"['\"]{re.escape(name)}['\"]\s*:\s*['\"]([^'\"]+)['\"]", attrs)
    if q:
        return q.group(1)
    u = re.search(rf"['\"]{re.escape(name)}['\"]\s*:\s*([^;,\}}\s]+)", attrs)
    return u.group(1) if u else None


def _int_attribute(attrs: str, name: str) -> int | None:
    v = _attribute(attrs, name)
    if v is None or v == "std::nullopt":
        return None
    try:
        return int(v)
    except ValueError:
        return None


def _bool_attribute(attrs: str, name: str, default: bool) -> bool:
    v = _attribute(attrs, name)
    return default if v is None else v.lower() == "true"


def _dtype_size(dtype: str | None) -> float:
    m = re.search(r"\d+", dtype or "")
    return int(m.group()) / 8 if m else 4


def _short(dtype: str | None, present: bool) -> str:
    """A datatype's short name as tt-perf-report prints it inside a text ("nan" for an empty cell, "None" for a
    column the file lacks)."""
    if not present:
        return "None"
    return "nan" if dtype is None else _SHORT.get(dtype, dtype)


class Analyzer:
    """Computes :class:`PerfShape` for the rows of one file (one header)."""

    def __init__(self, header: list[str]):
        self.header = header
        self.index = {h: i for i, h in enumerate(header)}  # the last of duplicate names, as pandas keeps
        self.suffix = "" if csv_format(header) == "v1" else "_PAD[LOGICAL]"
        # every column a shape may read: all but ATTRIBUTES (keyed apart) and the measured ones, which it never
        # reads (durations, cycles, times, call counts, trace ids, utilisation, device id)
        self._shape_cols = [i for i, h in enumerate(header) if h != "ATTRIBUTES" and not VOLATILE.search(h)]
        self._memo: dict[tuple, PerfShape] = {}
        # (io, idx) -> field -> column index; a field is W..X (plain), W_PAD..X_PAD (padded[logical]) or a text
        self.tensor_cols: dict[tuple[str, int], dict[str, int]] = {}
        for name, i in self.index.items():
            m = _TENSOR_COLUMN.fullmatch(name)
            if m:
                field = m.group(3) + ("_PAD" if m.group(4) else "")
                self.tensor_cols.setdefault((m.group(1).lower(), int(m.group(2))), {})[field] = i

    def tensors(self, cells: list[str] | tuple[str, ...]) -> tuple:
        """The input / output tensor descriptors of a row (tensors with no cell at all are left out)."""
        out = []
        for (io, idx), cols in sorted(self.tensor_cols.items()):
            vals = {f: cells[i].strip() for f, i in cols.items() if i < len(cells)}
            if not any(vals.values()):
                continue
            dims, pads = [], []
            for d in "WZYX":
                pad, logical = _dim_pair(vals.get(f"{d}_PAD", ""))
                if pad is None:
                    pad = logical = _dim_pair(vals.get(d, ""))[0]
                dims.append(logical)
                pads.append(pad)
            out.append((io, idx, *dims, *pads, vals.get("LAYOUT") or None, vals.get("DATATYPE") or None,
                        vals.get("MEMORY") or None))
        return tuple(out)

    def getter(self, cells: list[str] | tuple[str, ...]) -> Callable[[str], str | None]:
        """``get(name)``: the raw cell of column ``name`` (None: missing value or column)."""
        index = self.index

        def get(name: str) -> str | None:
            i = index.get(name)
            if i is None or i >= len(cells):
                return None
            v = cells[i]
            return None if v in NA_TEXTS else v
        return get

    def _dims(self, get: Callable[[str], str | None], tensor: str) -> list[int | None]:
        return [dim(get(f"{tensor}_{d}{self.suffix}")) for d in "WZYX"]

    def shape(self, cells: list[str] | tuple[str, ...], op_code: str) -> PerfShape:
        """The static facts of an op row whose op code is ``op_code``; memoised on the cells they read, so that
        rows that differ only in an ATTRIBUTES the analysis ignores (a program's ids and seeds, on every row of
        some captures) cost one computation, not one each."""
        attrs = self._cell(cells, "ATTRIBUTES")
        code = sanitize(op_code)
        uses_attrs = "program_config" in attrs or any(k in code for k in _ATTRS_READ_BY)
        key = (op_code, attrs if uses_attrs else None,
               tuple(cells[i] if i < len(cells) else None for i in self._shape_cols))
        hit = self._memo.get(key)
        if hit is None:
            if len(self._memo) >= _MEMO_MAX:
                self._memo.clear()
            hit = self._memo[key] = self._shape(cells, op_code)
        return hit

    def _shape(self, cells: list[str] | tuple[str, ...], op_code: str) -> PerfShape:
        get = self.getter(cells)
        code = sanitize(op_code)
        attrs = get("ATTRIBUTES") or ""
        dts = [get(c) for c in ("INPUT_0_DATATYPE", "INPUT_1_DATATYPE", "OUTPUT_0_DATATYPE")]
        has = [c in self.index for c in ("INPUT_0_DATATYPE", "INPUT_1_DATATYPE", "OUTPUT_0_DATATYPE")]
        in0, in1, out = dts
        text = _SHORT.get(in0, in0) if in0 is not None else ""
        text += f", {_SHORT.get(in1, in1)}" if in1 is not None else ""
        text += f" => {_SHORT.get(out, out)}" if out is not None else ""
        math_fidelity: str | None = text.strip()
        label, analysis, flop_count, dram_bytes, sharded = code, "none", None, None, False
        cores = core_count(get("CORE COUNT"))
        fidelity = get("MATH FIDELITY")
        if "Matmul" in code:
            analysis = "full"
            size, flop_count, dram_bytes, sharded = self._matmul(get, attrs, op_code)
            label = f"{code} {size}"
        elif "OptimizedConvNew" in code or "Conv2d" in code:
            analysis = "flops_only"
            size, flop_count = self._conv(get, attrs)
            label = f"{code} {size} {_conv_config(attrs)}"
        elif "HaloDeviceOperation" in code:
            label = f"{code} {_halo_config(attrs)}"
        if analysis != "none":
            # NaN is truthy in tt-perf-report: an empty MATH FIDELITY still prints ("nan ...")
            math_fidelity = (f"{fidelity if fidelity is not None else 'nan'} {_short(in0, has[0])} x "
                             f"{_short(in1, has[1])} => {_short(out, has[2])}").strip()
        in0_mem = get("INPUT_0_MEMORY")
        block = sub_h = sub_w = None
        if "program_config" in attrs:
            block, sub_h, sub_w = (int(m.group(1)) if (m := re.search(rf"{k}=(\d+)", attrs)) else None
                                   for k in ("in0_block_w", "out_subblock_h", "out_subblock_w"))
        sub = get("SUB DEVICE ID")
        sub_text = None
        if sub is not None and (s := sanitize(sub).strip()):
            w = whole(s)
            sub_text = s[:32] if w is None else str(w)
        return PerfShape(category=category(code), is_host=HOST_MARKER in code, label=label, analysis=analysis,
                         peak_fidelity=fidelity if fidelity in FIDELITIES else None,
                         math_fidelity=math_fidelity or None,
                         flop_count=flop_count, dram_bytes=dram_bytes, dram_sharded=sharded, cores=cores,
                         available_cores=core_count(get("AVAILABLE WORKER CORE COUNT")), sub_device=sub_text,
                         in0_dtype=in0, in1_dtype=in1, out_dtype=out, in0_memory=in0_mem, inner_block=block,
                         subblock_h=sub_h, subblock_w=sub_w, tensors=self.tensors(cells), **self.report_cells(cells))

    def _cell(self, cells: list[str] | tuple[str, ...], name: str) -> str:
        i = self.index.get(name)
        return cells[i] if i is not None and i < len(cells) else ""

    def report_cells(self, cells: list[str] | tuple[str, ...]) -> dict:
        """The static cells the OPT_BASELINE report prints, as the oracle reads them."""
        shape = "x".join(_oracle_logical(self._cell(cells, f"INPUT_0_{d}_PAD[LOGICAL]")
                                         or self._cell(cells, f"INPUT_0_{d}")) for d in "WZYX")
        return {"op_type": self._cell(cells, "OP TYPE"),
                "fidelity": self._cell(cells, "MATH FIDELITY").strip() or None, "input0_shape": shape,
                "input0_memory": self._cell(cells, "INPUT_0_MEMORY").strip() or None,
                "output0_memory": self._cell(cells, "OUTPUT_0_MEMORY").strip() or None}

    def _matmul(self, get: Callable[[str], str | None], attrs: str, op_code: str
                ) -> tuple[str, float | None, float | None, bool]:
        """(size text, FLOPs of one call, DRAM bytes, DRAM-sharded) of a matmul (tt-perf-report: analyze_matmul)."""
        sharded = "MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig" in attrs
        a = self._dims(get, "INPUT_0")
        b = self._dims(get, "INPUT_1")
        o = self._dims(get, "OUTPUT_0")
        dims = [d for d in a + b + o if d is not None]
        if len(dims) != 12:
            return "unknown shape", None, None, sharded
        aw, az, ay, ax, bw, bz, by, bx, ow, oz, oy, ox = dims
        m, k, n = ay, ax, bx
        w, z = max(aw, bw), max(az, bz)
        mem = [get(c) or "" for c in ("INPUT_0_MEMORY", "INPUT_1_MEMORY", "OUTPUT_0_MEMORY")]
        sizes = [_dtype_size(get(c)) for c in ("INPUT_0_DATATYPE", "INPUT_1_DATATYPE", "OUTPUT_0_DATATYPE")]
        if "SparseMatmul" in op_code:
            active, dense = _sparse_batches(aw * az, bw * bz, attrs)
            size = f"active={'?' if active is None else active}/{dense} x {m} x {k} x {n}"
            if active is None:
                return size, None, None, sharded
            nbytes: float = 0
            if "DRAM" in mem[0]:
                nbytes += m * k * sizes[0] * active
            if "DRAM" in mem[1]:
                nbytes += k * n * sizes[1] * active
            if "DRAM" in mem[2]:
                nbytes += m * n * sizes[2] * active
            return size, float(m * k * n * active * 2), nbytes, sharded
        nbytes = 0
        if "DRAM" in mem[0]:
            nbytes += aw * ay * az * ax * sizes[0]
        if "DRAM" in mem[1]:
            nbytes += bw * by * bz * bx * sizes[1]
        if "DRAM" in mem[2]:
            nbytes += ow * oy * oz * ox * sizes[2]
        batch = w * z
        size = f"b={{{batch}}} x {m} x {k} x {n}" if batch > 1 else f"{m} x {k} x {n}"
        return size, float(m * k * n * w * z * 2), nbytes, sharded

    def _conv(self, get: Callable[[str], str | None], attrs: str) -> tuple[str, float | None]:
        """(size text, FLOPs of one call) of a convolution (tt-perf-report: analyze_conv)."""
        nhw = dim(get(f"OUTPUT_0_Y{self.suffix}"))
        ch_in = dim(get(f"INPUT_0_X{self.suffix}"))
        ch_out = dim(get(f"INPUT_1_X{self.suffix}"))
        window = _window(attrs)
        if nhw is None or ch_in is None or ch_out is None or window is None:
            return "unknown shape", None
        m, k, n = nhw, ch_in * window[0] * window[1], ch_out
        return f"{m} x {k} x {n}", float(m * k * n * 2)


def _sparse_batches(a_batch: int, b_batch: int, attrs: str) -> tuple[int | None, int]:
    """(active batches, dense batches) of a sparse matmul whose inputs have ``a_batch`` and ``b_batch`` W x Z:
    ``nnz`` when the attributes give it, else unknown (tt-perf-report's ``--active-experts`` is not an option
    here)."""
    a_sparse = _bool_attribute(attrs, "is_input_a_sparse", False)
    b_sparse = _bool_attribute(attrs, "is_input_b_sparse", True)
    if a_sparse and b_sparse:
        dense = b_batch
    elif a_sparse:
        dense = (max(1, a_batch // b_batch) if b_batch else a_batch) * b_batch
    else:
        dense = a_batch * b_batch if b_sparse else max(a_batch, b_batch)
    return _int_attribute(attrs, "nnz"), dense


def _window(attrs: str) -> tuple[int, int] | None:
    try:
        parts = attrs.split("window_hw")[1].split("; ")[0][2:-1].split(";")
    except IndexError:
        return None
    if len(parts) < 2:
        return None
    h, w = dim(parts[0]), dim(parts[1])
    return None if h is None or w is None else (h, w)


def _conv_config(attrs: str) -> str:
    """tt-perf-report's "[ABH=...|...]" conv config text (a missing flag reads as set, as there)."""
    def number(key: str) -> object:
        try:
            return int(attrs.split(key)[1][1:].split(";")[0])
        except (IndexError, ValueError):
            return "x"

    def flag(key: str) -> object:
        try:
            return attrs.split(f"{key}': '")[1].split("'")[0] == "true"
        except IndexError:
            return "x"
    text = f"[ABH={number('per_core_out_matrix_height_ntile')}|{number('act_block_h_ntiles')}"
    if flag("enable_act_double_buffer"):
        text += " ADB"
    if flag("enable_split_reader"):
        text += " SR"
    return text + "]"


def _halo_config(attrs: str) -> str:
    """tt-perf-report's halo config text: window, stride, padding, dilation and memory layout."""
    def pick(key: str, n: int) -> str:
        try:
            return ",".join(attrs.split(f"{key}=")[1].split(";")[0:n][0:n])
        except IndexError:
            return "x"
    try:
        layout = attrs.split("memory_layout=")[1].split(";")[0].split("::")[1]
    except IndexError:
        layout = "x"
    return (f"w={pick('window_hw', 2)} s={pick('stride_hw', 2)} p={pick('padding', 4)} "
            f"d={pick('dilation_hw', 2)} | {layout}")


# tt-perf-report's thresholds, for its figures in Python (warehouse.analysis.perf) and SQL (the op_perf view)
INVALID_GAP_NS = 1_000_000  # tt-perf-report: INVALID_OP_TO_OP_GAP_MIN_NS
BOUND_PCT = 65  # DRAM % or FLOPs % at or above this: bound by it
