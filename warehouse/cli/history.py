"""Commands across runs: compare, regressions (the gate), changes, trend, triage."""
from __future__ import annotations

from pathlib import Path

import click

from warehouse.cli.base import (
    Finite,
    _api,
    _by_choice,
    _finite_min_us,
    _given,
    ci_outputs,
    junit_option,
    _iso_date,
    _keys,
    _metric_choice,
    _percent,
    _tags,
    _warn,
    cli,
    format_option,
    key_options,
    label_option,
    tag_option,
)


@cli.command()
@click.argument("a")
@click.argument("b")
@click.option("--by", type=click.Choice([*_by_choice().choices, "op"]), default="layer", show_default=True,
              help="The grouping of the keys; op: op by op, the sequences aligned (inserted and removed ops named).")
@click.option("--metric", type=_metric_choice(), default="kernel", show_default=True, help="The figure compared.")
@click.option("--section", help="A section of the runs (default: trace when present, else the first; 'all' is "
                                "the whole run).")
@key_options
@click.option("--top", type=click.IntRange(min=0), default=None,
              help="Only the N largest changes (0: all; default: all, 30 in --format md).")
@format_option()
@click.pass_context
def compare(ctx: click.Context, a: str, b: str, by: str, metric: str, section: str | None, keys: tuple[str, ...],
            block_key: str | None, layer_key: str | None, top: int, fmt: str) -> None:
    """Compare run B with run A (ids or 'latest'): per-iteration figures, totals first, then keys by change."""
    from warehouse import render
    from warehouse.render import compare as cmp

    if by == "op":
        diff = _api(ctx).compare_ops(a, b, section=section)
        _warn(diff.warnings)
        n = 30 if top is None and fmt != "json" else (top or None)
        click.echo(render.to_json(diff.to_json(n)) if fmt == "json" else cmp.ops_markdown(diff, n) if fmt == "md"
                   else cmp.ops_text(diff, n))
        return
    bys, ks = _keys(by, keys, block_key, layer_key, _given(ctx, "by"), ctx)
    res = _api(ctx).compare(a, b, by=(bys or [by])[0], section=section, metric=metric, keys=ks)
    _warn(res.warnings)
    if fmt == "json":
        click.echo(render.to_json(res.to_json()))
    elif fmt == "md":
        click.echo(cmp.markdown(res, 30 if top is None else top))
    else:
        click.echo(cmp.text(res, top or None))


@cli.command()
@label_option()
@tag_option()
@click.option("--last", type=click.IntRange(min=1), default=1, show_default=True, help="Check the N newest runs.")
@click.option("--window", type=click.IntRange(min=1), default=7, show_default=True,
              help="Against the median of N earlier runs.")
@click.option("--threshold", default="5%", show_default=True, help="Smallest relative change reported.")
@click.option("--min-us", type=float, default=1.0, show_default=True, callback=_finite_min_us,
              help="Smallest absolute change reported.")
@click.option("--by", "dims", type=_by_choice(), multiple=True,
              help="Groupings to check (repeatable; default: section, block, layer, op-code).")
@click.option("--metric", "metrics", type=_metric_choice(), multiple=True,
              help="Metrics to check (repeatable; default: all).")
@click.option("--section", help="Only this section (default: every section of the runs).")
@key_options
@click.option("--run", "run_ref", metavar="ID", help="Check this run (an id or 'latest') against the baseline.")
@click.option("--baseline-label", metavar="L", help="The baseline: the --window newest runs with this label.")
@click.option("--baseline-tag", "baseline_tags", multiple=True, metavar="KEY=VALUE",
              help="The baseline: the --window newest runs with this tag (repeatable), e.g. branch=main.")
