"""The MCP server's tools: each a thin, bounded call of :class:`warehouse.api.Warehouse` (see the package doc)."""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from warehouse.api import Warehouse, database_error
from warehouse.errors import WarehouseError

DEFAULT_ROWS = 10  # rows an answer gives unless asked for more
MAX_ROWS = 100  # the most rows any answer gives
MAX_BYTES = 24_000  # the most bytes of any answer (under an agent's 25k-token reply budget)
UNITS = "durations in us per iteration (a trace's replays: their mean); shares and changes in %"


def _rows(limit: int | None) -> int:
    """The rows asked for, within 1..MAX_ROWS."""
    return max(1, min(MAX_ROWS, DEFAULT_ROWS if limit is None else int(limit)))


def _cap(items: list[Any], limit: int, how: str) -> dict[str, Any]:
    """``items`` cut at ``limit``, with how many were left out and how to get them."""
    out: dict[str, Any] = {"items": items[:limit], "total": len(items)}
    if len(items) > limit:
        out["more"] = f"{len(items) - limit} more; {how}"
    return out


def _text(doc: dict[str, Any]) -> str:
    """``doc`` as JSON, never over MAX_BYTES: its longest list is halved (and says so) until it fits."""
    while True:
        text = json.dumps(doc, default=str, ensure_ascii=False)
        if len(text.encode()) <= MAX_BYTES:
            return text
        lists = [(len(json.dumps(v, default=str)), path, v) for path, v in _lists(doc) if len(v) > 1]
        if not lists:
            return json.dumps({"error": f"the answer is over {MAX_BYTES} bytes; ask for fewer rows or columns"})
        _, (parent, key), v = max(lists, key=lambda x: x[0])
        keep = len(v) // 2
        parent[key] = v[:keep]
        doc["truncated"] = (f"cut to fit {MAX_BYTES} bytes: {key} shows {keep} of {len(v)}; ask with a smaller "
                            "limit or a narrower question")


def _lists(doc: Any, parent: Any = None, key: Any = None) -> list[tuple[tuple[Any, Any], list[Any]]]:
    out: list[tuple[tuple[Any, Any], list[Any]]] = []
    if isinstance(doc, list) and parent is not None:
        out.append(((parent, key), doc))
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _lists(v, doc, k)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _lists(v, doc, i)
    return out


