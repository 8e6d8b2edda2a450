"""One client connection: read frames, run handlers, write responses in request order.

Requests are read as fast as the client pipelines them (up to a bound) and each runs as
its own task, so a produce waiting for its fsync does not hold up the next produce on
the same connection; responses still go out strictly in request order, as the protocol
requires.

Bad input never takes more than its own connection down:
- a size prefix that is negative or above ``socket.request.max.bytes`` closes the
  connection before anything of that size is allocated;
- bytes that do not decode as the request they claim close the connection;
- an API or version the broker does not serve closes the connection, as Kafka does,
  except ApiVersions, which is answered (in v0) with UNSUPPORTED_VERSION and the
  supported ranges so the client can pick a version;
- no request for ``connections.max.idle.ms``, or a request whose bytes stop coming for
  ``socket.request.read.timeout.ms`` after its size prefix, closes the connection.
Each of these is logged on one line with the peer's address.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from kio.schema.errors import ErrorCode

from ._errors import (
    BrokerError,
    RequestTooBroadError,
    UnsupportedRequestError,
)
from ._frames import FrameReader
from ._limits import entries_in
from ._router import Router
from ._state import BrokerState
from ._wire import API_VERSIONS_KEY, decode_request, encode_response, peek_header
from .handlers.api_versions import versions_response
from .security import SaslFailedError, Session

log = logging.getLogger("headrace.broker")

_CLOSE = object()
JOIN_AT_MOST = 1 << 16  # bytes of ready answers joined into one write


class Connection:
    def __init__(
        self,
        state: BrokerState,
        router: Router,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        session: Session,
    ) -> None:
        self._state = state
        self._router = router
        self._reader = reader
        self._writer = writer
        # Authentication and authorization: the one place security meets the server.
        self._session = session
        self._peer = writer.get_extra_info("peername")
        self._client_host = f"/{self._peer[0]}" if self._peer else ""
        self.peer_host = str(self._peer[0]) if self._peer else ""
        limit = state.config.max_in_flight_per_connection
        self._pending: asyncio.Queue[Any] = asyncio.Queue(maxsize=limit)

    def close(self) -> None:
        """Close the socket without serving (a connection refused at admission)."""
        self._writer.close()

    async def serve(self) -> None:
        """Serve until the client leaves or misbehaves, then close the socket.

        When reading stops, responses already owed are still written; when writing stops
        (peer gone, handler bug), reading stops too.
        """
        metrics = self._state.metrics
        metrics.connections_opened.inc()
        metrics.open_connections += 1
        reading = asyncio.create_task(self._read_requests())
        responding = asyncio.create_task(self._respond())
        try:
            await asyncio.wait({reading, responding}, return_when=asyncio.FIRST_COMPLETED)
            if reading.done():
                await self._pending.put(_CLOSE)
                await responding
            else:
                reading.cancel()
                self._cancel_pending()
        finally:
            metrics.open_connections -= 1
            for task in (reading, responding):
                task.cancel()
            self._writer.close()

    async def _read_requests(self) -> None:
        try:
            await self._read_frames()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except TimeoutError as exc:
            log.info("closing connection from %s: %s", self._peer, exc)
        except BrokerError as exc:
            log.warning("closing connection from %s: %s", self._peer, exc)

    async def _read_frames(self) -> None:
        config = self._state.config
        frames = FrameReader(
            self._reader,
            config.socket_request_max_bytes,
            config.connections_max_idle_ms / 1000,
            config.socket_request_read_timeout_ms / 1000,
            unauthenticated_max_bytes=config.sasl_server_max_receive_size,
            authenticated=lambda: self._session.authenticated,
        )
        pending = self._pending
        while True:
            for frame in await frames.frames():
                started = self._start(frame)
                if pending.full():
                    await pending.put(started)
                else:
                    pending.put_nowait(started)

    def _start(self, frame: bytes) -> asyncio.Future[bytes | None]:
        if self._session.expects_raw_token:
            try:
                return _ready(self._session.raw_token(frame))
            except SaslFailedError:
                self._state.metrics.authentication_failed(self._session.listener.name)
                raise
        api_key, api_version, correlation_id = peek_header(frame)
        self._session.admit(api_key)
        route = self._router.get(api_key)
        if route is None:
            raise UnsupportedRequestError(f"unknown api key {api_key}")
        if not route.supports(api_version):
            if api_key != API_VERSIONS_KEY:
                raise UnsupportedRequestError(
                    f"api key {api_key} version {api_version} not in"
                    f" {route.min_version}..{route.max_version}"
                )
            body = versions_response(self._router, 0, ErrorCode.unsupported_version)
            return _ready(encode_response(api_key, 0, correlation_id, body))
        started = time.perf_counter()
        request = decode_request(frame, self._client_host, self._session)
        cap = self._state.config.max_partitions_per_request or 2**31 - 1
        if (named := entries_in(request.body)) > cap:
            raise RequestTooBroadError(
                f"api key {api_key} names {named} topics and partitions, more than"
                f" {cap} (max.partitions.per.request)"
            )

        async def run() -> bytes | None:
            response = await route.handle(self._state, request)
            self._state.metrics.answered(api_key, api_version, started, request.body, response)
            if response is None:
                return None
            return encode_response(api_key, api_version, correlation_id, response)

        return asyncio.ensure_future(run())

    async def _respond(self) -> None:
        # Answers that are ready together go out together: one write and one send for
        # a run of pipelined requests, not one each. An answer is never held back to
        # wait for a later one.
        pending = self._pending
        ready: list[bytes] = []
        while True:
            item = await pending.get()
            while True:
                if item is _CLOSE:
                    await self._write(ready)
                    return
                if not item.done() and ready and not await self._write(ready):
                    return
                try:
                    data = await item
                except Exception:
                    log.exception("handler failed for a request from %s; closing", self._peer)
                    await self._write(ready)
                    return
                if data is not None:
                    ready.append(data)
                if pending.empty():
                    break
                item = pending.get_nowait()
            if not await self._write(ready):
                return

    async def _write(self, ready: list[bytes]) -> bool:
        """Write and empty ``ready``; False when the peer has gone.

        Small answers are joined into one write; a run of more than ``JOIN_AT_MOST``
        bytes (fetches) goes out one answer at a time, each drained before the next,
        as when nothing was joined: joining would copy it once more for nothing.
        """
        if not ready:
            return True
        small = len(ready) > 1 and sum(len(data) for data in ready) <= JOIN_AT_MOST
        pieces = [b"".join(ready)] if small else ready[:]
        ready.clear()
        for piece in pieces:
            self._writer.write(piece)
            try:
                await self._writer.drain()
            except ConnectionError:
                return False
        return True

    def _cancel_pending(self) -> None:
        while not self._pending.empty():
            item = self._pending.get_nowait()
            if item is not _CLOSE:
                item.cancel()


def _ready(data: bytes) -> asyncio.Future[bytes | None]:
    done: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
    done.set_result(data)
    return done
