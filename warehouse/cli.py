"""The ``warehouse`` command: a thin skin over the library. Each command validates its arguments, calls one
library function and renders the result; every :class:`WarehouseError` becomes one ``Error: ...`` line."""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

import click

from warehouse import __version__
from warehouse.errors import UsageError, WarehouseError
from warehouse.files import DEFAULT_GLOB
from warehouse.workers import Terminated, terminate_as_exception



class Finite(click.FloatRange):
    """A float range that refuses nan and infinities (which compare false with every bound, so that a plain range
    lets them through and a tuning value of nan hides every change)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math

        out = super().convert(value, param, ctx)
        if not math.isfinite(out):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return out
# the flags of API parameters not spelled --<param> (an error naming `keys` says --key)
FLAGS = {"url": "--db", "tags": "--tag", "keys": "--key", "metrics": "--metric"}


def one_line(message: object) -> str:
    """A message on one line (database errors carry DETAIL and HINT lines)."""
    return "; ".join(part.strip() for part in str(message).splitlines() if part.strip())


def error(message: object) -> None:
    """Print one ``Error:`` line on stderr."""
    click.echo(f"Error: {one_line(message)}", err=True)


class _Group(click.Group):
    """Turns library errors into one ``Error:`` line and the error's exit status, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except WarehouseError as e:
            error(e.for_cli(FLAGS))  # the API names its parameters; a person typed flags
            ctx.exit(e.exit_code)
        except OSError as e:  # the terminal or pipe we print to went away, or its device is full
            if isinstance(e, BrokenPipeError):
                ctx.exit(1)
            error(f"cannot write the output: {e.strerror or e}")
            ctx.exit(1)
        except KeyboardInterrupt:
            error("interrupted; an unfinished write was rolled back whole (nothing half-written)")
            ctx.exit(130)
        except Terminated:
            error("terminated; an unfinished write was rolled back whole (nothing half-written)")
            ctx.exit(143)
        except Exception as e:
            # a database error (SQLAlchemy is imported only by the commands that use it: a one-line answer on
            # the light path never pays for it, so it is looked for, not imported, here)
            exc = sys.modules.get("sqlalchemy.exc")
            if exc is None or not isinstance(e, exc.DBAPIError):
                raise
            from warehouse import dialect

            error(dialect.explain(e))
            ctx.exit(1)


def _interactive() -> bool:
    """Whether there is a person at a terminal to ask."""
    return sys.stdin.isatty()


def _stderr_terminal() -> bool:
    """Whether progress bars have a terminal to draw on (never in CI logs or pipes)."""
    return sys.stderr.isatty()


def _api(ctx: click.Context):
    """The application layer over the command's warehouse: every command calls it, as notebooks do."""
    from warehouse.api import Warehouse
    return Warehouse(ctx.obj["db"])


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", envvar="WAREHOUSE_DB", default=None, metavar="PATH|URL",
              help="SQLite file or SQLAlchemy URL (env WAREHOUSE_DB; default ./warehouse.db).")
@click.version_option(__version__, prog_name="warehouse")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """A SQL warehouse for Tenstorrent tt-metal Tracy ops profiles."""
    ctx.ensure_object(dict)
    ctx.obj["db"] = db


# ---------------------------------------------------------------------------------------------------- options
def label_option(help_: str = "Only runs with this label.") -> Any:
    """``--label``, shared by every command that selects runs."""
    return click.option("--label", help=help_)


def tag_option(help_: str = "Only runs with this tag (repeatable).") -> Any:
    """``--tag KEY=VALUE``, repeatable, shared by every command that selects or sets tags."""
    return click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help=help_)


def format_option(choices: tuple[str, ...] = ("table", "md", "json")) -> Any:
    """``--format``, one choice list per kind of output."""
    return click.option("--format", "fmt", type=click.Choice(list(choices)), default="table", show_default=True,
                        help="Output format.")


