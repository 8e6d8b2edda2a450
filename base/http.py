"""One way to serve an aiohttp application, for every HTTP server headrace runs (an
App's health, metrics and queries; the web console; the schema registry).

The same limits everywhere: no access log (a probe every second would flood it), no
signal handlers of its own (the process that embeds the server owns its signals),
idle keep-alive connections closed after ``KEEPALIVE_TIMEOUT`` seconds, and a short
grace for requests in flight at shutdown.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

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


# Host names that reach a loopback listener, and listen hosts that mean every interface.
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_EVERY_INTERFACE = frozenset({"", "0.0.0.0", "::"})
_UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def allowed_hosts(listen_host: str, extra: Iterable[str] = ()) -> frozenset[str] | None:
    """The host names a request's ``Host`` header may carry for a server listening on
    ``listen_host``: the names that reach it there (all of loopback's for a loopback
    listener), plus ``extra``. ``None`` means any: a listener on every interface with no
    ``extra`` cannot know the names its clients use."""
    named = frozenset(h.strip().lower() for h in extra if h.strip())
    host = listen_host.strip("[]").lower()
    if host in _EVERY_INTERFACE:
        return named or None
    return named | (_LOOPBACK if host in _LOOPBACK else frozenset({host}))


def _host_name(netloc: str) -> str:
    """``name`` of ``name``, ``name:port``, ``[v6]`` or ``[v6]:port``, lower case."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1 : netloc.find("]")]
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def same_site_guard(allowed: frozenset[str] | None) -> Middleware:
    """Refuse (403) what a web page elsewhere could make a browser send here.

    1. DNS rebinding: a page on ``evil.example`` whose name was re-pointed at this
       server reaches it with ``Host: evil.example``; only the names in ``allowed`` are
       served (``None``: any).
    2. Cross-site writes: a POST, PUT, PATCH or DELETE whose ``Origin`` names another
       host than the request's own ``Host``. Tools such as curl send no ``Origin``;
       browsers always send it with such requests.
    """

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host", "")
        if allowed is not None and _host_name(host) not in allowed:
            raise web.HTTPForbidden(
                text=f"this server does not answer to the host name {_host_name(host)!r}"
            )
        origin = request.headers.get("Origin")
        if request.method in _UNSAFE_METHODS and origin is not None:
            parsed = urlsplit(origin)
            if parsed.scheme not in ("http", "https") or parsed.netloc.lower() != host.lower():
                raise web.HTTPForbidden(text="changes must come from this server's own pages")
        return await handler(request)

    return guard
