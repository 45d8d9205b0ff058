"""``warehouse mcp``: the warehouse for agents, as a Model Context Protocol server over stdio (the ``[mcp]`` extra).

Each tool is a thin call of :class:`warehouse.api.Warehouse`, read-only unless the server was started with
``--allow-triage`` (then ``triage`` may change a decision's status, nothing else). Every answer is JSON text,
bounded: ``limit`` rows (default :data:`DEFAULT_ROWS`, at most :data:`MAX_ROWS`), and never over
:data:`MAX_BYTES` (an agent's reply budget); where rows were left out it says how many (``more``) and how to get
them. Units are named in every answer; with ``--dashboard-url`` each answer carries a link to its page. An error is
a tool error with the message the CLI would print.
"""
from __future__ import annotations

from warehouse.mcp.server import DEFAULT_ROWS, MAX_BYTES, MAX_ROWS, build_server, serve

__all__ = ["DEFAULT_ROWS", "MAX_BYTES", "MAX_ROWS", "build_server", "serve"]