# ---------------------------------------------------------------------------------------------------- ingest
def _tags(items: tuple[str, ...]) -> dict[str, str]:
    """``key=value`` options to a dict; a malformed one is a usage error."""
    out: dict[str, str] = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"{it!r}: expected key=value", param="tags")
        if k.strip() in out:
            raise UsageError(f"{k.strip()!r} is given twice; a run has one value per tag key", param="tags")
        out[k.strip()] = v
    return out


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@label_option("A label for the runs (model, branch...).")
@tag_option("A tag for the runs (repeatable).")
@click.option("--freq-mhz", type=float, help="Chip frequency; default: the device log beside the CSV, else 1350.")
@click.option("--glob", "pattern", default=DEFAULT_GLOB, show_default=True,
              help="File names a folder is searched for (recursively).")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, show_default=True,
              help="Worker processes for several files; 0: every core when the files hold 64 MiB or more.")
@click.pass_context
def ingest(ctx: click.Context, paths: tuple[str, ...], label: str | None, tags: tuple[str, ...],
           freq_mhz: float | None, pattern: str, jobs: int) -> None:
    """Store ops_perf_results CSVs (files, folders searched recursively, globs) as runs.

    A path that exists is taken literally; one that does not is expanded as a glob. A file that fails is
    reported on one line and the others are still ingested; the exit status is then 1."""
    from warehouse.files import shown
    from warehouse.render import admin

    bar: Any = None
    stack = contextlib.ExitStack()

    def progress(done: int, total: int, files: int) -> None:
        nonlocal bar
        if bar is None and _stderr_terminal() and (files > 1 or total > 20 * 1024 * 1024):
            bar = stack.enter_context(click.progressbar(length=total or 1, label="ingest", file=sys.stderr))
        if bar is not None:
            bar.update(done - bar.pos)
    failed = 0

    def each(o: Any) -> None:
        nonlocal failed
        if o.error is not None:
            failed += 1
            error(o.error)
        else:
            click.echo(admin.ingest_line(o, shown(Path(o.path)), label))
    with stack, terminate_as_exception():
        found = _api(ctx).ingest(list(paths), label=label, tags=_tags(tags), freq_mhz=freq_mhz, glob=pattern,
                                 jobs=jobs, progress=progress, each=each)
    if failed:
        click.echo(f"{failed} of {len(found)} path(s) failed; the others were ingested" if failed < len(found)
                   else f"{failed} path(s) failed; nothing was ingested", err=True)
        ctx.exit(1)


# ---------------------------------------------------------------------------------------------------- runs
@cli.command()
@label_option()
@click.option("--warnings", is_flag=True, help="Show the warnings recorded at ingest.")
@click.option("--json", "as_json", is_flag=True, help="JSON instead of a table.")
@click.pass_context
def runs(ctx: click.Context, label: str | None, warnings: bool, as_json: bool) -> None:
    """List the runs (oldest capture first)."""
    from warehouse.render import admin

    click.echo(admin.runs(_api(ctx).runs(label=label, warnings=warnings), "json" if as_json else "table",
                          warnings))


# ---------------------------------------------------------------------------------------------------- export
@cli.command()
@click.argument("target", metavar="RUN|DIR")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), default="csv", show_default=True,
              help="csv: RUN back as its original file; parquet: every run into the Parquet lake DIR.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="csv: the file (default: stdout).")
@click.option("--label", default=None, help="parquet: only the runs of this label.")
@click.pass_context
def export(ctx: click.Context, target: str, fmt: str, output: str | None, label: str | None) -> None:
    """Write a run back as its original CSV, or (--format parquet) the warehouse into a Parquet lake.

    The lake is Hive-partitioned by label and date, one file per run in each dataset (runs, run_tags, sections,
    signposts, ops, rollups); a second export writes only runs that are new or changed and removes runs that
    left the warehouse. DuckDB reads it with the warehouse's view names: .read DIR/duckdb_views.sql"""
    from warehouse.files import output_stream

    wh = _api(ctx)
    if fmt == "parquet":
        if output:
            raise click.UsageError("--output is for --format csv; the lake is the folder DIR")
        _export_lake(wh, target, label)
        return
    run_id = wh.resolve(target, label)
    if output:
        with output_stream(output) as f:
            wh.export(run_id, f)
    else:
        wh.export(run_id, sys.stdout.buffer)
        sys.stdout.buffer.flush()


