"""A tiny HTTP/1.1 server on asyncio streams: health, metrics and interactive queries.

Routes:

- ``GET /health``: ``200`` with the instance's state and tasks as JSON while it runs,
  ``503`` otherwise;
- ``GET /metrics``: the Prometheus text exposition;
- ``GET /topology``: the topology's ``describe()``, as data and as text;
- ``GET /stores``: every store of the topology, global stores included;
- ``GET /stores/{store}/{key}``: the key's value (a key-value store), or its windows or
  sessions (``?from=&to=`` bound their times), when this instance holds the key;
  otherwise ``404`` naming the instance that does (``{"host": "h:p"}``), so a caller can
  ask it. A global store is whole on every instance, so any instance answers for any key;
- ``GET /stores/{store}?from_key=&to_key=&from=&to=&limit=``: a range of the store, from
  the tasks of this instance, naming the instances that hold the rest.

``_queries.py`` says what each answer holds. A route gets the path's segments (each
percent-decoded after splitting, so a key may hold ``/`` as ``%2F``) and the query's
parameters; a parameter given twice is a ``400``, since no route takes lists.

The server is aiohttp's: HTTP/1.1 with keep-alive, its limits on request line and header
sizes, and a bound on how long a slow client may hold a connection open.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from headrace.base.http import HttpSite

log = logging.getLogger("headrace.streams.runtime.http")

Response = tuple[int, str, bytes]  # status, content type, body
Params = dict[str, str]
Route = Callable[[list[str], Params], Awaitable[Response]]


def json_response(status: int, body: Any) -> Response:
    return status, "application/json", json.dumps(body, default=str).encode()


class HttpServer:
    """Serves ``routes`` (first path segment -> handler of the remaining segments)."""

    def __init__(self, host: str, port: int, routes: dict[str, Route]) -> None:
        self._routes = routes
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._handle)
        self._site = HttpSite(app, host, port)

    @property
    def address(self) -> str:
        return self._site.address

    async def start(self) -> None:
        await self._site.start()

    async def stop(self) -> None:
        await self._site.stop()

    async def _handle(self, request: web.Request) -> web.Response:
        status, ctype, body = await self._answer(request)
        return web.Response(status=status, body=body, headers={"Content-Type": ctype})

    async def _answer(self, request: web.Request) -> Response:
        if request.method != "GET":
            return json_response(405, {"error": "only GET is served"})
        # Segments are split before they are decoded, so a key may hold "/" as %2F.
        raw_path = urllib.parse.urlsplit(request.raw_path).path
        segments = [urllib.parse.unquote(s) for s in raw_path.strip("/").split("/") if s]
        route = self._routes.get(segments[0] if segments else "")
        if route is None:
            return json_response(404, {"error": f"no route {request.path}"})
        params: Params = {}
        for name, value in request.query.items():
            if name in params:
                return json_response(400, {"error": f"query parameter {name!r} is given twice"})
            params[name] = value
        try:
            return await route(segments[1:], params)
        except Exception as error:  # a failing route answers 500, the server keeps going
            log.exception("HTTP %s failed", request.path)
            return json_response(500, {"error": repr(error)})
