"""The one registry of what history groups by and what it measures.

A :class:`Grouping` is a way to cut a section's ops into keys (block, layer, op code...); a :class:`Metric` is a
per-iteration figure of a key (kernel time, op-to-op time...). The rollups written at ingest
(:mod:`warehouse.analysis.rollups`), the series views, the CLI's ``--by`` and ``--metric`` choices, ``compare``,
``regressions`` and ``trend`` are all generated from these two lists: adding a grouping or a metric is one entry.

Expressions read the per-iteration fine table of :mod:`warehouse.analysis.rollups` (columns ``block``, ``layer`` (the
history attribution), ``op_code``, ``category``); metric expressions aggregate its per-iteration sums
(``kernel_ns``, ``op2op_ns``, ``fw_ns``, ``first_cycle``, ``last_cycle``) within one iteration.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from warehouse.registry.families import FAMILIES, NUMBER

# The layer key of the oracle: the layer, else "[<block> glue]".
LAYER_KEY = ("CASE WHEN layer <> '' THEN layer ELSE '[' || CASE WHEN block <> '' THEN block ELSE '?' END "
             "|| ' glue]' END")
BLOCK_KEY = "CASE WHEN block <> '' THEN block ELSE '?' END"


def _block_text(block: str | None) -> str:
    return block if block else "?"


# Key expressions computed in Python on the hot paths (the report feed of ingest, the numpy rollups), from an op's
# (block, layer, op code, category); an expression not here is computed by the database. Each is its SQL's value,
# NULL and '' alike (NULL <> '' is not true, so both take the ELSE branch); tests hold them equal on the corpus.
KEY_TEXTS: dict[str, Callable[[str | None, str | None, str, str], str]] = {
    "'total'": lambda b, y, c, k: "total",
    BLOCK_KEY: lambda b, y, c, k: _block_text(b),
    LAYER_KEY: lambda b, y, c, k: y if y else f"[{_block_text(b)} glue]",
    "op_code": lambda b, y, c, k: c,
    "category": lambda b, y, c, k: k,
    BLOCK_KEY + " || ' / ' || op_code": lambda b, y, c, k: f"{_block_text(b)} / {c}",
}


@dataclass(frozen=True)
class Grouping:
    """A way to cut ops into keys. ``expr`` is SQL over the fine table; ``cli`` says whether ``--by`` offers it
    (drill-down groupings serve ``regressions`` only); ``stored``: written to the rollups at ingest, else computed
    from the ops of the runs a command asks about (:func:`warehouse.analysis.rollups.computed_rows`)."""

    key: str
    label: str
    expr: str
    doc: str
    cli: bool = True
    stored: bool = True


@dataclass(frozen=True)
class Metric:
    """A per-iteration figure. ``column`` is its column in the view ``rollup`` (its spread over iterations is
    ``<column>`` with ``_spread`` before the unit); ``expr`` aggregates the fine table within one iteration, in
    the stored unit ``stored_unit``, which is ``scale`` times ``unit`` (times are stored in whole ns: integers
    take half the bytes of a double, and a sum of ns is exact); ``total_only``: meaningful for a whole section
    (or device) only, not per key."""

    key: str
    label: str
    unit: str
    column: str
    expr: str
    doc: str
    total_only: bool = False
    stored_unit: str = "us"
    scale: int = 1
    # Which way is worse: +1 (a time: higher is a regression), -1 (a utilisation: lower is). ``floor``: the
    # smallest change that counts, in ``unit`` (None: the commands' ``--min-us``, for times). ``stored``: written
    # to the rollups at ingest, else computed from the ops of the runs a command asks about (COMPUTED_METRICS).
    # ``mean``: a ratio, averaged over the iterations that have the key (a sum per iteration divides by all).
    worse: int = 1
    floor: float | None = None
    stored: bool = True
    mean: bool = False

    @property
    def spread_column(self) -> str:
        """The rollup column of the spread between iterations (max - min)."""
        base, _, unit = self.column.rpartition("_")
        return f"{base}_spread_{unit}"

    def floor_of(self, min_us: float) -> float:
        """The smallest change of this metric that counts, in its unit (``min_us`` for times)."""
        return min_us if self.floor is None else self.floor

    @property
    def stored_column(self) -> str:
        """Its column in the table ``rollup_row`` (in ``stored_unit``)."""
        return self.column.rpartition("_")[0] + "_" + self.stored_unit

    @property
    def stored_spread_column(self) -> str:
        """The spread's column in the table ``rollup_row``."""
        return self.spread_column.rpartition("_")[0] + "_" + self.stored_unit