def _export_lake(wh: Any, dest: str, label: str | None) -> None:
    bar: Any = None
    with contextlib.ExitStack() as stack:
        def progress(done: int, total: int, run_id: int, written: bool) -> None:
            nonlocal bar
            if _stderr_terminal():
                if bar is None:
                    bar = stack.enter_context(click.progressbar(length=total, label="export", file=sys.stderr))
                bar.update(done - bar.pos)
            elif written:
                click.echo(f"run {run_id}: written", err=True)
        res = wh.export_lake(dest, label=label, progress=progress)
    click.echo(f"{len(res.written)} run(s) written, {len(res.unchanged)} unchanged, {len(res.removed)} removed: "
               f"{res.files} files, {res.bytes / 1e6:.1f} MB in {res.seconds:.1f} s -> {dest}")
    click.echo(f"DuckDB: .read {Path(dest) / 'duckdb_views.sql'}  (the warehouse's views over the lake)")


# ---------------------------------------------------------------------------------------------------- report
@cli.command()
@click.argument("run")
@click.option("--label", help="With RUN=latest: the newest run with this label.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="Write the JSON report here.")
@click.option("--md", "md_out", type=click.Path(dir_okay=False), help="Write the Markdown report here.")
@click.option("--quiet", "-q", is_flag=True, help="Do not print the report text.")
@click.pass_context
def report(ctx: click.Context, run: str, label: str | None, json_out: str | None, md_out: str | None,
           quiet: bool) -> None:
    """The OPT_BASELINE report of a run (id or 'latest'), as profile_summary.py prints it."""
    from warehouse.files import write_output
    from warehouse.render import report as rr

    res = _api(ctx).report(run, label)
    txt = rr.text(res)
    if json_out:
        write_output(json_out, rr.to_json(res))
    if md_out:
        write_output(md_out, txt + "\n")
    if not quiet:
        click.echo(txt)


# ---------------------------------------------------------------------------------------------------- perf
@cli.command()
@click.argument("run")
@click.option("--label", help="With RUN=latest: the newest run with this label.")
@click.option("--section", help="Only the ops of this section (eager, trace or a custom S .. S_end pair).")
@click.option("--start-signpost", metavar="NAME", help="Only the rows after the first signpost NAME.")
@click.option("--end-signpost", metavar="NAME", help="Only the rows before the first signpost NAME (the second "
                                                     "when it is also the start).")
@click.option("--no-merge-devices", is_flag=True, help="One row per device (default: devices merged as "
                                                       "tt-perf-report merges them).")
@click.option("--arch", help="The architecture for peaks and DRAM bandwidth (default: the file's DEVICE ARCH).")
@click.option("--id-range", metavar="START-END", default=None,
              help="Only the rows with these IDs (5-10, 31- or -12), as tt-perf-report's --id-range.")
@click.option("--summary-csv", "summary_out", type=click.Path(dir_okay=False), default=None,
              help="Write tt-perf-report's summary (its stacked report, the <csv>_stacked.csv) here.")
@click.option("--summary", "show_summary", is_flag=True, help="Print the summary (device time by op) after the table.")
@click.option("--group-by", type=click.Choice(["memory", "op", "category"]), default="memory", show_default=True,
              help="The summary's groups: op and input 0 memory layout, op, or category (tt-perf-report's).")
@click.option("--tracing-mode", is_flag=True, help="Keep the file's order (do not sort by HOST START TS).")
@click.option("--csv", "csv_out", type=click.Path(dir_okay=False), help="Write tt-perf-report's CSV here.")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout (same as --format json).")
@format_option(("table", "md", "json", "csv"))
@click.pass_context
def perf(ctx: click.Context, run: str, label: str | None, section: str | None, start_signpost: str | None,
         end_signpost: str | None, no_merge_devices: bool, arch: str | None, id_range: str | None,
         summary_out: str | None, show_summary: bool, group_by: str, tracing_mode: bool, csv_out: str | None,
         as_json: bool, fmt: str) -> None:
    """tt-perf-report's per-op table of a run (id or 'latest'): device time, op-to-op gap, cores, DRAM GB/s and %,
    TFLOPs and %, Bound, category and math fidelity per op, as tt-perf-report 1.4.1 computes them."""
    from warehouse.files import write_output
    from warehouse.render.perf import render, summary_csv, to_csv

    wh = _api(ctx)
    table = wh.perf_table(
        run, label=label, section=section, start=start_signpost, end=end_signpost, merge=not no_merge_devices,
        arch=arch, sort=not tracing_mode, id_range=id_range)
    groups = wh.perf_summary(table, group_by, per_device=no_merge_devices) if summary_out or show_summary else None
    if summary_out and groups is not None:
        write_output(summary_out, summary_csv(groups, group_by, per_device=no_merge_devices))
        click.echo(f"{len(groups)} summary row(s) written to {summary_out}", err=True)
    if csv_out:
        write_output(csv_out, to_csv(table))
        click.echo(f"{len(table.rows)} row(s) written to {csv_out}", err=True)
    if (csv_out or summary_out) and not as_json and fmt == "table" and not show_summary:
        return
    click.echo(render(table, "json" if as_json else fmt, summary=groups if show_summary else None).rstrip("\n"))


# ---------------------------------------------------------------------------------------------------- history
def _by_choice() -> click.Choice:
    from warehouse.measures import grouping_keys

    return click.Choice(grouping_keys(cli_only=True))


class _MetricChoice(click.Choice):
    """The registry's metrics, or ``col:<CSV NAME>``: any numeric CSV column by name."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from warehouse.measures import COLUMN_METRIC

        if isinstance(value, str) and value.startswith(COLUMN_METRIC) and value[len(COLUMN_METRIC):].strip():
            return value
        return super().convert(value, param, ctx)


def _metric_choice() -> click.Choice:
    from warehouse.measures import METRIC

    return _MetricChoice(list(METRIC))


def _percent(value: str) -> float:
    """'5%' or '5' -> 0.05; a finite, non-negative percentage only."""
    import math

    try:
        v = float(value.strip().rstrip("%"))
    except ValueError:
        v = float("nan")
    if not math.isfinite(v) or v < 0:
        raise click.BadParameter(f"{value!r}: expected a percentage of 0 or more, such as 5%",
                                 param_hint="--threshold")
    return v / 100.0


def _finite_min_us(ctx: click.Context, param: click.Parameter, value: float) -> float:
    import math

    if not math.isfinite(value) or value < 0:
        raise click.BadParameter(f"{value!r}: expected a number of microseconds, 0 or more")
    return value


def key_options(f: Any) -> Any:
    """``--key`` (repeatable), with ``--block`` and ``--layer`` as shorthands that also set ``--by``."""
    f = click.option("--layer", "layer_key", metavar="LAYER", help="Only this layer (implies --by layer).")(f)
    f = click.option("--block", "block_key", metavar="BLOCK", help="Only this block (implies --by block).")(f)
    return click.option("--key", "keys", multiple=True, metavar="KEY",
                        help="Only these keys of the grouping (repeatable).")(f)


def _given(ctx: click.Context, name: str) -> bool:
    """Whether the option was on the command line (or in the environment), not its default."""
    from click.core import ParameterSource
    return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP, None)


def _keys(by: tuple[str, ...] | str | None, keys: tuple[str, ...], block: str | None, layer: str | None,
          by_given: bool = True, ctx: click.Context | None = None) -> tuple[list[str] | None, list[str] | None]:
    """(groupings, keys) after --block / --layer: without an explicit --by, the block's (layer's) own row
    (``--by block --key B``); with ``--by layer --block B``, the layers inside the block."""
    bys = [by] if isinstance(by, str) else list(by or [])
    if not by_given:
        bys = [] if (block is not None or layer is not None) else bys
    ks = list(keys)
    if block is not None and bys == ["layer"] and layer is None and ctx is not None:
        inside = _api(ctx).layers_in(block)
        if not inside:
            raise click.BadParameter(f"no block {block!r} (no layer is inside it); `warehouse sql \"SELECT "
                                     "DISTINCT block FROM place\"` lists them", param_hint="--block")
        return ["layer"], ks + inside
    for dim, k in (("block", block), ("layer", layer)):
        if k is not None:
            if bys and bys != [dim]:
                raise click.BadParameter(f"--{dim} goes with --by {dim} (or --by layer, for the layers inside a "
                                         "block)", param_hint=f"--{dim}")
            bys, ks = [dim], ks + [k]
    return bys or None, ks or None


def _warn(warnings: list[str]) -> None:
    for w in warnings:
        click.echo(f"Warning: {w}", err=True)


@cli.command()
@click.argument("a")
@click.argument("b")
@click.option("--by", type=_by_choice(), default="layer", show_default=True, help="The grouping of the keys.")
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
@format_option()
@click.pass_context
def regressions(ctx: click.Context, label: str | None, tags: tuple[str, ...], last: int, window: int,
                threshold: str, min_us: float, dims: tuple[str, ...], metrics: tuple[str, ...],
                section: str | None, keys: tuple[str, ...], block_key: str | None, layer_key: str | None,
                run_ref: str | None, baseline_label: str | None, baseline_tags: tuple[str, ...], fmt: str) -> None:
    """Newest runs against the history of matching runs (or one run against a baseline: --run,
    --baseline-tag, --baseline-label); exit status 3 when something regressed, 4 on an invalid capture."""
    from warehouse import render
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


def _iso_date(_ctx: Any, param: click.Parameter, value: str | None) -> str | None:
    from datetime import date
    if value is None:
        return None
    try:
        return date.fromisoformat(value[:10]).isoformat()
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected a date, YYYY-MM-DD", param=param) from None


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
@format_option()
@click.pass_context
def changes(ctx: click.Context, label: str | None, tags: tuple[str, ...], since: str | None, until: str | None,
            metrics: tuple[str, ...], fdr: float, min_sigmas: float, min_change: str, min_us: float,
            fmt: str) -> None:
    """The change points of a label's whole history, one per cause: lasting steps named by the first night of
    their new level, slow creeps, one-night outliers apart."""
    from warehouse.render import changes as cr

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


@cli.command(name="tag")
@click.argument("run")
@click.option("--label", help="The run's new label ('' removes it).")
@tag_option("Set a tag (repeatable).")
@click.option("--untag", multiple=True, metavar="KEY", help="Remove a tag (repeatable).")
@click.pass_context
def tag_cmd(ctx: click.Context, run: str, label: str | None, tags: tuple[str, ...], untag: tuple[str, ...]) -> None:
    """Change a run's label and tags after ingest (a commit, a branch, a note)."""
    if label is None and not tags and not untag:
        raise click.UsageError("nothing to change: pass --label, --tag or --untag")
    r = _api(ctx).tag(run, label=label, tags=_tags(tags), untag=list(untag))
    click.echo(f"run {r['id']}: label {r['label']!r}, tags "
               + (" ".join(f"{k}={v}" for k, v in r["tags"].items()) or "none"))


