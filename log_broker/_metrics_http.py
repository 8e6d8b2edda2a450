"""The broker's ``--metrics-listen`` endpoint: Prometheus text over HTTP, on the loop.

A scrape is one small request; what a client can make this endpoint spend is bounded:

1. at most ``MAX_CONNECTIONS`` connections at once; more are closed on arrival;
2. the request head must arrive whole within ``HEAD_TIMEOUT_S`` and fit in
   ``MAX_HEAD_BYTES``, else the connection is closed (a half-sent request holds a
   coroutine for seconds, never a thread for ever);
3. one answer per connection (``Connection: close``): ``GET /metrics`` gets the text,
   read on the broker's own loop, so it sees a consistent state; anything else 404.

What it shows: every topic, partition, consumer group and transactional id of the
broker, whatever the ACLs say, since it has no notion of a principal. Serve it only
where those names are no secret (loopback, or a monitoring network).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

MAX_CONNECTIONS = 1024  # each costs a coroutine, a socket and at most MAX_HEAD_BYTES
HEAD_TIMEOUT_S = 5.0
MAX_HEAD_BYTES = 8 * 1024
CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"


class MetricsEndpoint:
    """``exposition`` (the Prometheus text) served at ``http://host:port/metrics``."""

    def __init__(self, exposition: Callable[[], bytes], host: str, port: int) -> None:
        self._exposition = exposition
        self._host, self._port = host, port
        self._server: asyncio.Server | None = None
        self._open = 0

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, self._host, self._port, limit=MAX_HEAD_BYTES
        )

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= MAX_CONNECTIONS:
            writer.close()
            return
        self._open += 1
        try:
            async with asyncio.timeout(HEAD_TIMEOUT_S):
                head = await reader.readuntil(b"\r\n\r\n")
            writer.write(self._answer(head))
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # too slow, cut short or too long: closed below
        except ConnectionError:
            pass
        finally:
            self._open -= 1
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    def _answer(self, head: bytes) -> bytes:
        method, _, rest = head.partition(b" ")
        path = rest.split(b" ", 1)[0].split(b"?", 1)[0]
        if method in (b"GET", b"HEAD") and path == b"/metrics":
            body = self._exposition()
            status, content_type = b"200 OK", CONTENT_TYPE
        else:
            body, status, content_type = b"not found\n", b"404 Not Found", b"text/plain"
        headers = (
            b"HTTP/1.1 "
            + status
            + b"\r\nContent-Type: "
            + content_type
            + b"\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\nConnection: close\r\n\r\n"
        )
        return headers if method == b"HEAD" else headers + body
