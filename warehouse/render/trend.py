"""A :class:`warehouse.history.trend.Trend` as a table (any row format) or a line plot over capture time (matplotlib,
the
``plot`` extra)."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from warehouse.errors import UsageError
from warehouse.registry.measures import METRIC
from warehouse.render import rows as rowfmt
from warehouse.history.trend import Trend


def table(res: Trend) -> tuple[list[str], list[list[Any]]]:
    """Columns and rows: one row per run (id, time, label, tags), one column per key."""
    cols = ["run", "time", "label", "tags"] + [f"{k} ({res.unit})" for k in res.keys]
    rows = [[r, (res.meta[r]["time"] or "")[:16], res.meta[r]["label"] or "",
             " ".join(f"{k}={v}" for k, v in res.meta[r]["tags"].items())]
            + [res.values[k][i] for k in res.keys] for i, r in enumerate(res.runs)]
    return cols, rows


def render(res: Trend, fmt: str) -> str:
    """The table in ``fmt`` (table, csv, md, json); the text table has a title line."""
    if fmt == "json":
        return rowfmt.to_json(res.to_json())
    cols, rows = table(res)
    head = f"{res.metric} ({res.unit} per iteration) by {res.by}, section {res.section}\n" if fmt == "table" else ""
    return head + rowfmt.render(cols, rows, fmt)


def plot(res: Trend, path: Path) -> None:
    """Write the series as a line plot over capture time (PNG or SVG by the file's suffix)."""
    if path.suffix.lower() not in (".png", ".svg"):
        raise UsageError(f"--plot {path}: expected a .png or .svg file")
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise UsageError("plots need matplotlib: pip install 'tt-profile-warehouse[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 6))
    x = [datetime.fromisoformat(res.meta[r]["time"]) if res.meta[r]["time"] else None for r in res.runs]
    for k in res.keys:
        pts = [(t, v) for t, v in zip(x, res.values[k]) if t is not None]
        ax.plot([p[0] for p in pts], [p[1] if p[1] is not None else float("nan") for p in pts],  # type: ignore[arg-type]
                marker=".",
                label=k[:60].replace("$", r"\$"))  # a key is text, never mathtext
    ax.set_xlabel("capture time")
    ax.set_ylabel(f"{METRIC[res.metric].label}, {res.unit} per iteration")
    ax.set_title(f"{METRIC[res.metric].label} by {res.by}, section {res.section}".replace("$", r"\$"))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