# ---------------------------------------------------------------------------------------------------- sql
@cli.command()
@click.argument("statement", required=False)
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "nl", "md"]), default="table",
              show_default=True, help="csv, json and nl (a JSON object a line) stream; table and md are whole.")
@click.option("--timeout", type=Finite(min=0, min_open=True), default=60.0, show_default=True,
              help="Stop the statement after this many seconds.")
@click.option("--max-rows", type=click.IntRange(min=0), default=100_000, show_default=True,
              help="Stop after this many rows (0: no cap).")
@click.option("--max-value-bytes", type=click.IntRange(min=1), default=16 << 20, show_default=True,
              help="Refuse a result with a value larger than this.")
@click.option("--max-result-bytes", type=click.IntRange(min=1), default=512 << 20, show_default=True,
              help="Refuse a result larger than this in all.")
@click.pass_context
def sql(ctx: click.Context, statement: str | None, fmt: str, timeout: float, max_rows: int, max_value_bytes: int,
        max_result_bytes: int) -> None:
    """Run one read-only SELECT (argument, or standard input); writes, ATTACH, COPY, SET and server functions
    are refused."""
    from warehouse import render

    if statement is None:
        statement = sys.stdin.read()
    with _api(ctx).sql(statement, timeout_s=timeout, max_rows=max_rows or None, max_value_bytes=max_value_bytes,
                       max_result_bytes=max_result_bytes) as res:
        if res.columns:
            render.stream(res.columns, res.rows, fmt, lambda s: click.echo(s, nl=False))
        if res.truncated:
            click.echo(f"stopped after {max_rows} rows (--max-rows)", err=True)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="JSON instead of text.")
