"""One series that moved on one checked night: what the gate's judgment of a night gives, before causes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Finding:
    """One series that moved: ``kind`` regression, improvement or suspicious (no evidence a real change leaves).
    ``value_us`` and ``baseline_us`` are measured (the night's figure and the baseline's median); ``delta_pct``
    is the move beyond the night's run-wide level, the one judged."""

    kind: str
    run_id: int
    time: str | None
    section: str
    by: str
    key: str
    device: str  # "all" or the device id
    metric: str
    value_us: float
    baseline_us: float
    delta_us: float
    delta_pct: float | None
    noise_us: float
    window: int
    z: float = 0.0
    evidence: list[str] = field(default_factory=list)
    contributors: list[dict[str, Any]] = field(default_factory=list)
    unit: str = "us"  # of value_us, baseline_us, delta_us and noise_us: the metric's (us for times)
