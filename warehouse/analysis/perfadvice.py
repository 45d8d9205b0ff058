"""tt-perf-report's Advice column: what it suggests for a matmul from the row's own figures (its
``generate_matmul_advice`` and ``evaluate_fidelity``, tt-perf-report 1.4.1, ``tt_perf_report/perf_report.py``).

The texts are tt-perf-report's, word for word: users search for them. Only ops whose OP Code contains ``Matmul``
get advice (its ``is_matmul_op``); the pieces are joined with `` • ``, as its ``--csv`` writes them.
"""
from __future__ import annotations

from typing import Any

_INTEGER = {"UINT8", "UINT16", "INT32", "UINT32"}
_MANTISSA = {"FLOAT32": 23, "BFLOAT16": 8, "BFLOAT8_B": 7, "BFLOAT4_B": 3}
_FIDELITIES = ("HiFi4", "HiFi3", "HiFi2", "LoFi")
_DRAM_SHARDED = ("Try a DRAM-sharded program config (MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig) to "
                 "improve throughput further")
_BFP8_HIFI4 = "HiFi2 is sufficient for BFP8 multiplication and has 2x the throughput of HiFi4"
_BFP8_HIFI3 = "HiFi2 is sufficient for BFP8 multiplication and has higher throughput than HiFi3"
_BFP4_HIFI2 = "LoFi might also be sufficient with BFP4 output and has almost 2x the throughput of HiFi2"

# (in0 bits rule, fidelity) -> (evaluation, advice): tt-perf-report's table, branch by branch
_BY_CASE: dict[tuple[str, str], tuple[str, str | None]] = {
    ("bf16_act", "HiFi4"): ("sufficient", "HiFi2 may also work, it discards the lowest bit of the activations and "
                                          "has 2x the throughput of HiFi4"),
    ("bf16_act", "HiFi3"): ("too_low", "If your matmuls are not FLOP-bound use HiFi4 with BF16 activations for full "
                                       "accuracy"),
    ("bf16_act", "HiFi2"): ("too_low", "If your matmuls are not FLOP-bound use HiFi4 with BF16 activations for full "
                                       "accuracy"),
    ("bf16_act", "LoFi"): ("too_low", "Use HiFi2 or HiFi4 with BF16 activations for improved accuracy"),
    ("bf16_act_bfp4_out", "HiFi4"): ("too_high", "HiFi2 is very likely to work for BFP4 output; it discards the "
                                                 "lowest bit of the activations and has 2x the throughput of HiFi4"),
    ("bf16_act_bfp4_out", "HiFi3"): ("too_high", "HiFi2 is very likely to work for BFP4 output and has higher "
                                                 "throughput than HiFi3"),
    ("bf16_act_bfp4_out", "HiFi2"): ("sufficient", _BFP4_HIFI2),
    ("bf16_act_bfp4_out", "LoFi"): ("too_low", "HiFi2 may give better accuracy for large matmuls with many "
                                               "intermediate accumulations"),
    ("bfp8_w", "HiFi4"): ("too_high", _BFP8_HIFI4),
    ("bfp8_w", "HiFi3"): ("too_high", _BFP8_HIFI3),
    ("bfp8_w", "HiFi2"): ("sufficient", None),
    ("bfp8_w", "LoFi"): ("too_low", "HiFi2 is recommended for accuracy; LoFi discards the lowest 2 bits of the "
                                    "weights"),
    ("bfp8_w_bfp4_out", "HiFi4"): ("too_high", _BFP8_HIFI4),
    ("bfp8_w_bfp4_out", "HiFi3"): ("too_high", _BFP8_HIFI3),
    ("bfp8_w_bfp4_out", "HiFi2"): ("sufficient", _BFP4_HIFI2),
    ("bfp8_w_bfp4_out", "LoFi"): ("too_low", "HiFi2 may give slightly better accuracy for large matmuls with many "
                                             "intermediate accumulations"),
}


