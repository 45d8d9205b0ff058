"""Commands on the warehouse itself: user SQL, the schema, migrations and roles, the dashboard."""
from __future__ import annotations

import os
import sys

import click

from warehouse.cli.base import Finite, _api, _Group, _problems, cli


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


@cli.command(name="mcp")
@click.option("--allow-triage", is_flag=True, help="Let the agent record triage decisions (a status and a note, "
                                                   "nothing else); read-only without it.")
@click.option("--dashboard-url", metavar="URL", help="The dashboard's address (`warehouse serve`): every answer "
                                                     "links to its page.")
@click.pass_context
def mcp_cmd(ctx: click.Context, allow_triage: bool, dashboard_url: str | None) -> None:
    """A Model Context Protocol server over stdio, for agents: inventory, run summaries, tt-perf-report's table,
    compare, changes, the gate, trends and read-only SQL, every answer bounded.

    Configure an agent with the command `warehouse --db URL mcp`."""
    try:
        from warehouse.mcp import serve as serve_mcp  # (lazy: the [mcp] extra)
        import mcp  # noqa: F401
    except ModuleNotFoundError:
        raise click.UsageError("the agent server needs the mcp extra: pip install 'tt-profile-warehouse[mcp]'"
                               ) from None
    serve_mcp(ctx.obj["db"], dashboard_url=dashboard_url, allow_triage=allow_triage)


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