@junit_option()
@format_option()
@click.pass_context
def regressions(ctx: click.Context, label: str | None, tags: tuple[str, ...], last: int, window: int,
                threshold: str, min_us: float, dims: tuple[str, ...], metrics: tuple[str, ...],
                section: str | None, keys: tuple[str, ...], block_key: str | None, layer_key: str | None,
                run_ref: str | None, baseline_label: str | None, baseline_tags: tuple[str, ...], junit_file: str | None,
                fmt: str) -> None:
    """Newest runs against the history of matching runs (or one run against a baseline: --run,
    --baseline-tag, --baseline-label); exit status 3 when something regressed, 4 on an invalid capture."""
    from warehouse import render
    from warehouse.render import junit
    from warehouse.render import regressions as reg

    bys, ks = _keys(dims, keys, block_key, layer_key)
    res = _api(ctx).regressions(label=label, tags=_tags(tags), last=last, window=window,
                                threshold=_percent(threshold), min_us=min_us, by=bys, section=section,
                                metrics=list(metrics) or None, keys=ks, run=run_ref, baseline_label=baseline_label,
                                baseline_tags=_tags(baseline_tags) or None)
    _warn(res.warnings)
    if fmt == "json":
        click.echo(render.to_json(res.to_json()))
    elif fmt == "md":
        click.echo(reg.markdown(res))
    else:
        click.echo(reg.text(res))
    ci_outputs(junit_file, lambda: junit.gate(res), lambda: reg.markdown(res))
    if res.invalid:
        ctx.exit(4)
    if res.regressed:
        ctx.exit(3)


@cli.command(name="triage")
@click.argument("ident", metavar="ID", required=False)
@click.option("--status", type=click.Choice(["acknowledged", "expected", "invalid"]),
              help="acknowledged / expected: the step is the new baseline; invalid: the night leaves every baseline.")
@click.option("--note", help="Why (a ticket, a commit, a sentence).")
@label_option("The label whose history holds the change (as `changes --label` found it).")
@click.option("--who", help="Who decided (default: the login name).")
@click.option("--clear", is_flag=True, help="Remove the decision about ID.")
@format_option(("table", "json"))
@click.pass_context
def triage_cmd(ctx: click.Context, ident: str | None, status: str | None, note: str | None, label: str | None,
               who: str | None, clear: bool, fmt: str) -> None:
    """Record what was decided about a change (c-...), a gate finding (r-...) or a night (run:ID); without ID,
    list the decisions; --clear removes one."""
    from warehouse.render import admin

    if ident is None:
        if clear:
            raise click.UsageError("--clear needs the ID of the decision to remove")
        click.echo(admin.decisions(_api(ctx).decisions(), fmt))
        return
    if clear:
        if status is not None:
            raise click.UsageError("--clear removes a decision; it takes no --status")
        gone = _api(ctx).untriage(ident)
        click.echo(f"removed the decision about {gone.id} ({gone.status})" if fmt != "json"
                   else admin.decision(gone, "json"))
        return
    if status is None:
        raise click.UsageError("pass --status acknowledged|expected|invalid")
    click.echo(admin.decision(_api(ctx).triage(ident, status, note=note, label=label, who=who), fmt))


@cli.command()
@label_option()
@tag_option()
@click.option("--since", callback=_iso_date, metavar="DATE", help="Only nights from this date (YYYY-MM-DD).")
@click.option("--until", callback=_iso_date, metavar="DATE", help="Only nights up to this date (YYYY-MM-DD).")
@click.option("--metric", "metrics", type=_metric_choice(), multiple=True,
              help="Metrics to look at (repeatable; default: all).")
@click.option("--fdr", type=Finite(0, 1, min_open=True, max_open=True), default=0.01, show_default=True,
              help="False-discovery rate over all series of the history.")
@click.option("--min-sigmas", type=Finite(min=0), default=6.0, show_default=True,
              help="Smallest change, in noise units, whatever the false-discovery rule allows.")
@click.option("--min-change", default="1%", show_default=True, help="Smallest relative change reported.")
@click.option("--min-us", type=float, default=1.0, show_default=True, callback=_finite_min_us,
              help="Smallest change in us per iteration reported.")
