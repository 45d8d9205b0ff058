"""A grouping's series over the runs (per-iteration figures from the rollups): a table, or a plot with a time
axis (matplotlib, the ``plot`` extra)."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from warehouse.errors import NotFound, UsageError
from warehouse.measures import METRIC
from warehouse.series import ALL_DEVICES, fetch, resolve_sections, run_meta, section_label, select_runs


def trend(engine: Engine, by: str = "block", section: str | None = None, top: int = 10, label: str | None = None,
          tags: dict[str, str] | None = None, last: int | None = None, metric: str = "kernel",
          keys: list[str] | None = None, all_models: bool = False) -> dict[str, Any]:
    """``{"runs": [ids], "meta": {id: run metadata}, "section", "by", "metric", "keys", "values": {key: [value per
    run or None]}}``: the chosen ``keys``, else the ``top`` keys of the newest run by the metric. Runs that look
    like another model than the rest (:func:`warehouse.quality.other_models`) are left out with a warning,
    unless ``all_models``."""
    from warehouse.quality import other_models

    warnings: list[str] = []
    with engine.connect() as conn:
        runs = select_runs(conn, label, tags)
        if last:
            runs = runs[-last:]
        if not runs:
            raise NotFound("no runs in the warehouse; ingest a CSV first")
        if not all_models:
            strangers = other_models(conn, runs)
            if strangers:
                for r in sorted(strangers):
                    warnings.append(f"run {r} {strangers[r]}: left out (pass --all-models to draw it)")
                runs = [r for r in runs if r not in strangers]
        secs = resolve_sections(conn, section, runs[-1:] if section is None else runs)
        sec = secs[0] if section is not None else ("trace" if "trace" in secs else secs[0])
        points = fetch(conn, runs, sec, by, keys=keys)
        meta = run_meta(conn, runs)
    values = {(r, k): p.values.get(metric) for (r, k, d), p in points.items() if d == ALL_DEVICES}
    if keys:
        missing = [k for k in keys if not any(kk == k for (_, kk) in values)]
        if missing:
            raise NotFound(f"--key {missing[0]!r}: no such {by} in section {section_label(sec)} of these runs")
        chosen = list(keys)
    else:
        newest = {k: v for (r, k), v in values.items() if r == runs[-1] and v is not None}
        chosen = sorted(newest, key=lambda k: -newest[k])[:top]
    labels = {meta[r].label for r in runs}
    if len(labels) > 1:
        warnings.append(f"the runs mix labels {sorted(map(str, labels))}; pass --label")
    return {"runs": runs, "meta": {r: meta[r].as_dict() for r in runs}, "section": section_label(sec), "by": by,
            "metric": metric, "unit": METRIC[metric].unit, "keys": chosen, "warnings": warnings,
            "values": {k: [_round(values.get((r, k))) for r in runs] for k in chosen}}


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def plot(res: dict[str, Any], path: Path) -> None:
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
    x = [datetime.fromisoformat(res["meta"][r]["time"]) if res["meta"][r]["time"] else None for r in res["runs"]]
    for k in res["keys"]:
        pts = [(t, v) for t, v in zip(x, res["values"][k]) if t is not None]
        ax.plot([p[0] for p in pts], [p[1] if p[1] is not None else float("nan") for p in pts],  # type: ignore[arg-type]
                marker=".",
                label=k[:60].replace("$", r"\$"))  # a key is text, never mathtext
    ax.set_xlabel("capture time")
    ax.set_ylabel(f"{METRIC[res['metric']].label}, {res['unit']} per iteration")
    ax.set_title(f"{METRIC[res['metric']].label} by {res['by']}, section {res['section']}".replace("$", r"\$"))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