GROUPINGS: list[Grouping] = [
    Grouping("section", "section", "'total'", "the whole section: one key, 'total'"),
    Grouping("block", "block", BLOCK_KEY, "m:<block> signposts ('?' before the first)"),
    Grouping("layer", "layer", LAYER_KEY, "c:<layer> signposts ('[block glue]' between layers)"),
    Grouping("op-code", "op code", "op_code", "the OP CODE column"),
    Grouping("category", "category", "category", "the report's op category (ordered regex list)"),
    Grouping("block/op-code", "op code within a block", BLOCK_KEY + " || ' / ' || op_code",
             "drill-down: which op codes of a block moved", cli=False),
    # Not stored: a layer holds few ops, so its op codes are nearly one key per op (on a realistic capture 61 %
    # of all rollup rows and a quarter of the warehouse's growth per night); only regressions' drill-down of a
    # moved layer reads them, for the few runs of its window.
    Grouping("layer/op-code", "op code within a layer", LAYER_KEY + " || ' / ' || op_code",
             "drill-down: which op codes of a layer moved (computed from the ops when asked)", cli=False,
             stored=False),
]

METRICS: list[Metric] = [
    Metric("kernel", "kernel time", "us", "kernel_us", "SUM(kernel_ns)", "DEVICE KERNEL DURATION, summed",
           stored_unit="ns", scale=1000),
    Metric("op2op", "op-to-op time", "us", "op2op_us", "SUM(op2op_ns)",
           "OP TO OP LATENCY, summed (0 for the first op of each iteration)", stored_unit="ns", scale=1000),
    Metric("fw", "FW time", "us", "fw_us", "SUM(fw_ns)", "DEVICE FW DURATION, summed", stored_unit="ns",
           scale=1000),
    Metric("span", "span", "us", "span_us", "(MAX(last_cycle) - MIN(first_cycle)) / MAX(freq_mhz)",
           "first FW start to last FW end, at the run's frequency", total_only=True),
]

@dataclass(frozen=True)
class Term:
    """A per-op term of the fine table that only computed metrics read: ``expr`` is SQL over the op (``o``,
    table op) and ``x`` (one row per op of the run with the ``column`` of the view ``view`` it names)."""

    name: str
    expr: str
    view: str
    column: str
    sql_type: str = "DOUBLE PRECISION"  # the column's (a union of views must name it: PostgreSQL matches types)


# tt-perf-report's Bound classes (view op_perf), each counted per key and iteration.
BOUND_CLASSES = {"DRAM": "DRAM-bound", "FLOP": "FLOP-bound", "BOTH": "DRAM- and FLOP-bound",
                 "SLOW": "neither DRAM- nor FLOP-bound (slow)"}
# A utilisation whose rise is the regression (the rest fall when things get worse)
_HIGHER_IS_WORSE = {"npe_cong_impact_pct"}


