"""Commands on runs: ingest, list, export, report, perf, tag, copy, rm, check."""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import click

from warehouse.api import DEFAULT_GLOB, output_stream, shown, write_output
from warehouse.cli import base  # (its _interactive and _stderr_terminal: tests stand in for them)
from warehouse.cli.base import (_api, _problems, _tags, cli, error, format_option, label_option, rank_option,
                                ranked, tag_option)
from warehouse.workers import terminate_as_exception


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
    from warehouse.render import admin

    bar: Any = None
    stack = contextlib.ExitStack()

    def progress(done: int, total: int, files: int) -> None:
        nonlocal bar
        if bar is None and base._stderr_terminal() and (files > 1 or total > 20 * 1024 * 1024):
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
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet", "perfetto"]), default="csv", show_default=True,
              help="csv: RUN back as its original file; perfetto: RUN's timeline as Chrome trace-event JSON "
                   "(ui.perfetto.dev, chrome://tracing); parquet: every run into the Parquet lake DIR.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="csv, perfetto: the file (default: stdout).")
@click.option("--label", default=None, help="parquet: only the runs of this label.")
@rank_option()
@click.pass_context
def export(ctx: click.Context, target: str, fmt: str, output: str | None, label: str | None) -> None:
    """Write a run back as its original CSV, or (--format parquet) the warehouse into a Parquet lake.

    The lake is Hive-partitioned by label and date, one file per run in each dataset (runs, run_tags, sections,
    signposts, ops, rollups); a second export writes only runs that are new or changed and removes runs that
    left the warehouse. DuckDB reads it with the warehouse's view names: .read DIR/duckdb_views.sql. On a rank of
    a multi-host capture: csv is that rank's file, perfetto every rank's timeline; --rank N: rank N's alone."""

    wh = _api(ctx)
    if fmt == "parquet":
        if output:
            raise click.UsageError("--output is for --format csv or perfetto; the lake is the folder DIR")
        _export_lake(wh, target, label)
        return
    one = ranked(ctx, target, label)
    run_id = int(one or wh.resolve(target, label))
    if fmt == "perfetto":  # (a rank's run stands for its multi-host capture, as in perf, unless --rank)
        with output_stream(output) if output else contextlib.nullcontext(sys.stdout.buffer) as f:
            wh.export_perfetto([run_id] if one else wh.ranks(run_id), f)
        return
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
            if base._stderr_terminal():
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
@rank_option()
@click.pass_context
def report(ctx: click.Context, run: str, label: str | None, json_out: str | None, md_out: str | None,
           quiet: bool) -> None:
    """The OPT_BASELINE report of a run (id or 'latest'), as profile_summary.py prints it (--rank N: of rank N's
    file of the multi-host capture RUN belongs to)."""
    from warehouse.render import report as rr

    one = ranked(ctx, run, label)
    res = _api(ctx).report(one or run, None if one else label)
    txt = rr.text(res)
    if json_out:
        write_output(json_out, rr.to_json(res))
    if md_out:
        write_output(md_out, txt + "\n")
    if not quiet:
        click.echo(txt)


