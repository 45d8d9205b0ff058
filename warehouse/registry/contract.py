"""The oracle's vocabulary (``profile_summary.py``, the report's contract), spelled once: its two sections, the
signposts that open, close and attribute them, the glue suffix its layer cost split leaves out, the core count it
counts ops below, and what it calls a compute op. The report, the views, ingest and history read it from here."""
from __future__ import annotations

import re

EAGER = "eager"  # the section run op by op
TRACE = "trace"  # the replays of the captured trace (the same ops, without signposts of their own)
SECTIONS = (EAGER, TRACE)  # in the report's order
END = "_end"  # `eager` ... `eager_end`, `trace` ... `trace_end`
SECTION_ENDS = tuple(s + END for s in SECTIONS)
BLOCK = "m:"  # `m:<block>` sets the block (and clears the layer)
LAYER = "c:"  # `c:<layer>` sets the layer
POST = "|post"  # `c:<layer>|post`: the glue after a layer, left out of the layer cost split
FEW_CORES = 120  # `ops_below_120_cores`: ops on more than none and fewer than this many cores
TOP = 10  # the rows of each group table the report prints
COMPUTE = re.compile(r"Conv2d|Matmul|ConvTranspose")  # the layer cost split's compute ops

# the same in SQL, for the views that restate the report
SQL_SECTIONS = "(" + ", ".join(f"'{s}'" for s in SECTIONS) + ")"
SQL_NOT_POST = f"SUBSTR(layer, LENGTH(layer) - {len(POST) - 1}) <> '{POST}'"


def is_post(layer: str) -> bool:
    """Whether a layer is the glue after one (``...|post``)."""
    return layer.endswith(POST)