class Tools:
    """The tools, over one warehouse (``url``), with links into the dashboard at ``dashboard_url`` when given."""

    def __init__(self, url: str, dashboard_url: str | None = None, allow_triage: bool = False) -> None:
        self.wh = Warehouse(url)
        self.dashboard = dashboard_url.rstrip("/") if dashboard_url else None
        self.allow_triage = allow_triage

    def _link(self, path: str) -> dict[str, str]:
        return {"link": self.dashboard + path} if self.dashboard else {}

    # ------------------------------------------------------------------------------------------------ tools
    def inventory(self, run: str | None = None, limit: int | None = None) -> str:
        """Without run: the labels, with their run counts and newest run. With run (an id or 'latest'): what that
        run can answer: its sections, replays, devices, ops and warnings."""
        n = _rows(limit)
        if run is None:
            runs = self.wh.runs()
            by: dict[str, list[Any]] = {}
            for r in runs:
                by.setdefault(r.label or "(none)", []).append(r)
            labels = [{"label": k, "runs": len(v), "newest_run": v[-1].id, "newest_time": v[-1].time}
                      for k, v in sorted(by.items())]
            return _text({"runs": len(runs), "labels": _cap(labels, n, "pass limit (at most 100)"),
                          "answers": "per run: run_summary, perf_table, compare_runs; per label: changes, gate, "
                                     "trend; any: sql", **self._link("/runs")})
        d = self.wh.run(run)
        info = d.run
        sections = [{"name": s["name"], "kind": s["kind"]} for s in d.sections]
        devices = self.wh.query("SELECT DISTINCT device_id FROM op WHERE run_id = :r AND device_id IS NOT NULL "
                                "ORDER BY device_id", r=info.id)
        replays = self.wh.query("SELECT COUNT(DISTINCT replay_session) AS n FROM op WHERE run_id = :r AND "
                                "replay_session IS NOT NULL", r=info.id)
        warnings = info.warnings or []
        return _text({
            "run": info.id, "label": info.label, "tags": info.tags, "captured": info.time, "file": info.file_name,
            "arch": info.arch, "freq_mhz": info.freq_mhz, "ops": info.op_count, "sections": sections,
            "trace_replays": replays[0]["n"] if replays else 0, "devices": [r["device_id"] for r in devices],
            "warnings": _cap([w.get("message") for w in warnings], n, "warehouse runs --warnings"),
            "can_answer": {"OPT_BASELINE report": d.sectioned, "per-op table": True,
                           "history": info.label is not None},
            "previous_run": d.previous, "next_run": d.next, **self._link(f"/runs/{info.id}")})

    def run_summary(self, run: str = "latest", label: str | None = None, section: str | None = None,
                    limit: int | None = None) -> str:
        """The OPT_BASELINE report of a run, per section: totals, and the top op codes, categories, blocks,
        layers and ops by kernel time."""
        n = _rows(limit)
        doc = self.wh.report(run, label)
        run_id = self.wh.resolve(run, label)
        out: dict[str, Any] = {"run": run_id, "units": UNITS + "; share: of the section's kernel time (0..1)",
                               "freq_mhz": doc.get("freq_mhz"), "sections": {}}
        for name, sec in doc.items():
            if not isinstance(sec, dict) or "ops" not in sec or (section and name != section):
                continue
            s = {k: v for k, v in sec.items() if not isinstance(v, (list, dict))}
            for part in ("by_op", "by_category", "by_block", "by_layer", "top_ops", "top_gaps"):
                if isinstance(sec.get(part), list):
                    s[part] = _cap(sec[part], n, "pass limit (at most 100)")
            out["sections"][name] = s
        return _text({**out, **self._link(f"/runs/{run_id}")})

    def perf_table(self, run: str = "latest", label: str | None = None, sort_by: str = "Device Time",
                   columns: list[str] | None = None, limit: int | None = None) -> str:
        """tt-perf-report 1.4.1's per-op table of a run, the top rows by ``sort_by`` (a column name), with the
        given columns (default: the main ones, Advice included); a rank of a multi-host capture reads every rank."""
        n = _rows(limit)
        doc = self.wh.perf(self.wh.ranks(self.wh.resolve(run, label)))
        rows = doc["rows"]
        if rows and sort_by not in rows[0]:
            raise WarehouseError(f"sort_by {sort_by!r}: expected a column of the table ({', '.join(rows[0])})")
        cols = columns or ["ID", "OP Code", "Device Time", "Op-to-Op Gap", "Cores", "DRAM %", "FLOPs %", "Bound",
                           "Math Fidelity", "Advice"]

        def num(v: Any) -> float:
            try:
                return float(v)
            except (TypeError, ValueError):
                return float("-inf")
        ranked = sorted(rows, key=lambda r: num(r.get(sort_by)), reverse=True)
        picked = [{c: r.get(c) for c in cols} for r in ranked]
        return _text({"run": doc["summary"].get("run_id"), "sort_by": sort_by,
                      "units": "Device Time and Op-to-Op Gap in us; DRAM in GB/s; DRAM %, FLOPs % of the peak",
                      "summary": doc["summary"], "rows": _cap(picked, n, "pass limit (at most 100) or sql"),
                      **self._link(f"/runs/{doc['summary'].get('run_id')}/perf")})

    def compare_runs(self, a: str, b: str, by: str = "block", section: str | None = None,
                     limit: int | None = None) -> str:
        """Run b against run a, per key of ``by`` (block, layer, op-code, section), largest moves first."""
        doc = self.wh.compare(a, b, by=by, section=section).to_json()
        doc["rows"] = _cap(doc.get("rows", []), _rows(limit), "pass limit (at most 100)")
        return _text({**doc, "units": UNITS, **self._link(f"/compare?a={quote(str(a))}&b={quote(str(b))}")})

    def changes(self, label: str, since: str | None = None, limit: int | None = None) -> str:
        """The change points of a label's whole history, one per cause: steps (the first night of the new level,
        with the run and its tags, e.g. commit), drifts, outliers apart, each with its contributors."""
        doc = self.wh.changes(label=label, since=since).to_json()
        n = _rows(limit)
        for c in doc["changes"]:
            c.pop("series", None)  # (the chart's points: the dashboard draws them)
            c["contributors"] = c.get("contributors", [])[:5]
        doc["changes"] = _cap(doc["changes"], n, "pass limit (at most 100)")
        doc["outliers"] = _cap(doc["outliers"], n, "pass limit (at most 100)")
        return _text({**doc, "units": UNITS, **self._link(f"/changes?label={quote(label)}")})

    def gate(self, label: str | None = None, run: str | None = None, baseline_tag: str | None = None,
             limit: int | None = None) -> str:
        """The gate: the newest run of ``label`` (or ``run``, against runs tagged ``baseline_tag`` KEY=VALUE)
        against its baseline: regressions (with evidence), suspicious moves (no evidence: a warning), improvements,
        the coverage, and whether CI should fail (regressed) or the capture is invalid."""
        tags = None
        if baseline_tag:
            k, sep, v = baseline_tag.partition("=")
            if not sep:
                raise WarehouseError(f"baseline_tag {baseline_tag!r}: expected KEY=VALUE")
            tags = {k: v}
        res = self.wh.regressions(label=label, run=run, baseline_tags=tags)
        doc = res.to_json()
        findings = [{k: f.get(k) for k in ("id", "kind", "by", "key", "change_pct", "before", "after", "delta_us",
                                            "sections", "metrics", "evidence", "run_id", "time", "tags")}
                    | {"inside": [(c.get("by"), c.get("key"), c.get("change_pct")) for c in f.get("contributors", [])
                                  ][:5]} for f in doc["findings"]]
        return _text({"regressed": res.regressed,
                      "findings": _cap(findings, _rows(limit), "pass limit (at most 100)"),
                      "invalid": doc.get("invalid", []), "checked": doc["checked"],
                      "warnings": doc.get("warnings", []), "units": UNITS,
                      **self._link(f"/regressions?label={quote(label or '')}")})

    def trend(self, label: str, by: str = "block", keys: list[str] | None = None, last: int = 30,
              top: int = 5) -> str:
        """A metric (kernel time) of ``keys`` (else the ``top`` largest of the newest run) over the ``last`` runs."""
        doc = self.wh.trend(label=label, by=by, keys=keys, last=max(1, min(last, 365)),
                            top=max(1, min(top, 20))).to_json()
        return _text({**doc, "units": UNITS, **self._link(f"/trend?label={quote(label)}&by={by}")})

    def sql(self, query: str, limit: int | None = None) -> str:
        """One read-only SQL statement over the tables and views (`warehouse schema` lists them); writes are
        refused."""
        n = _rows(limit)
        with self.wh.sql(query, max_rows=n + 1, timeout_s=30) as res:
            rows = [list(r) for r in res.rows]
            cols = list(res.columns)
        out = {"columns": cols, "rows": rows[:n]}
        if len(rows) > n:
            out["more"] = "more rows; pass limit (at most 100), or aggregate in SQL"
        return _text(out)

    def triage(self, ident: str, status: str, note: str | None = None, label: str | None = None) -> str:
        """Record a decision about a finding or change (r-..., c-...): acknowledged or expected (the new
        baseline), invalid (the night leaves every baseline); ``label``: the label whose history holds it. Only when
        the server runs with --allow-triage."""
        if not self.allow_triage:
            raise WarehouseError("triage is off: this server is read-only; start it with --allow-triage")
        d = self.wh.triage(ident, status, note=note, label=label, who="mcp")
        return _text({"recorded": d.to_json() if hasattr(d, "to_json") else str(d)})