@click.pass_context
def schema(ctx: click.Context, as_json: bool) -> None:
    """List tables and views with their columns."""
    from warehouse.render import admin

    click.echo(admin.schema(_api(ctx).schema(), "json" if as_json else "text"))


# ---------------------------------------------------------------------------------------------------- upkeep
@cli.command()
@click.option("--from", "src", required=True, metavar="PATH|URL", help="The warehouse to copy from.")
@click.option("--to", "dst", required=True, metavar="PATH|URL", help="The warehouse to copy into.")
@click.argument("runs", nargs=-1)
def copy(src: str, dst: str, runs: tuple[str, ...]) -> None:
    """Copy runs (all when none are named) between warehouses, lossless and idempotent."""
    from warehouse.api import Warehouse

    def show(c) -> None:
        if c.error:
            error(c.error)
        elif c.existing:
            click.echo(f"run {c.src_id}: already there as run {c.dst_id}")
        else:
            click.echo(f"run {c.src_id}: copied as run {c.dst_id} ({c.ops} ops)")
    done = Warehouse(src).copy_to(dst, list(runs) or None, progress=show)
    failed = sum(c.error is not None for c in done)
    click.echo(f"{sum(not c.existing and not c.error for c in done)} copied, "
               f"{sum(c.existing for c in done)} already there" + (f", {failed} failed" if failed else ""))
    if failed:
        sys.exit(1)


