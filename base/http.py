"""One way to serve an aiohttp application, for every HTTP server headrace runs (an
App's health, metrics and queries; the web console; the schema registry).

The same limits everywhere: no access log (a probe every second would flood it), no
signal handlers of its own (the process that embeds the server owns its signals),
idle keep-alive connections closed after ``KEEPALIVE_TIMEOUT`` seconds, and a short
grace for requests in flight at shutdown.
"""

from __future__ import annotations

from aiohttp import web

# Seconds an idle keep-alive connection stays open; probes and lookups reconnect cheaply.
KEEPALIVE_TIMEOUT = 15


class HttpSite:
    """``app`` served on ``host:port`` (port 0 picks a free one) between ``start`` and
    ``stop``; ``address`` is where it listens."""

    def __init__(self, app: web.Application, host: str, port: int) -> None:
        self._app, self._host, self._port = app, host, port
        self._runner: web.AppRunner | None = None

    @property
    def address(self) -> str:
        """``host:port`` the site listens on (the port picked when 0 was asked for)."""
        if self._runner is None:
            raise RuntimeError("the HTTP site is not started")
        host, port = self._runner.addresses[0][:2]
        return f"{host}:{port}"

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    async def start(self) -> None:
        runner = web.AppRunner(
            self._app,
            access_log=None,
            handle_signals=False,
            keepalive_timeout=KEEPALIVE_TIMEOUT,
            shutdown_timeout=1.0,
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host, self._port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
