"""Sections, blocks, layers and markers from signpost rows: the attribution state machine, one row at a time.

The oracle's rules (``eager`` .. ``eager_end``, ``trace`` .. ``trace_end``; a section start resets block and
layer; ``m:<block>`` sets the block and clears the layer; ``c:<layer>`` sets the layer) decide each op's
section, block and layer. Beyond the oracle, any other pair ``S`` .. ``S_end`` (also ``_END``,
``S started`` / ``S finished``, ``S_start`` / ``S_end``) is a *custom* section, and every other signpost is a
*marker*: each op remembers the last marker before it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from warehouse.registry.contract import BLOCK, LAYER, SECTION_ENDS
from warehouse.registry.contract import SECTIONS as ORACLE_SECTIONS
_ENDS = ("_end", "_END", " finished", " ended")
_STARTS = (" started", "_start", "_START")


@dataclass
class SectionSpan:
    """A section as found in the file; ``end_row`` None when it never closed."""

    name: str
    kind: str  # eager | trace | custom
    ordinal: int
    start_row: int
    end_row: int | None = None
    key: object = None  # the store's handle (a database id), set by the caller


@dataclass
class SignpostEvent:
    """What one signpost row did."""

    kind: str  # section_start | section_end | block | layer | marker
    opened: SectionSpan | None = None  # an eager / trace section that starts here
    closed: list[SectionSpan] = field(default_factory=list)  # sections (any kind) complete at this row
    promoted_row: int | None = None  # a marker row that turned out to start the custom section closed here
    warning: str | None = None


def _strip(name: str, suffixes: tuple[str, ...]) -> str | None:
    for s in suffixes:
        if name.endswith(s) and len(name) > len(s):
            return name[: -len(s)]
    return None


class Attribution:
    """Feed signposts in file order with :meth:`signpost`; read ``section``, ``block``, ``layer`` and
    ``marker_row`` for each op in between."""

    def __init__(self) -> None:
        self.section: SectionSpan | None = None  # the open eager / trace section
        self.block = ""
        self.layer = ""
        self.marker_row: int | None = None
        self._ordinal = 0
        # Custom candidates by base name, each a stack of (row, explicit start, order of arrival): a close
        # finds its start in O(1) however many markers never close (a list scan made such files quadratic).
        self._open: dict[str, list[tuple[int, bool, int]]] = {}
        self._arrivals = 0

    def _span(self, name: str, kind: str, row: int) -> SectionSpan:
        self._ordinal += 1
        return SectionSpan(name, kind, self._ordinal, row)

    def signpost(self, row: int, name: str) -> SignpostEvent:
        """Apply one signpost row; returns what it did so that the caller can store it."""
        if name in ORACLE_SECTIONS:
            ev = SignpostEvent("section_start")
            if self.section is not None:
                ev.warning = f"section {self.section.name!r} (row {self.section.start_row}) never closed"
            self.section = ev.opened = self._span(name, name, row)
            self.block, self.layer = "", ""
            return ev
        if name in SECTION_ENDS:
            ev = SignpostEvent("section_end")
            if self.section is None:
                ev.warning = f"{name!r} without an open section"
            else:
                if self.section.name != name[:-4]:
                    ev.warning = f"{name!r} closes section {self.section.name!r}"
                self.section.end_row = row
                ev.closed.append(self.section)
            self.section = None
            return ev
        if name.startswith(BLOCK):
            self.block, self.layer = name[len(BLOCK):], ""
            return SignpostEvent("block")
        if name.startswith(LAYER):
            self.layer = name[len(LAYER):]
            return SignpostEvent("layer")
        base = _strip(name, _ENDS)
        if base is not None:
            ev = SignpostEvent("section_end")
            stack = self._open.get(base)
            if stack:
                start, explicit, _ = stack.pop()
                if not stack:
                    del self._open[base]
                span = self._span(base, "custom", start)
                span.end_row = row
                ev.closed.append(span)
                if not explicit:
                    ev.promoted_row = start
            else:
                ev.warning = f"{name!r} without a matching start"
            return ev
        base_start = _strip(name, _STARTS)
        self._arrivals += 1
        self._open.setdefault(base_start if base_start is not None else name, []).append(
            (row, base_start is not None, self._arrivals))
        self.marker_row = row
        return SignpostEvent("section_start" if base_start is not None else "marker")

    def finish(self) -> tuple[list[SectionSpan], list[str]]:
        """At the end of the file: the custom sections opened explicitly that never closed (still to be
        stored), and a warning for every section left open."""
        warnings, spans = [], []
        if self.section is not None:
            warnings.append(f"section {self.section.name!r} starting at row {self.section.start_row} never closed")
        still_open = sorted((arrival, base, row, explicit) for base, stack in self._open.items()
                            for row, explicit, arrival in stack)
        for _, base, row, explicit in still_open:
            if explicit:
                spans.append(self._span(base, "custom", row))
                warnings.append(f"section {base!r} starting at row {row} never closed")
        return spans, warnings
