"""A per-op diff of two runs that survives graph edits (``warehouse compare A B --by op``).

Per section and trace iteration present in both runs, the two op sequences are aligned on (op code, layer) with
difflib's matcher (the longest matching blocks first, as history's attribution aligns drifting traces): matched ops
get their kernel-time delta; ops only in B are *inserted*, ops only in A *removed*, each named at its place (its
position, block and layer, and the matched op before it). Totals keep apart what the edit added or removed from
what the matched ops changed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from sqlalchemy import Connection, text

OPS_SQL = """
SELECT s.name AS section, COALESCE(o.iteration, 0) AS iteration, o.row_no, c.name AS op_code,
       COALESCE(p.block, '') AS block, COALESCE(p.layer, '') AS layer, o.kernel_ns, o.device_id
FROM op o JOIN op_code c ON c.id = o.op_code_id JOIN section s ON s.id = o.section_id
LEFT JOIN place p ON p.id = COALESCE(o.hist_place_id, o.place_id)
WHERE o.run_id = :r AND o.kernel_ns IS NOT NULL
ORDER BY s.ordinal, COALESCE(o.iteration, 0), o.row_no
"""


@dataclass
class OpRef:
    """One op at its place in a section's sequence."""

    pos: int
    row: int
    op_code: str
    block: str
    layer: str
    kernel_us: float

    def to_json(self) -> dict[str, Any]:
        return {"pos": self.pos, "row": self.row, "op_code": self.op_code, "block": self.block or None,
                "layer": self.layer or None, "kernel_us": round(self.kernel_us, 3)}


@dataclass
class SectionDiff:
    """The alignment of one section (and trace iteration) of both runs."""

    section: str
    iteration: int
    matched: int
    changed: list[tuple[OpRef, OpRef]] = field(default_factory=list)  # matched pairs, largest |delta| first
    inserted: list[tuple[OpRef, OpRef | None]] = field(default_factory=list)  # (op of B, matched op of B before)
    removed: list[tuple[OpRef, OpRef | None]] = field(default_factory=list)  # (op of A, matched op of A before)
    matched_delta_us: float = 0.0
    inserted_us: float = 0.0
    removed_us: float = 0.0

    def to_json(self, top: int | None) -> dict[str, Any]:
        def cut(xs: list[Any]) -> list[Any]:
            return xs if top is None else xs[:top]
        return {"section": self.section, "iteration": self.iteration, "matched": self.matched,
                "inserted": len(self.inserted), "removed": len(self.removed),
                "totals_us": {"matched_delta": round(self.matched_delta_us, 3), "inserted": round(self.inserted_us, 3),
                              "removed": round(self.removed_us, 3),
                              "net": round(self.matched_delta_us + self.inserted_us - self.removed_us, 3)},
                "inserted_ops": [{**o.to_json(), "after": a.to_json() if a else None} for o, a in cut(self.inserted)],
                "removed_ops": [{**o.to_json(), "after": a.to_json() if a else None} for o, a in cut(self.removed)],
                "changed_ops": [{"a": x.to_json(), "b": y.to_json(), "delta_us": round(y.kernel_us - x.kernel_us, 3),
                                 "delta_pct": round(100 * (y.kernel_us / x.kernel_us - 1), 2) if x.kernel_us else None}
                                for x, y in cut(self.changed)],
                "more": {"inserted": max(0, len(self.inserted) - top), "removed": max(0, len(self.removed) - top),
                         "changed": max(0, len(self.changed) - top)} if top is not None else None}


@dataclass
class OpDiff:
    """Run ``b`` against run ``a``, op by op, per section and iteration both have."""

    a: int
    b: int
    sections: list[SectionDiff]
    warnings: list[str]

    def to_json(self, top: int | None = None) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "by": "op", "unit": "us", "warnings": self.warnings,
                "sections": [s.to_json(top) for s in self.sections]}


def diff_ops(conn: Connection, a: int, b: int, section: str | None = None) -> OpDiff:
    """Align run ``b``'s ops with run ``a``'s (see the module); only ``section`` when given."""
    sa, sb = _sequences(conn, a), _sequences(conn, b)
    warnings = [f"section {s!r} (iteration {i}) is only in run {a}" for s, i in sa if (s, i) not in sb]
    warnings += [f"section {s!r} (iteration {i}) is only in run {b}" for s, i in sb if (s, i) not in sa]
    out = []
    for key in sa:
        if key not in sb or (section is not None and key[0] != section):
            continue
        out.append(_align(key, sa[key], sb[key]))
    if section is not None and not out:
        from warehouse.errors import UsageError
        raise UsageError(f"section {section!r}: not in both runs ({', '.join(sorted({s for s, _ in sa}))})",
                         param="section")
    return OpDiff(a, b, out, warnings)


def _sequences(conn: Connection, run: int) -> dict[tuple[str, int], list[OpRef]]:
    """Each (section, iteration)'s ops in order, devices summed per CSV op (one op a row of the first device)."""
    seqs: dict[tuple[str, int], list[OpRef]] = {}
    for r in conn.execute(text(OPS_SQL), {"r": run}):
        ops = seqs.setdefault((r.section, int(r.iteration)), [])
        ops.append(OpRef(len(ops), int(r.row_no), r.op_code, r.block, r.layer, float(r.kernel_ns) / 1000))
    return seqs


def _align(key: tuple[str, int], xs: list[OpRef], ys: list[OpRef]) -> SectionDiff:
    tok_a = [(o.op_code, o.layer) for o in xs]
    tok_b = [(o.op_code, o.layer) for o in ys]
    d = SectionDiff(key[0], key[1], 0)
    last_a: OpRef | None = None
    last_b: OpRef | None = None
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, tok_a, tok_b, autojunk=False).get_opcodes():
        if tag == "equal":
            for x, y in zip(xs[i1:i2], ys[j1:j2]):
                d.changed.append((x, y))
                d.matched_delta_us += y.kernel_us - x.kernel_us
            d.matched += i2 - i1
            last_a, last_b = xs[i2 - 1], ys[j2 - 1]
            continue
        # (a replaced stretch is what the edit removed and what it inserted at that place)
        for x in xs[i1:i2]:
            d.removed.append((x, last_a))
            d.removed_us += x.kernel_us
        for y in ys[j1:j2]:
            d.inserted.append((y, last_b))
            d.inserted_us += y.kernel_us
    d.changed.sort(key=lambda p: -abs(p[1].kernel_us - p[0].kernel_us))
    return d
