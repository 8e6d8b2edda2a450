"""One client connection: read frames, run handlers, write responses in request order.

Requests are read as fast as the client pipelines them (up to a bound) and each runs as
its own task, so a produce waiting for its fsync does not hold up the next produce on
the same connection; responses still go out strictly in request order, as the protocol
requires.

Fetch answers hold memory (``_fetch_memory``): a connection has at most one of them in
flight. A Fetch is not started, and nothing after it is read, until the previous
Fetch's answer has been written, as Kafka mutes a channel while its response is in
flight; a client that never reads its answers holds one answer, not 64. Big answers are
written in slices, each drained before the next, so the transport never copies a whole
answer into its buffer.

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
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from ._errors import (
    BrokerError,
    RequestTooBroadError,
    UnsupportedRequestError,
)
from ._fetch_memory import HeldResponse, Reservation
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
WRITE_SLICE = 1 << 20  # bytes of a big answer handed to the transport at once
FETCH_KEY = 1
_FETCH_PREFIX = FETCH_KEY.to_bytes(2, "big")

# An answer: one frame, or a frame's pieces in order (a fetch's records, not joined).
Frame = bytes | list[bytes]
# What a request's task yields: its frame (None: no answer), and what to do once the
# frame has been written (release the memory its answer held).
Answer = tuple[Frame | None, Callable[[], None] | None]


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
        # Set while no Fetch answer of this connection is in flight.
        self._fetch_answered = asyncio.Event()
        self._fetch_answered.set()
        # Memory reserved by answers not yet written; released if the connection ends.
        self._held: set[Reservation] = set()

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
            for reservation in self._held:
                reservation.release()
            self._held.clear()

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
                if frame[:2] == _FETCH_PREFIX and not self._session.expects_raw_token:
                    await self._fetch_answered.wait()
                    self._fetch_answered.clear()
                # No name holds the started request: its answer, once written, must
                # not stay alive here while the next request is awaited (``_respond``).
                if pending.full():
                    await pending.put(self._start(frame))
                else:
                    pending.put_nowait(self._start(frame))

    def _start(self, frame: bytes) -> asyncio.Future[Answer]:
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

        async def run() -> Answer:
            try:
                response = await route.handle(self._state, request)
            except BaseException:
                self._fetch_done(api_key)
                raise
            if isinstance(response, HeldResponse):
                held = response.reservation
                self._held.add(held)
                self._state.metrics.answered(
                    api_key, api_version, started, request.body, response.body
                )
                return response.frame, lambda: self._written(held, api_key)
            self._state.metrics.answered(api_key, api_version, started, request.body, response)
            after = (lambda: self._fetch_done(api_key)) if api_key == FETCH_KEY else None
            if response is None:
                return None, after
            return encode_response(api_key, api_version, correlation_id, response), after

        return asyncio.ensure_future(run())

    async def _respond(self) -> None:
        # Answers that are ready together go out together: one write and one send for
        # a run of pipelined requests, not one each. An answer is never held back to
        # wait for a later one.
        pending = self._pending
        ready: list[Frame] = []
        after: list[Callable[[], None]] = []
        while True:
            item = await pending.get()
            while True:
                if item is _CLOSE:
                    await self._write(ready, after)
                    return
                if not item.done() and ready and not await self._write(ready, after):
                    return
                try:
                    data, then = await item
                except Exception:
                    log.exception("handler failed for a request from %s; closing", self._peer)
                    await self._write(ready, after)
                    return
                if data is not None:
                    ready.append(data)
                if then is not None:
                    after.append(then)
                # Nothing here may keep a written answer alive while the next is
                # awaited: its memory is back in the budget once it is written.
                item = data = None
                if pending.empty():
                    break
                item = pending.get_nowait()
            if not await self._write(ready, after):
                return

    async def _write(self, ready: list[Frame], after: list[Callable[[], None]]) -> bool:
        """Write and empty ``ready``, then run and empty ``after``; False when the peer
        has gone.

        Small answers are joined into one write; a run of more than ``JOIN_AT_MOST``
        bytes (fetches) goes out one piece at a time, each drained before the next:
        joining would copy it once more for nothing.
        """
        if ready:
            small = len(ready) > 1 and sum(map(_size, ready)) <= JOIN_AT_MOST
            if small:
                pieces: list[bytes] = [b"".join(_joined(data) for data in ready)]
            else:
                pieces = [
                    p for data in ready for p in (data if isinstance(data, list) else (data,))
                ]
            ready.clear()
            try:
                for piece in pieces:
                    await self._send(piece)
            except ConnectionError as gone:
                # The transport keeps this very exception (its reader's); its traceback
                # would keep these frames, and the answer they are writing, alive.
                gone.__traceback__ = None
                return False
        for then in after:
            then()
        after.clear()
        return True

    async def _send(self, piece: bytes) -> None:
        # A transport copies what the socket does not take at once into its buffer; a
        # slice at a time keeps that copy small.
        writer = self._writer
        if len(piece) <= WRITE_SLICE:
            writer.write(piece)
            await writer.drain()
            return
        view = memoryview(piece)
        for start in range(0, len(view), WRITE_SLICE):
            writer.write(view[start : start + WRITE_SLICE])
            await writer.drain()

    def _written(self, held: Reservation, api_key: int) -> None:
        self._held.discard(held)
        held.release()
        self._fetch_done(api_key)

    def _fetch_done(self, api_key: int) -> None:
        if api_key == FETCH_KEY:
            self._fetch_answered.set()

    def _cancel_pending(self) -> None:
        while not self._pending.empty():
            item = self._pending.get_nowait()
            if item is not _CLOSE:
                item.cancel()


def _size(data: Frame) -> int:
    return len(data) if isinstance(data, bytes) else sum(map(len, data))


def _joined(data: Frame) -> bytes:
    return data if isinstance(data, bytes) else b"".join(data)


def _ready(data: bytes) -> asyncio.Future[Answer]:
    done: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
    done.set_result((data, None))
    return done