@cli.command()
@click.argument("runs", nargs=-1, required=True)
@click.option("--yes", "-y", is_flag=True, help="Do not ask (for scripts).")
@click.pass_context
def rm(ctx: click.Context, runs: tuple[str, ...], yes: bool) -> None:
    """Delete runs completely."""
    wh = _api(ctx)
    ids = list(dict.fromkeys(wh.resolve(r) for r in runs))  # `rm 1 1` deletes one run
    if not yes:
        if not _interactive():
            raise click.UsageError("refusing to delete without a terminal to ask on; pass --yes")
        click.confirm(f"Delete run(s) {', '.join(map(str, ids))} and all their rows?", abort=True)
    n = wh.remove(ids)
    click.echo(f"deleted {n} run(s): {', '.join(map(str, ids))}")


@cli.command(name="check")
@click.pass_context
def check_cmd(ctx: click.Context) -> None:
    """Verify the warehouse: storage integrity, run counts, orphan rows, each run's rollups and report against
    its ops; exit 1 listing the problems."""
    with contextlib.ExitStack() as stack:
        bar = None  # (made at the first step, when the number of steps is known)

        def progress(done: int, total: int) -> None:
            nonlocal bar
            if bar is None:
                bar = stack.enter_context(click.progressbar(length=total, label="check", file=sys.stderr))
            bar.update(1)
        problems = _api(ctx).check(progress if _stderr_terminal() else None)
    _problems(ctx, problems, "warehouse ok")


