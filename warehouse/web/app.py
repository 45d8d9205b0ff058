"""The dashboard: a read-only ASGI app over the library. Pages render library results with Jinja2 templates (no
SQL in templates); every page has a JSON form (``?format=json``) with the same data; assets ship in the package.

The engine is opened read-only (SQLite ``mode=ro``; PostgreSQL read-only transactions) and ``/sql`` goes through
the same guard as ``warehouse sql``: no page can write to the database.
"""
from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from warehouse.errors import NotFound, UsageError, WarehouseError
from warehouse.render import rows as render
from warehouse.registry.measures import METRIC, grouping_keys

HERE = Path(__file__).parent
SQL_TIMEOUT_S = 10.0
SQL_MAX_ROWS = 1000
SQL_MAX_VALUE_BYTES = 1 << 20    # a page shows what a person reads: a value or a result past these is refused
SQL_MAX_RESULT_BYTES = 16 << 20
CHART_CAUSES = 20  # the changes page draws the first causes by impact; the rest are listed


def _json_default(v: Any) -> Any:
    if hasattr(v, "to_json"):  # a result of the application layer: its JSON document
        return v.to_json()
    if isinstance(v, datetime):
        return v.isoformat(sep=" ")  # the CLI's time format
    if isinstance(v, bytes):
        return v.hex()
    return str(v)


def _json(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(render.json_safe(data), default=_json_default, ensure_ascii=False),
                    status_code=status, media_type="application/json")


LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]


def allowed_hosts_for(host: str) -> list[str]:
    """The Host headers the app answers when it listens on ``host``: on loopback only the loopback names (a
    page elsewhere that rebinds its DNS name to 127.0.0.1 gets 400, never /sql); on a named address that name
    too; on every address (0.0.0.0, ::), any."""
    if host in ("0.0.0.0", "::", ""):
        return ["*"]
    return LOOPBACK_HOSTS + ([host] if host not in LOOPBACK_HOSTS else [])


class _SecurityHeaders:
    """ASGI middleware: every response says ``X-Content-Type-Options: nosniff`` (a CSV is never run as a page)
    and may not be framed by another site."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [
                    (b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
                    (b"referrer-policy", b"same-origin")]
            await send(message)
        await self.app(scope, receive, send_with_headers)


def _spooled(write: Callable[[IO[bytes]], Any]) -> tuple[Iterator[bytes], int]:
    """What ``write`` writes, spooled to a temporary file (in memory up to 8 MiB) and then streamed from it in 1 MiB
    blocks, with its size: a 161 MiB run never sits in the server's memory, and a failed write is an error, never
    half a file."""
    spool = tempfile.SpooledTemporaryFile(max_size=8 << 20)
    try:
        write(spool)
    except BaseException:
        spool.close()
        raise
    size = spool.tell()
    spool.seek(0)

    def chunks() -> Iterator[bytes]:
        with spool:
            while block := spool.read(1 << 20):
                yield block
    return chunks(), size


def _int_param(request: Request, name: str, default: int, minimum: int = 0) -> int:
    """A whole-number query parameter, or a 400 naming it."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit()) or int(raw) < minimum or int(raw) > 10 ** 6:
        raise UsageError(f"{name}={raw!r}: expected a whole number from {minimum} to 1,000,000")
    return int(raw)


def _choice_param(request: Request, name: str, choices: list[str], default: str) -> str:
    """A query parameter from a fixed list (the registry's groupings and metrics), or a 400 listing them."""
    raw = request.query_params.get(name) or default
    if raw not in choices:
        raise UsageError(f"{name}={raw!r}: expected one of {', '.join(choices)}")
    return raw


def _date_param(request: Request, name: str) -> str | None:
    """An ISO date (YYYY-MM-DD) query parameter, or a 400."""
    raw = request.query_params.get(name) or None
    if raw is not None:
        try:
            datetime.strptime(raw, "%Y-%m-%d")
        except ValueError:
            raise UsageError(f"{name}={raw!r}: expected a date, YYYY-MM-DD") from None
    return raw