def build_server(url: str, dashboard_url: str | None = None, allow_triage: bool = False) -> Any:
    """The MCP server with every tool registered (the ``mcp`` SDK's MCPServer)."""
    from mcp.server.mcpserver import MCPServer  # (lazy: the [mcp] extra)
    from mcp.server.mcpserver.exceptions import ToolError  # (lazy: the [mcp] extra)

    tools = Tools(url, dashboard_url, allow_triage)
    server = MCPServer("tt-profile-warehouse", instructions=(
        "Tenstorrent tt-metal device profiles over time. Start with inventory; every answer is bounded JSON "
        f"(default {DEFAULT_ROWS} rows, at most {MAX_ROWS}, {MAX_BYTES} bytes) and says how to get more."))

    def wrap(fn: Any) -> Any:
        def call(*args: Any, **kw: Any) -> str:
            try:
                return fn(*args, **kw)
            except WarehouseError as e:
                raise ToolError(str(e)) from None
            except Exception as e:
                msg = database_error(e)
                if msg is None:
                    raise
                raise ToolError(msg) from None
        call.__name__, call.__doc__ = fn.__name__, fn.__doc__
        call.__annotations__ = fn.__annotations__
        call.__wrapped__ = fn  # type: ignore[attr-defined]
        return call

    for name in ["inventory", "run_summary", "perf_table", "compare_runs", "changes", "gate", "trend", "sql",
                 "triage"]:
        fn = getattr(tools, name)
        server.tool(name=name, description=fn.__doc__)(wrap(fn))
    return server


def serve(url: str, dashboard_url: str | None = None, allow_triage: bool = False) -> None:
    """Run the server over stdio until the client closes it."""
    build_server(url, dashboard_url, allow_triage).run("stdio")
