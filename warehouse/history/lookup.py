"""A finding named by its id, found again in its label's history: what ``warehouse triage`` records a decision
about (a change of ``warehouse changes``, ``c-...``; a cause of the gate, ``r-...``)."""
from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from warehouse.errors import NotFound, UsageError
from warehouse.history.changes import find_changes
from warehouse.history.gate import find_regressions


def find(engine: Engine, ident: str, label: str | None) -> dict[str, Any]:
    """The change or gate cause with this id in ``label``'s history (top level)."""
    if ident.startswith("c-"):
        res = find_changes(engine, label=label)
        for c in res.changes:
            if c.id == ident:
                return {"run_id": c.run_id, "kind": c.kind, "by": c.by, "key": c.key, "up": (c.change_pct or 0) > 0}
    elif ident.startswith("r-"):
        reg = find_regressions(engine, label=label, last=30)
        for f in reg.findings:
            if f.id == ident:
                return {"run_id": f.run_id, "kind": f.kind, "by": f.by, "key": f.key,
                        "up": (f.change_pct or 0) > 0}
    else:
        raise UsageError(f"{ident!r}: expected a change id (c-...), a gate finding id (r-...) or run:<id>")
    where = f"label {label!r}" if label else "the warehouse"
    raise NotFound(f"no change or finding {ident} in the history of {where}; `warehouse changes"
                   f"{' --label ' + label if label else ''}` lists them (pass the --label it was found with)")
