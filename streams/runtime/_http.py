"""A tiny HTTP/1.1 server on asyncio streams: health, metrics and interactive queries.

Routes:

- ``GET /health``: ``200`` with the instance's state and tasks as JSON while it runs,
  ``503`` otherwise;
- ``GET /metrics``: the Prometheus text exposition;
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

One request per connection, ``Connection: close``; enough for probes and lookups.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("headrace.streams.runtime.http")

Response = tuple[int, str, bytes]  # status, content type, body
Params = dict[str, str]
Route = Callable[[list[str], Params], Awaitable[Response]]

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            503: "Service Unavailable", 500: "Internal Server Error"}


def json_response(status: int, body: Any) -> Response:
    return status, "application/json", json.dumps(body, default=str).encode()


class HttpServer:
    """Serves ``routes`` (first path segment -> handler of the remaining segments)."""

    def __init__(self, host: str, port: int, routes: dict[str, Route]) -> None:
        self._host = host
        self._port = port
        self._routes = routes
        self._server: asyncio.Server | None = None

    @property
    def address(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"{host}:{port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self._host, self._port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, ctype, body = await self._answer(reader)
            head = (
                f"HTTP/1.1 {status} {_REASONS.get(status, 'OK')}\r\n"
                f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader) -> Response:
        request_line = await asyncio.wait_for(reader.readline(), 10)
        while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
            pass  # headers are not needed by any route
        parts = request_line.decode("latin-1").split()
        if len(parts) < 2:
            return json_response(400, {"error": "malformed request"})
        method, target = parts[0], parts[1]
        if method != "GET":
            return json_response(405, {"error": "only GET is served"})
        url = urllib.parse.urlsplit(target)
        path = url.path
        segments = [urllib.parse.unquote(s) for s in path.strip("/").split("/") if s]
        route = self._routes.get(segments[0] if segments else "")
        if route is None:
            return json_response(404, {"error": f"no route {path}"})
        params: Params = {}
        for name, value in urllib.parse.parse_qsl(url.query, keep_blank_values=True):
            if name in params:
                return json_response(400, {"error": f"query parameter {name!r} is given twice"})
            params[name] = value
        try:
            return await route(segments[1:], params)
        except Exception as error:  # a failing route answers 500, the server keeps going
            log.exception("HTTP %s failed", path)
            return json_response(500, {"error": repr(error)})