@click.option("--series", "series_file", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Run the detector on an outside series instead: a CSV (an optional index/time column, one or "
                   "more value columns) or a JSON list; changes carry their 0-based index.")
@click.option("--bisect-cmd", metavar="CMD", help="Without --label, over several labels: print CMD for each group, "
                                                  "{good} and {bad} replaced by its commits (never run).")
@junit_option()
@format_option()
@click.pass_context
def changes(ctx: click.Context, label: str | None, tags: tuple[str, ...], since: str | None, until: str | None,
            metrics: tuple[str, ...], fdr: float, min_sigmas: float, min_change: str, min_us: float,
            series_file: Path | None, bisect_cmd: str | None, junit_file: str | None, fmt: str) -> None:
    """The change points of a label's whole history, one per cause: lasting steps named by the first night of
    their new level, slow creeps, one-night outliers apart. With --series, of the series in a file."""
    from warehouse import api
    from warehouse.render import changes as cr
    from warehouse.render import junit

    if series_file is not None:
        opts = {"fdr": fdr, "min_change": _percent(min_change)}
        if _given(ctx, "min_sigmas"):
            opts["min_sigmas"] = min_sigmas
        out = api.detect_file(series_file, **opts)
        click.echo(cr.outside_json(out) if fmt == "json" else cr.outside_text(out))
        return
    if label is None and not tags and len(_api(ctx).labels()) > 1:
        # (a farm: every label on its own, changes of one cause grouped across them)
        farm = _api(ctx).farm(bisect_cmd=bisect_cmd, since=since, until=until, fdr=fdr, min_sigmas=min_sigmas,
                              min_change=_percent(min_change), min_us=min_us, metrics=list(metrics) or None)
        click.echo(cr.farm_json(farm) if fmt == "json" else cr.farm_markdown(farm) if fmt == "md"
                   else cr.farm_text(farm))
        ci_outputs(junit_file, lambda: junit.farm(farm), lambda: cr.farm_markdown(farm))
        return
    if bisect_cmd:
        raise click.UsageError("--bisect-cmd groups changes across labels: leave --label and --tag out")
    res = _api(ctx).changes(label=label, tags=_tags(tags), since=since, until=until, fdr=fdr,
                            min_sigmas=min_sigmas, min_change=_percent(min_change), min_us=min_us,
                            metrics=list(metrics) or None)
    for w in res.warnings:
        click.echo(f"warning: {w}", err=True)
    if fmt == "json":
        click.echo(cr.to_json(res))
    elif fmt == "md":
        click.echo(cr.markdown(res))
    else:
        click.echo(cr.text(res))
    ci_outputs(junit_file, lambda: junit.changes(res), lambda: cr.markdown(res))
    if res.newest_invalid:
        bad = res.invalid[-1]
        click.echo(f"INVALID CAPTURE: {bad['short']}: {'; '.join(bad['problems'])} (left out)", err=True)
        ctx.exit(4)


@cli.command()
@click.option("--by", type=_by_choice(), default="block", show_default=True, help="The grouping of the keys.")
@click.option("--metric", type=_metric_choice(), default="kernel", show_default=True, help="The figure shown.")
@click.option("--section", help="A section (default: trace when present, else the first; 'all': whole run).")
@key_options
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True,
              help="Without --key: the N largest keys of the newest run.")
@label_option()
@tag_option()
@click.option("--last", type=click.IntRange(min=0), default=30, show_default=True,
              help="The N newest runs (0: all).")
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False), help="Write a .png or .svg plot.")
@click.option("--all-models", is_flag=True,
              help="Keep runs that share few op codes with the rest (another model under the label).")
@format_option(("table", "csv", "json", "md"))
@click.pass_context
def trend(ctx: click.Context, by: str, metric: str, section: str | None, keys: tuple[str, ...],
          block_key: str | None, layer_key: str | None, top: int, label: str | None, tags: tuple[str, ...],
          last: int, plot_file: str | None, all_models: bool, fmt: str) -> None:
    """A metric of chosen (or the largest) keys over the runs: a table, or a plot over capture time."""
    from warehouse.render import trend as tr

    bys, ks = _keys(by, keys, block_key, layer_key, _given(ctx, "by"), ctx)
    res = _api(ctx).trend(by=(bys or [by])[0], section=section, top=top, label=label, tags=_tags(tags),
                          last=last or None, metric=metric, keys=ks, all_models=all_models)
    _warn(res.warnings)
    if plot_file:
        tr.plot(res, Path(plot_file))
        click.echo(f"{plot_file}: {len(res.keys)} series over {len(res.runs)} runs")
        return
    click.echo(tr.render(res, fmt))
