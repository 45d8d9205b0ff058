"""A dimension's series over the runs: a table, or a plot (matplotlib, the ``plot`` extra)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from warehouse.errors import NotFound, UsageError
from warehouse.series import check_section, default_section, fetch, select_runs


def trend(engine: Engine, by: str = "block", section: str | None = None, top: int = 10, label: str | None = None,
          tags: dict[str, str] | None = None, last: int | None = None) -> dict[str, Any]:
    """``{"runs": [ids], "section", "by", "keys": [...], "values": {key: [us per run or None]}}``; the ``top``
    keys by kernel time in the newest run."""
    with engine.connect() as conn:
        runs = select_runs(conn, label, tags)
        if last:
            runs = runs[-last:]
        if not runs:
            raise NotFound("no runs match the filter")
        check_section(conn, section, runs)
        sec = section if section is not None else default_section(conn, runs[-1:])
        sec = "" if sec == "all" else sec
        values = fetch(conn, by, runs, sec)
    newest = values.get(runs[-1], {})
    keys = sorted(newest, key=lambda k: -newest[k].kernel_us)[:top]
    return {"runs": runs, "section": sec or "(no section)", "by": by, "keys": keys,
            "values": {k: [round(values[r][k].kernel_us, 3) if k in values.get(r, {}) else None for r in runs]
                       for k in keys}}


def plot(res: dict[str, Any], path: Path) -> None:
    """Write the series as a line plot (PNG or SVG by the file's suffix)."""
    if path.suffix.lower() not in (".png", ".svg"):
        raise UsageError(f"--plot {path}: expected a .png or .svg file")
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise UsageError("plots need matplotlib: pip install 'tt-profile-warehouse[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 6))
    x = list(range(len(res["runs"])))
    for k in res["keys"]:
        ax.plot(x, [v if v is not None else float("nan") for v in res["values"][k]], marker=".",
                label=k[:60].replace("$", r"\$"))  # a key is text, never mathtext
    ax.set_xticks(x, [str(r) for r in res["runs"]], rotation=90 if len(x) > 20 else 0)
    ax.set_xlabel("run id (capture order)")
    ax.set_ylabel("kernel us")
    ax.set_title(f"kernel us by {res['by']}, section {res['section']}".replace("$", r"\$"))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
