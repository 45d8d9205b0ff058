"""The ``warehouse`` group, its error handling (every :class:`WarehouseError` one ``Error: ...`` line, never a
traceback) and the options and argument checks the commands share."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from warehouse import __version__
from warehouse.api import database_error, write_output
from warehouse.errors import UsageError, WarehouseError
from warehouse.workers import Terminated

if TYPE_CHECKING:
    from warehouse.api import Warehouse


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
            ctx.find_root().meta["warehouse.interrupted"] = True
            error("interrupted; an unfinished write was rolled back whole (nothing half-written)")
            ctx.exit(130)
        except Terminated:
            ctx.find_root().meta["warehouse.interrupted"] = True
            error("terminated; an unfinished write was rolled back whole (nothing half-written)")
            ctx.exit(143)
        except Exception as e:
            said = database_error(e)
            if said is None:
                raise
            error(said)
            ctx.exit(1)


def _interactive() -> bool:
    """Whether there is a person at a terminal to ask."""
    return sys.stdin.isatty()


def _stderr_terminal() -> bool:
    """Whether progress bars have a terminal to draw on (never in CI logs or pipes)."""
    return sys.stderr.isatty()


def _api(ctx: click.Context) -> Warehouse:
    """The application layer over the command's warehouse: every command calls it, as notebooks do."""
    from warehouse.api import Warehouse
    root = ctx.find_root()
    wh = root.meta.get("warehouse.api")
    if wh is None:
        # (one per command, its connections given back when the command ends: a process that runs many commands,
        # a test's CliRunner or a notebook's, never piles up a server's connections)
        wh = root.meta["warehouse.api"] = Warehouse(ctx.obj["db"])

        def close() -> None:
            # (not after a signal: the interrupted frame may hold the pool's lock; the process is ending anyway)
            if not root.meta.get("warehouse.interrupted"):
                wh.close()
        root.call_on_close(close)
    return wh


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


def rank_option() -> Any:
    """``--rank N``: narrows the command's RUN to rank N of the multi-host capture it belongs to (read back by
    :func:`ranked`; not a parameter of the command's function, it is part of naming the run)."""
    def keep(ctx: click.Context, _param: click.Parameter, value: int | None) -> None:
        ctx.meta["warehouse.rank"] = value
    return click.option("--rank", type=click.IntRange(min=0), expose_value=False, callback=keep,
                        help="Rank N of the multi-host capture RUN belongs to (`tt-run --tracy`: a file per rank).")


def ranked(ctx: click.Context, run: str, label: str | None = None) -> str | None:
    """RUN as ``--rank`` narrows it: the id of that rank's run, or None when ``--rank`` was not given."""
    rank = ctx.meta.get("warehouse.rank")
    if rank is None:
        return None
    wh = _api(ctx)
    return str(wh.rank_run(wh.resolve(run, label), rank))


def format_option(choices: tuple[str, ...] = ("table", "md", "json")) -> Any:
    """``--format``, one choice list per kind of output."""
    return click.option("--format", "fmt", type=click.Choice(list(choices)), default="table", show_default=True,
                        help="Output format.")


def junit_option() -> Any:
    """``--junit FILE``: the verdict as JUnit XML, which CI systems read (a failure per regression)."""
    return click.option("--junit", "junit_file", type=click.Path(dir_okay=False, writable=True), metavar="FILE",
                        help="Also write the verdict as JUnit XML (a failure per regression, skipped for "
                             "insufficient data).")


def ci_outputs(junit_file: str | None, junit_xml: Callable[[], str], markdown: Callable[[], str]) -> None:
    """Write the JUnit file when asked, and append the Markdown to GitHub's job summary when
    ``$GITHUB_STEP_SUMMARY`` names one (GitHub Actions sets it in every step)."""
    if junit_file:
        write_output(junit_file, junit_xml())
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(markdown().rstrip("\n") + "\n\n")
        except OSError as e:
            raise click.ClickException(f"{summary}: cannot append the job summary ({e.strerror}); "
                                       "check GITHUB_STEP_SUMMARY") from None


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


# ---------------------------------------------------------------------------------------------------- history
def _by_choice() -> click.Choice:
    from warehouse.registry.measures import grouping_keys

    return click.Choice(grouping_keys(cli_only=True))


class _MetricChoice(click.Choice):
    """The registry's metrics, or ``col:<CSV NAME>``: any numeric CSV column by name."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from warehouse.registry.measures import COLUMN_METRIC

        if isinstance(value, str) and value.startswith(COLUMN_METRIC) and value[len(COLUMN_METRIC):].strip():
            return value
        return super().convert(value, param, ctx)


def _metric_choice() -> click.Choice:
    from warehouse.registry.measures import METRIC

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


def _iso_date(_ctx: Any, param: click.Parameter, value: str | None) -> str | None:
    from datetime import date
    if value is None:
        return None
    try:
        return date.fromisoformat(value[:10]).isoformat()
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected a date, YYYY-MM-DD", param=param) from None


def _problems(ctx: click.Context, problems: list[str], ok: str) -> None:
    """One problem a line and exit 1, or the all-clear."""
    for p in problems:
        click.echo(p)
    if problems:
        click.echo(f"{len(problems)} problem(s)", err=True)
        ctx.exit(1)
    click.echo(ok)


def main() -> None:
    """Console-script entry point."""
    cli(obj={}, prog_name="warehouse")
