"""The op-code categories of the OPT_BASELINE report: the oracle's ordered regex list, first match wins."""
from __future__ import annotations

import re

from warehouse.registry.contract import COMPUTE

CATEGORIES: list[tuple[str, str]] = [
    ("conv2d / conv_transpose2d", r"Conv2d|conv2d|Conv2D|ConvTranspose"),
    ("halo", r"Halo|halo|UntilizeWithHalo"),
    ("matmul (1x1 conv)", r"Matmul|matmul|Linear"),
    ("slice / DRAM-slicing copies", r"Slice|slice|PaddedSlice"),
    ("binary (term sums, fp32 bias add, residual, SE gate)", r"Binary|binary|Where|where|Ternary"),
    ("typecast", r"Typecast|typecast"),
    ("unary (SiLU, GELU, sigmoid)", r"Unary|unary|Clamp|clamp|Sigmoid"),
    ("concat", r"Concat|concat"),
    ("upsample", r"Upsample|upsample"),
    ("tilize / untilize / layout", r"Tilize|tilize|Untilize|untilize|ToLayout|Layout"),
    ("reshape / transpose / permute", r"Reshape|reshape|Transpose|transpose|Permute|permute|View"),
    ("argmax", r"ArgMax|Argmax|argmax"),
    ("reduce (SE / context row sums)", r"Reduce|reduce|Sum"),
    ("move / copy / reshard", r"Move|move|Copy|copy|Shard|shard|Interleaved|interleaved|Reallocate"),
    ("pad / fill", r"Pad|pad|Fill|fill"),
]
_COMPILED = [(name, re.compile(pat)) for name, pat in CATEGORIES]



def category(op_code: str) -> str:
    """The report category of an op code ("other" when no pattern matches)."""
    for name, pat in _COMPILED:
        if pat.search(op_code):
            return name
    return "other"


def is_compute(op_code: str) -> bool:
    """True for the ops the layer cost split counts as compute."""
    return COMPUTE.search(op_code) is not None