def _timeline_routes(wh: Any, page: Callable[..., Response], url_for: Callable[..., str],
                     guarded: Callable[..., Any]) -> list[Route]:
    """A run's timeline: its Perfetto JSON as a download, and the page that draws it (``static/timeline.js``)."""
    def trace_download(request: Request) -> Response:
        run_id = wh.resolve(request.path_params["run"])
        # (a rank of a multi-host capture: every rank's timeline, a process per rank and device)
        chunks, _ = _spooled(lambda f: wh.export_perfetto(wh.ranks(run_id), f))
        return StreamingResponse(chunks, media_type="application/json",
                                 headers={"Content-Disposition": f'attachment; filename="run{run_id}.trace.json"'})

    def timeline_page(request: Request) -> Response:
        detail = wh.run(request.path_params["run"])
        return page(request, "timeline.html", {"run": detail.run.to_json(),
                                               "trace": url_for("trace", run=detail.run.id)})
    return [Route("/runs/{run}/trace.json", guarded(trace_download), name="trace"),
            Route("/runs/{run}/timeline", guarded(timeline_page), name="timeline")]


def create_app(url: str | None, allowed_hosts: list[str] | None = None) -> Starlette:
    """The app for the warehouse at ``url`` (opened read-only once, shared by requests); it answers only
    requests whose Host is in ``allowed_hosts`` (default: the loopback names). Every page asks the application
    layer (:class:`warehouse.Warehouse`) and lays out what :mod:`warehouse.render` and it give."""
    from warehouse.api import Warehouse

    wh = Warehouse(url)  # the application layer; its reads are opened read-only, once
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    # the forms' choice lists are the registry's (an entry added to measures.py shows up in every page)
    CHOICES = {"groupings": grouping_keys(True), "metrics": list(METRIC)}
    app: Starlette  # (set below: url_for reads its routes)

    def url_for(name: str, **params: Any) -> str:
        """The path of route ``name`` (its path parameters from ``params``), the other ``params`` as its query
        string (None left out): every link of every page is built here, never spelled in a template."""
        route = next(r for r in app.routes if getattr(r, "name", None) == name)
        names = set(getattr(route, "param_convertors", {})) | ({"path"} if isinstance(route, Mount) else set())
        path = str(app.url_path_for(name, **{k: v for k, v in params.items() if k in names}))
        query = [(k, x) for k, v in params.items() if k not in names and v is not None
                 for x in (v if isinstance(v, list) else [v])]
        return path + ("?" + urlencode(query) if query else "")

    def page(request: Request, name: str, data: dict[str, Any], **view: Any) -> Response:
        """``data`` as the page (with ``view``: what only the HTML needs, such as charts) or as JSON."""
        if request.query_params.get("format") == "json":
            return _json(data)
        return templates.TemplateResponse(request, name, {"d": data, "q": request.query_params, **CHOICES,
                                                          "url_for": url_for, **view})

    def failed(request: Request, e: WarehouseError) -> Response:
        status = 404 if isinstance(e, NotFound) else 400
        if request.query_params.get("format") == "json":
            return _json({"error": str(e)}, status)
        return templates.TemplateResponse(request, "error.html", {"error": str(e), "q": request.query_params,
                                                                  "url_for": url_for}, status_code=status)

    def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
        # a plain function: Starlette runs it in its thread pool, so one slow request (a 10 s /sql) never holds
        # the event loop that every other page is served from
        def endpoint(request: Request) -> Response:
            try:
                return fn(request)
            except WarehouseError as e:
                return failed(request, e)
        endpoint.__name__ = fn.__name__
        return endpoint

    def run_link(run_id: int) -> str:
        return url_for("run", run=run_id)

    def runs_page(request: Request) -> Response:
        q = request.query_params
        rows = wh.runs(label=q.get("label") or None)
        if q.get("tag"):
            k, _, v = q["tag"].partition("=")
            rows = [r for r in rows if r.tags.get(k) == v]
        since, until = _date_param(request, "since") or "", _date_param(request, "until") or ""
        rows = [r for r in rows if (not since or r.time >= since) and (not until or r.time[:10] <= until)]
        totals = {rid: {sec or "(whole run)": round(k, 1) for sec, k in by.items()}
                  for rid, by in wh.section_totals([r.id for r in rows]).items()}
        rows.reverse()  # newest first
        # (every label in the filter, whatever is shown)
        return page(request, "runs.html", {"runs": rows, "kernel_us_by_section": totals, "labels": wh.labels()})

    def run_page(request: Request) -> Response:
        detail = wh.run(request.path_params["run"])
        return page(request, "run.html", {**detail.to_json(), "report": wh.report(detail.run.id)})

    def perf_download(request: Request) -> Response:
        from warehouse.render.perf import to_csv
        run_id = wh.resolve(request.path_params["run"])
        # (a rank of a multi-host capture: every rank read together, as `warehouse perf` does)
        return Response(to_csv(wh.perf_table(wh.ranks(run_id))), media_type="text/csv",
                        headers={"Content-Disposition": f'attachment; filename="run{run_id}_perf.csv"'})

    def report_download(request: Request) -> Response:
        from warehouse.render import report as rr
        run_id = wh.resolve(request.path_params["run"])
        if request.path_params["kind"] not in ("json", "md"):
            raise NotFound("downloads are report.json and report.md")
        res = wh.report(run_id)
        if request.path_params["kind"] == "json":
            return Response(rr.to_json(res), media_type="application/json",
                            headers={"Content-Disposition": f'attachment; filename="run{run_id}.json"'})
        return Response(rr.text(res) + "\n", media_type="text/markdown",
                        headers={"Content-Disposition": f'attachment; filename="run{run_id}.md"'})

    def export_download(request: Request) -> Response:
        run_id = wh.resolve(request.path_params["run"])
        name = wh.query("SELECT file_name FROM run WHERE id = :r", r=run_id)[0]["file_name"]
        chunks, size = _spooled(lambda f: wh.export(run_id, f))
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in str(name))
        return StreamingResponse(chunks, media_type="text/csv",
                                 headers={"Content-Disposition": f'attachment; filename="{safe}"',
                                          "Content-Length": str(size)})

    def compare_page(request: Request) -> Response:
        q = request.query_params
        if not q.get("a") or not q.get("b"):
            return page(request, "compare.html", {"res": None})
        res = wh.compare(q["a"], q["b"], by=_choice_param(request, "by", grouping_keys(True), "layer"),
                         section=q.get("section") or None,
                         metric=_choice_param(request, "metric", list(METRIC), "kernel"))
        return page(request, "compare.html", {"res": res})

    def regressions_page(request: Request) -> Response:
        q = request.query_params
        metric = _choice_param(request, "metric", list(METRIC), "") if q.get("metric") else None
        last = _int_param(request, "last", 1, 1)
        res = wh.regressions(label=q.get("label") or None, metrics=[metric] if metric else None, last=last) \
            if q.get("label") else None
        return page(request, "regressions.html", {"res": res, "labels": wh.labels()})

    def changes_page(request: Request) -> Response:
        from warehouse.web.chart import from_change
        q = request.query_params
        if not q.get("label"):
            return page(request, "changes.html", {"res": None, "labels": wh.labels()})
        metric = _choice_param(request, "metric", list(METRIC), "") if q.get("metric") else None
        res = wh.changes(label=q["label"], since=_date_param(request, "since"), until=_date_param(request, "until"),
                         metrics=[metric] if metric else None).to_json()
        charts = {c["id"]: from_change(c, res["runs"], run_link) for c in res["changes"][:CHART_CAUSES]}
        return page(request, "changes.html", {"res": res, "labels": wh.labels()}, charts=charts,
                    chart_causes=CHART_CAUSES)

    def farm_page(request: Request) -> Response:
        """Every label's changes grouped by cause across labels (``warehouse changes`` without ``--label``)."""
        return page(request, "farm.html", {"res": wh.farm().to_json()})

    def trend_page(request: Request) -> Response:
        from warehouse.web.chart import from_trend, svg
        q = request.query_params
        keys = q.getlist("key") or None
        by = _choice_param(request, "by", grouping_keys(True), "block")
        metric = _choice_param(request, "metric", list(METRIC), "kernel")
        res = wh.trend(by=by, section=q.get("section") or None, label=q.get("label") or None,
                       metric=metric, keys=keys, top=_int_param(request, "top", 5, 1),
                       last=_int_param(request, "last", 0) or None)
        section = None if res.section == "(whole run)" else res.section
        marks = wh.regressions(label=q.get("label") or None, last=len(res.runs), by=[by], metrics=[metric],
                               section=section or "all", keys=res.keys or None)
        regressed = {(f["run_id"], f["key"]) for f in marks.regressions if f["device"] == "all"}
        return page(request, "trend.html", {"res": res, "regressed": sorted(regressed)},
                    # (fitted to the values: a 5 % step must show, not sit flat at the top of an axis from 0)
                    chart=svg(from_trend(res, regressed), res.unit, run_url=run_link, from_zero=False))

    def sql_page(request: Request) -> Response:
        from warehouse import render
        q = request.query_params
        sql = q.get("q") or ""
        if not sql.strip():
            return page(request, "sql.html", {"columns": [], "rows": [], "truncated": False})
        with wh.sql(sql, timeout_s=SQL_TIMEOUT_S, max_rows=SQL_MAX_ROWS, max_value_bytes=SQL_MAX_VALUE_BYTES,
                    max_result_bytes=SQL_MAX_RESULT_BYTES) as res:
            cols, rows = res.columns, [render.plain_row(r) for r in res.rows]
            truncated = res.truncated
        if q.get("format") == "csv":
            return Response(render.to_csv(cols, rows) + "\n", media_type="text/csv",
                            headers={"Content-Disposition": 'attachment; filename="query.csv"'})
        return page(request, "sql.html", {"columns": cols, "rows": rows, "truncated": truncated,
                                          "max_rows": SQL_MAX_ROWS})

    routes = [
        Route("/", guarded(runs_page), name="runs"),
        Route("/runs/{run}", guarded(run_page), name="run"),
        Route("/runs/{run}/report.{kind:str}", guarded(report_download), name="report"),
        Route("/runs/{run}/export.csv", guarded(export_download), name="export"),
        *_timeline_routes(wh, page, url_for, guarded),
        Route("/runs/{run}/perf.csv", guarded(perf_download), name="perf"),
        Route("/compare", guarded(compare_page), name="compare"),
        Route("/regressions", guarded(regressions_page), name="regressions"),
        Route("/changes", guarded(changes_page), name="changes"),
        Route("/farm", guarded(farm_page), name="farm"),
        Route("/trend", guarded(trend_page), name="trend"),
        Route("/sql", guarded(sql_page), name="sql"),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    def crashed(request: Request, exc: Exception) -> Response:
        # a bug, not bad input (that is a 400 above): one line to the browser, the traceback to the server's log
        return PlainTextResponse(f"Internal error ({type(exc).__name__}); the server's log has the details.",
                                 status_code=500)

    app = Starlette(routes=routes, exception_handlers={Exception: crashed}, middleware=[
        Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts or LOOPBACK_HOSTS),
        Middleware(_SecurityHeaders)])
    app.state.warehouse = wh
    return app


def serve(url: str | None, host: str = "127.0.0.1", port: int = 8000, *, max_connections: int | None = None,
          header_timeout_s: float = 10.0) -> None:
    """Run the dashboard with uvicorn until interrupted, with bounded connections and header time
    (:mod:`warehouse.web.server`)."""
    from warehouse.web import server
    server.run(create_app(url, allowed_hosts_for(host)), host, port, max_connections=max_connections,
               header_timeout_s=header_timeout_s)

