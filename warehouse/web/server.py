"""Serving the dashboard: uvicorn with bounds a public port needs.

uvicorn accepts every connection and waits for its request headers forever, so connections that are opened and
never finish (a slow client, or someone holding them on purpose) pile up until the process runs out of file
descriptors; from then on every accept fails and asyncio logs a traceback for each try. Here:

- at most ``max_connections`` connections are open at once (the file limit decides the default); one more is
  closed as soon as it is accepted, and more requests than that at once get 503;
- a connection has ``header_timeout`` seconds to send a whole request's headers (first, and after each response);
- the same log line is written at most a few times a minute, then counted.

A dashboard on ``--host 0.0.0.0`` should still sit behind a reverse proxy (nginx, Caddy) that terminates TLS,
buffers slow clients and limits request rates: these bounds keep the process alive, they do not share it fairly.
"""
from __future__ import annotations

import asyncio
import logging
import resource
import time
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

DEFAULT_HEADER_TIMEOUT_S = 10.0
_FD_RESERVE = 64  # descriptors kept for the warehouse's own files, sockets and the log


def default_max_connections() -> int:
    """Half of the descriptors this process may open (less a reserve), at most 512."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 512
    return max(8, min(512, (soft - _FD_RESERVE) // 2))


def guarded_protocol(max_connections: int, header_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a connection cap and a header timeout."""

    class Guarded(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if len(self.server_state.connections) >= max_connections:
                self.transport = transport  # (connection_lost reads it)
                transport.abort()
                return
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
            self._header_timer = self.loop.call_later(header_timeout_s, self._headers_late)

        def _headers_late(self) -> None:
            self._header_timer = None
            waiting = self.cycle is None or self.cycle.response_complete  # (no request being answered)
            if waiting and not self.transport.is_closing():
                self.transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # (the next request's headers have the same time)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().connection_lost(exc)

    return Guarded


class RateLimited(logging.Filter):
    """Lets the same message through at most ``burst`` times per ``period_s``; then says how many were held back."""

    def __init__(self, burst: int = 5, period_s: float = 60.0):
        super().__init__()
        self.burst, self.period_s = burst, period_s
        self._seen: dict[str, tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = f"{record.name}:{record.levelno}:{record.msg}"
        now = time.monotonic()
        start, n = self._seen.get(key, (now, 0))
        if now - start > self.period_s:
            if n > self.burst:
                record.msg = f"{record.msg} (and {n - self.burst} more like it in the last {self.period_s:g} s)"
            start, n = now, 0
        n += 1
        self._seen[key] = (start, n)
        if len(self._seen) > 1000:  # (a bound on what the filter itself keeps)
            self._seen.clear()
        if n > self.burst:
            return False
        if record.exc_info and isinstance(record.exc_info[1], OSError):
            # (the system said no: out of descriptors, a reset connection; its one line says all a traceback would)
            record.msg = f"{record.msg}: {record.exc_info[1]}"
            record.exc_info = None
        if n == self.burst:
            record.exc_info = None  # (one traceback of a kind is enough)
        return True


def run(app: Any, host: str, port: int, *, max_connections: int | None = None,
        header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S) -> None:
    """Serve ``app`` with uvicorn until interrupted, with the bounds of this module."""
    import uvicorn

    limit = max_connections or default_max_connections()
    # (the backlog bounds how many connections one turn of the event loop accepts: a burst larger than the file
    # limit would run out of descriptors before the ones over the cap are closed)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning",
                            http=guarded_protocol(limit, header_timeout_s), limit_concurrency=limit,
                            timeout_keep_alive=5, backlog=limit)
    flt = RateLimited()  # (after the Config: it sets uvicorn's logging up)
    for name in ("asyncio", "uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).addFilter(flt)
    uvicorn.Server(config).run()