def _computed() -> tuple[dict[str, Term], list[Metric]]:
    """The metrics of every numeric family column (:data:`warehouse.registry.families.FAMILIES`) and the Bound counts,
    with the per-op terms they read. Times (ns) are summed like the kernel time; utilisations (%) are the
    kernel-time-weighted mean over the ops that have them (tt-metal's PM FPU UTIL is PM COMPUTE / kernel
    duration, so its weighted mean is sum(compute) / sum(kernel): the key's own utilisation); kernel binary
    sizes and identifiers (sub-device, cores offered) are no per-iteration figure and have none."""

    terms: dict[str, Term] = {}
    out: list[Metric] = []
    for fam in FAMILIES:
        for c in fam.columns:
            if c.kind != NUMBER or c.unit not in ("ns", "%"):
                continue
            key = c.name.rpartition("_")[0]
            label = c.csv[0].split(" [")[0]
            if c.unit == "ns":
                terms[c.name] = Term(c.name, f"COALESCE(x.{c.name}, 0)", fam.view, c.name)
                out.append(Metric(key, label, "us", f"{key}_us", f"SUM({c.name})",
                                  f"{c.csv[0]}, summed ({fam.view}.{c.name})", stored_unit="ns", scale=1000,
                                  stored=False))
            else:
                w, k = f"{c.name}_w", f"{c.name}_k"
                terms[w] = Term(w, f"x.{c.name} * COALESCE(o.kernel_ns, 0)", fam.view, c.name)
                terms[k] = Term(k, f"CASE WHEN x.{c.name} IS NOT NULL THEN COALESCE(o.kernel_ns, 0) END",
                                fam.view, c.name)
                out.append(Metric(key, label, "%", c.name, f"SUM({w}) / NULLIF(SUM({k}), 0)",
                                  f"{c.csv[0]}, the mean weighted by kernel time over the ops that have it "
                                  f"({fam.view}.{c.name})", worse=1 if c.name in _HIGHER_IS_WORSE else -1,
                                  floor=0.5, stored=False, mean=True, stored_unit="pct"))
    for cls, what in BOUND_CLASSES.items():
        name = f"bound_{cls.lower()}"
        terms[name] = Term(name, f"CASE WHEN x.bound = '{cls}' THEN 1 ELSE 0 END", "op_perf", "bound", "TEXT")
        # (more DRAM-bound or slow ops is the regression; FLOP-bound ones are the goal)
        out.append(Metric(name, f"{what} ops", "ops", f"{name}_ops", f"SUM({name})",
                          f"ops whose tt-perf-report Bound is {cls} ({what}), per iteration (op_perf.bound)",
                          worse=1 if cls in ("DRAM", "SLOW") else -1, floor=0.5, stored=False, stored_unit="ops"))
    # program-cache misses: ops whose program was built, not taken from the cache (a step up is a regression: a
    # cache key that stopped matching rebuilds the program every iteration)
    # (an op without the column is no figure, not a hit)
    terms["cache_misses"] = Term("cache_misses", "CASE WHEN x.program_cache_hit = 0 THEN 1 "
                                 "WHEN x.program_cache_hit = 1 THEN 0 END", "op_program", "program_cache_hit",
                                 "INTEGER")
    out.append(Metric("cache_misses", "program-cache misses", "ops", "cache_misses_ops", "SUM(cache_misses)",
                      "ops whose PROGRAM CACHE HIT is 0 (the program was built), per iteration "
                      "(op_program.program_cache_hit)", worse=1, floor=0.5, stored=False, stored_unit="ops"))
    return terms, out


EXTRA_TERMS, COMPUTED_METRICS = _computed()

# Any CSV column by name, as a metric: ``col:<CSV NAME>`` (a column the warehouse has no family for, such as a
# newer tt-metal's or a hardware counter's). Read like a family column (the run's header position of the name);
# a name ending in "[ns]" is a time (summed, us), one ending in "(%)" a utilisation (kernel-weighted mean, lower
# is worse), any other number is summed.
COLUMN_METRIC = "col:"


@cache
def _column_metric(csv_name: str) -> Metric:
    ident = "c" + hashlib.sha1(csv_name.encode()).hexdigest()[:10]
    view = "@" + csv_name  # (warehouse.analysis.rollups builds the read of the column for the back end)
    doc = f"the CSV column {csv_name!r}"
    if csv_name.endswith("[ns]"):
        EXTRA_TERMS[ident] = Term(ident, f"COALESCE(x.{ident}, 0)", view, ident)
        return Metric(COLUMN_METRIC + csv_name, csv_name, "us", f"{ident}_us", f"SUM({ident})", doc + ", summed",
                      stored_unit="ns", scale=1000, stored=False)
    if csv_name.endswith("(%)"):
        w, k = f"{ident}_w", f"{ident}_k"
        EXTRA_TERMS[w] = Term(w, f"x.{ident} * COALESCE(o.kernel_ns, 0)", view, ident)
        EXTRA_TERMS[k] = Term(k, f"CASE WHEN x.{ident} IS NOT NULL THEN COALESCE(o.kernel_ns, 0) END", view, ident)
        return Metric(COLUMN_METRIC + csv_name, csv_name, "%", f"{ident}_pct", f"SUM({w}) / NULLIF(SUM({k}), 0)",
                      doc + ", the mean weighted by kernel time", worse=-1, floor=0.5, stored=False, mean=True,
                      stored_unit="pct")
    EXTRA_TERMS[ident] = Term(ident, f"COALESCE(x.{ident}, 0)", view, ident)
    return Metric(COLUMN_METRIC + csv_name, csv_name, "", f"{ident}_n", f"SUM({ident})", doc + ", summed",
                  floor=0.5, stored=False, stored_unit="n")