# ---------------------------------------------------------------------------------------------------- perf
@cli.command()
@click.argument("runs", nargs=-1, required=True, metavar="RUN [RUN]...")
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
@rank_option()
@click.pass_context
def perf(ctx: click.Context, runs: tuple[str, ...], label: str | None, section: str | None,
         start_signpost: str | None,
         end_signpost: str | None, no_merge_devices: bool, arch: str | None, id_range: str | None,
         summary_out: str | None, show_summary: bool, group_by: str, tracing_mode: bool, csv_out: str | None,
         as_json: bool, fmt: str) -> None:
    """tt-perf-report's per-op table of a run (id or 'latest'): device time, op-to-op gap, cores, DRAM GB/s and %,
    TFLOPs and %, Bound, category and math fidelity per op, as tt-perf-report 1.4.1 computes them. Several runs
    (the ranks of a multi-host capture, one file per host) are one table, as tt-perf-report reads their CSVs
    given together: rows in the order given, device ids of the k-th run moved up by k x the devices per run."""
    from warehouse.render.perf import render, summary_csv, to_csv

    wh = _api(ctx)
    one = ranked(ctx, runs[0], label)
    if one is not None and len(runs) > 1:
        raise click.UsageError("--rank picks one rank of RUN's capture: name one RUN")
    # (one run stands for its multi-host capture: every rank, read together, unless --rank picks one)
    chosen = [one] if one else runs if len(runs) > 1 else [str(r) for r in wh.ranks(wh.resolve(runs[0], label))]
    table = wh.perf_table(
        chosen, label=label, section=section, start=start_signpost, end=end_signpost, merge=not no_merge_devices,
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


@cli.command(name="ranks")
@click.argument("runs", nargs=-1, required=True, metavar="RUN RUN [RUN]...")
@click.pass_context
def ranks_cmd(ctx: click.Context, runs: tuple[str, ...]) -> None:
    """Make stored runs, in rank order, the ranks of one multi-host capture (ingest links a `tt-run --tracy`
    layout itself: rank<N> folders); with one RUN, list its capture's runs."""
    wh = _api(ctx)
    ids = wh.ranks(runs[0]) if len(runs) == 1 else wh.link_ranks(runs)
    if len(ids) == 1:
        click.echo(f"run {ids[0]} is a run of one host (no rank tags)")
        return
    click.echo(f"multi-host capture {ids[0]}: " + ", ".join(f"rank {k} = run {r}" for k, r in enumerate(ids)))


# ---------------------------------------------------------------------------------------------------- upkeep
@cli.command()
@click.option("--from", "src", required=True, metavar="PATH|URL", help="The warehouse to copy from.")
@click.option("--to", "dst", required=True, metavar="PATH|URL", help="The warehouse to copy into.")
@click.argument("runs", nargs=-1)
def copy(src: str, dst: str, runs: tuple[str, ...]) -> None:
    """Copy runs (all when none are named) between warehouses, lossless and idempotent."""
    from warehouse.api import Warehouse

    def show(c: Any) -> None:
        if c.error:
            error(c.error)
        elif c.existing:
            click.echo(f"run {c.src_id}: already there as run {c.dst_id}")
        else:
            click.echo(f"run {c.src_id}: copied as run {c.dst_id} ({c.ops} ops)")
    source = Warehouse(src)
    done = source.copy_to(dst, list(runs) or None, progress=show)
    failed = sum(c.error is not None for c in done)
    click.echo(f"{sum(not c.existing and not c.error for c in done)} copied, "
               f"{sum(c.existing for c in done)} already there" + (f", {failed} failed" if failed else ""))
    # (a decision's id names its runs by their number in the source: it would name nothing, or another night, in
    # the destination; the command says so rather than copying it wrong)
    left = source.decisions([c.src_id for c in done if c.error is None])
    if left:
        click.echo(f"note: {len(left)} triage decision(s) about these runs were not copied (their ids name runs "
                   f"by their number here): {', '.join(d.id for d in left[:5])}{' ...' if len(left) > 5 else ''}; "
                   "record them again in the destination with `warehouse triage`", err=True)
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
        if not base._interactive():
            raise click.UsageError("refusing to delete without a terminal to ask on; pass --yes")
        click.confirm(f"Delete run(s) {', '.join(map(str, ids))} and all their rows?", abort=True)
    n = wh.remove(ids)
    click.echo(f"deleted {n} run(s): {', '.join(map(str, ids))}")


@cli.command(name="check")
@click.option("--repair", is_flag=True, help="First build every run's history series (table run_series) again "
              "from its rollups: what a problem with them asks for.")
@click.pass_context
def check_cmd(ctx: click.Context, repair: bool) -> None:
    """Verify the warehouse: storage integrity, run counts, orphan rows, each run's rollups, history series and
    report against its ops; exit 1 listing the problems."""
    if repair:
        click.echo(f"rebuilt the history series of {_api(ctx).rebuild_series()} run(s)", err=True)
    with contextlib.ExitStack() as stack:
        bar = None  # (made at the first step, when the number of steps is known)

        def progress(done: int, total: int) -> None:
            nonlocal bar
            if bar is None:
                bar = stack.enter_context(click.progressbar(length=total, label="check", file=sys.stderr))
            bar.update(1)
        problems = _api(ctx).check(progress if base._stderr_terminal() else None)
    _problems(ctx, problems, "warehouse ok")