def _problems(ctx: click.Context, problems: list[str], ok: str) -> None:
    """One problem a line and exit 1, or the all-clear."""
    for p in problems:
        click.echo(p)
    if problems:
        click.echo(f"{len(problems)} problem(s)", err=True)
        ctx.exit(1)
    click.echo(ok)


# ---------------------------------------------------------------------------------------------------- db
@cli.group(cls=_Group)
def db() -> None:
    """Schema and roles: upgrade, current, check, create-reader."""


@db.command()
@click.option("--revision", default="head", show_default=True, help="A revision id (0001...) or head.")
@click.pass_context
def upgrade(ctx: click.Context, revision: str) -> None:
    """Upgrade the warehouse's schema (creates it when new)."""
    click.echo(f"at revision {_api(ctx).upgrade(revision)}")


@db.command()
@click.pass_context
def current(ctx: click.Context) -> None:
    """Print the warehouse's revision and the code's head."""
    rev, head, known = _api(ctx).revision()
    if not known:
        advice = (": written by a newer warehouse (or a damaged stamp); install the newer tt-profile-warehouse to "
                  "use it")
    else:
        advice = "" if rev == head else ": run `warehouse db upgrade`"
    click.echo(f"{rev or 'empty'} (head {head}){advice}")


@db.command()
@click.pass_context
def check(ctx: click.Context) -> None:
    """Compare the tables with the models (alembic check); exit 1 on a difference."""
    _problems(ctx, _api(ctx).check_schema(), "schema matches the models")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (only this machine by default; 0.0.0.0 for everyone).")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="TCP port.")
@click.option("--max-connections", type=click.IntRange(min=1), default=None,
              help="Connections open at once; more are closed at once (default: from the file limit, at most 512).")
@click.option("--header-timeout", type=Finite(min=0.1, max=3600), default=10.0, show_default=True,
              help="Seconds a connection has to send a request's headers.")
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, max_connections: int | None, header_timeout: float) -> None:
    """A read-only web dashboard over the warehouse: runs, reports, compare, regressions, trends, SQL.

    On an address other people reach (--host 0.0.0.0), put a reverse proxy in front (nginx, Caddy): TLS, slow
    clients and request rates are its work; the dashboard only bounds its connections and header time."""
    try:
        from warehouse.web.app import serve as run_server
    except ModuleNotFoundError:
        raise click.UsageError("the dashboard needs the web extra: pip install 'tt-profile-warehouse[web]'") from None
    click.echo(f"serving the warehouse read-only on http://{host}:{port}/ (Ctrl-C stops)", err=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        click.echo("note: reachable from other machines; put a reverse proxy in front (TLS, slow clients, rates)",
                   err=True)
    run_server(ctx.obj["db"], host=host, port=port, max_connections=max_connections, header_timeout_s=header_timeout)


@db.command(name="create-reader")
@click.argument("role")
@click.option("--password-env", metavar="VAR", help="Read the role's password from this environment variable "
                                                     "(never from the command line).")
@click.pass_context
def create_reader(ctx: click.Context, role: str, password_env: str | None) -> None:
    """PostgreSQL: create (or refresh) ROLE, a login that can only SELECT from the warehouse; give its URL to
    `warehouse sql`, `warehouse serve` and dashboards."""
    password = None
    if password_env:
        password = os.environ.get(password_env)
        if not password:
            raise click.BadParameter(f"environment variable {password_env} is empty or unset",
                                     param_hint="--password-env")
    left = _api(ctx).create_reader(role, password)
    click.echo(f"role {role}: SELECT on the warehouse's tables and views, read-only transactions, "
               "no temporary tables" + ("" if left else ", large objects, advisory locks or NOTIFY"))
    for what in left:
        click.echo(f"warning: still open to every role of this database: {what}", err=True)


def main() -> None:
    """Console-script entry point."""
    cli(obj={}, prog_name="warehouse")