class _Registry(dict):
    """The metrics by key; a ``col:<CSV NAME>`` key is made when asked for (not listed among the choices)."""

    def __missing__(self, key: str) -> Metric:
        if isinstance(key, str) and key.startswith(COLUMN_METRIC) and key[len(COLUMN_METRIC):].strip():
            return _column_metric(key[len(COLUMN_METRIC):])
        raise KeyError(key)


def nests_under(a: str, b: str) -> bool:
    """Whether a change of metric ``b`` can be held by a cause of metric ``a``: times by times; a computed
    metric (another unit) by its own metric only."""
    return a == b or (METRIC[a].stored and METRIC[b].stored)


def part_rank(by: str, metric: str) -> int:
    """Where a cause of grouping ``by`` ranks among causes of the same size: for a mean (a utilisation), which is
    largest in a small part, the block before its op codes and layers; 0 for every sum."""
    return {"block": 0, "op-code": 1, "layer": 2}.get(by, 0) if METRIC[metric].mean else 0


def is_metric(key: str) -> bool:
    """Whether ``key`` names a metric: one of :data:`METRIC`, or ``col:<CSV NAME>``."""
    try:
        METRIC[key]
    except KeyError:
        return False
    return True


def ordered(keys: set[str] | list[str]) -> list[str]:
    """Metric keys in the registry's order (column metrics last, by name)."""
    order = {k: i for i, k in enumerate(METRIC)}
    return sorted(set(keys), key=lambda k: (order.get(k, len(order)), k))


def terms_of(metrics: list[Metric]) -> list[Term]:
    """The per-op terms the computed ``metrics`` read (none for stored ones), each once."""
    names = [n for m in metrics if not m.stored for n in EXTRA_TERMS if re.search(rf"\b{n}\b", m.expr)]
    return [EXTRA_TERMS[n] for n in dict.fromkeys(names)]


METRIC: dict[str, Metric] = _Registry({m.key: m for m in [*METRICS, *COMPUTED_METRICS]})


@dataclass(frozen=True)
class ReportTable:
    """One group table of the OPT_BASELINE report. Their set, order and titles are the oracle's contract (a new
    grouping above does not add one); ``expr`` is the table's key as SQL over ``op_detail`` (the oracle's
    attribution), read by the report and by the table's view alike."""

    key: str  # in the report's JSON
    view: str  # the view with the same table for SQL users
    expr: str
    title: str  # the Markdown table's first header cell, before " (trace)"
    top: int  # rows the Markdown prints
    md_order: int  # the oracle prints category, block, op code, layer
    doc: str


REPORT_TABLES: list[ReportTable] = [
    ReportTable("by_op", "by_op_code", "op_code", "op code", 25, 2,
                "per run and section and op code: ops, kernel_us, share_pct of the section's kernel time, op2op_us"),
    ReportTable("by_category", "by_category", "category", "category", 20, 0,
                "per run and section and category (the oracle's regex list)"),
    ReportTable("by_block", "by_block", BLOCK_KEY, "block", 20, 1, "per run and section and block (m: signposts)"),
    ReportTable("by_layer", "by_layer", LAYER_KEY, "layer", 25, 3,
                "per run and section and layer (c: signposts; else [block glue])"),
]


def grouping_keys(cli_only: bool = False) -> list[str]:
    """The groupings' keys (read when asked, so that an entry appended to GROUPINGS counts everywhere)."""
    return [g.key for g in GROUPINGS if g.cli or not cli_only]
DRILL_DOWN = {"block": "block/op-code", "layer": "layer/op-code"}


def metrics_markdown() -> str:
    """Every metric history can watch, as the README's table (scripts/gen_docs.py): key, unit, how a key's
    ops are aggregated, which way is worse, stored or computed."""
    out = ["| `--metric` | unit | what | worse when | kept |", "|---|---|---|---|---|"]
    for m in METRIC.values():
        worse = "higher" if m.worse > 0 else "lower"
        kept = "stored at ingest" if m.stored else "computed from the ops when asked"
        out.append(f"| `{m.key}` | {m.unit} | {m.doc.replace('|', chr(92) + '|')} | {worse} | {kept} |")
    return "\n".join(out)