def evaluate_fidelity(in0: str | None, in1: str | None, out: str | None, fidelity: str | None
                      ) -> tuple[str, str | None]:
    """tt-perf-report's judgement of a matmul's math fidelity for its datatypes: (sufficient | too_low |
    too_high | not_applicable | unknown, the advice or None)."""
    if in0 in _INTEGER or in1 in _INTEGER or out in _INTEGER:
        return ("not_applicable", "Fidelity evaluation is not applicable for integer datatypes (UINT8, UINT16, "
                                  "INT32, UINT32).")
    for d in (in0, in1, out):
        if d not in _MANTISSA:
            return "unknown", f"Datatype {d} is not supported for fidelity evaluation."
    b0, b1, bo = _MANTISSA[in0], _MANTISSA[in1], _MANTISSA[out]  # type: ignore[index]
    if b0 == 8 and bo >= 7:
        case = "bf16_act"
    elif b0 == 8 and bo == 3:
        case = "bf16_act_bfp4_out"
    elif b1 >= 7 and bo >= 7:
        case = "bfp8_w"
    elif b1 >= 7 and bo == 3:
        case = "bfp8_w_bfp4_out"
    elif b1 == 3:
        if fidelity == "LoFi":
            return "sufficient", None
        return "too_high", "LoFi is sufficient with BFP4 weights, use it for much higher throughput"
    else:
        return "unknown", f"Using {fidelity} for {in0}/{in1} inputs and {out} output"
    if fidelity not in _FIDELITIES:
        # (tt-perf-report stops with an assertion here; a table row is better without a fidelity remark)
        return "unknown", None
    return _BY_CASE[(case, fidelity)]


def matmul_advice(row: dict[str, Any]) -> list[str]:
    """The advice for one row of the per-op table (its tt-perf-report column names), or [] for none."""
    fid_text = row.get("Math Fidelity")
    fidelity = fid_text.split()[0] if fid_text else None
    evaluation, fid_advice = evaluate_fidelity(row.get("Input 0 Datatype"), row.get("Input 1 Datatype"),
                                               row.get("Output Datatype"), fidelity)
    bound = row.get("Bound")
    sharded = bool(row.get("DRAM Sharded"))
    out: list[str] = []
    if bound in ("DRAM", "BOTH"):
        if not sharded and "SparseMatmul" not in (row.get("OP Code") or ""):
            out.append(_DRAM_SHARDED)
        flops_pct = row.get("FLOPs %")
        if evaluation == "too_low" and flops_pct is not None and flops_pct < 40:
            out.append(fid_advice or "")
        if evaluation == "too_high":
            out.append(fid_advice or "")
    elif bound == "FLOP":
        # (measured against the grid the op was given: its sub-device's budget on a partitioned run)
        cores, available = row.get("Cores"), row.get("Available Cores")
        if not sharded and cores is not None and available is not None and cores < available:
            out.append(f"Increase grid size (currently using {_num(cores)} of {_num(available)})")
        if evaluation == "too_high":
            out.append(fid_advice or "")
    elif bound == "SLOW":
        memory = row.get("Input 0 Memory")
        if memory and "L1" not in memory:
            out.append(f"If possible place input 0 in L1 (currently in {memory})")
        inner, h, w = row.get("Inner Dim Block Size"), row.get("Output Subblock H"), row.get("Output Subblock W")
        if not sharded and inner is None and h is None and w is None:
            out.append("No program_config specified, try using one to override in0_block_w and out_subblock_h/w")
        else:
            good = True
            if inner is None:
                out.append("No inner dim block size found")
                good = False
            elif inner < 2:
                out.append(f"in0_block_w={_num(inner)} is small, try in0_block_w=2 or above")
                good = False
            if not sharded:  # (DRAM-sharded configs have per_core_M / N, not tunable subblocks)
                if h is not None and w is not None:
                    if h * w < 2:
                        out.append(f"Output subblock {_num(h)}x{_num(w)} is small, try out_subblock_h * "
                                   "out_subblock_w >= 2 if possible")
                        good = False
                else:
                    out.append("No output subblock size found")
                    good = False
            if good:
                out.append(f"in0_block_w={_num(inner)} looks good 🤷" if sharded else
                           f"in0_block_w={_num(inner)} and output subblock {_num(h)}x{_num(w)} look good 🤷")
            if fid_advice:
                out.append(fid_advice)
    return out


def advice(row: dict[str, Any]) -> str:
    """The Advice cell of one row: a matmul's advice joined with `` • ``, else ''."""
    if "Matmul" not in (row.get("OP Code") or ""):
        return ""
    return " • ".join(matmul_advice(row))


def _num(v: Any) -> str:
    """A number as Python prints the value tt-perf-report holds (an int stays an int)."""
    return str(int(v)) if isinstance(v, float) and v.is_integer() and not isinstance(v, bool) else str(v)
