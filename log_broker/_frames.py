"""Request frames off a connection, many per wake-up.

A frame is ``size:int32`` then ``size`` bytes. A client that pipelines (librdkafka
sends one produce request per partition, up to a thousand in a row) has many frames
waiting in the socket at once; reading them two ``readexactly`` calls and two timers
per frame cost more than handling a small produce. Here the socket is read in chunks
and every complete frame in what has arrived is handed over together.

The bounds are the same as frame by frame:
- a size prefix that is negative or above ``max_bytes`` raises ``FrameTooLargeError``
  as soon as its four bytes are in, before anything of that size is read (the
  complete frames before it are handed over first, as they would have been one by one);
  until ``authenticated()`` says a SASL listener's client has authenticated, the cap
  is the smaller ``unauthenticated_max_bytes`` (Kafka's ``sasl.server.max.receive.size``),
  so a stranger cannot make the broker buffer ``max_bytes``;
- while no frame has begun (fewer than four bytes of the next one), waiting is bounded
  by ``idle_s`` (``connections.max.idle.ms``);
- once a frame's size is in, the rest of it must arrive within ``read_s`` of that
  (``socket.request.read.timeout.ms``), however many reads that takes.
The buffer holds at most one frame plus one chunk.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Callable

from ._errors import FrameTooLargeError

_SIZE = struct.Struct(">i")
CHUNK = 1 << 16


class FrameReader:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        max_bytes: int,
        idle_s: float,
        read_s: float,
        *,
        unauthenticated_max_bytes: int | None = None,
        authenticated: Callable[[], bool] = lambda: True,
    ) -> None:
        self._reader = reader
        self._max_bytes = max_bytes
        # Until the client has authenticated: (the smaller cap, the check that lifts it).
        self._before_authentication = (
            None
            if unauthenticated_max_bytes is None or authenticated()
            else (min(max_bytes, unauthenticated_max_bytes), authenticated)
        )
        self._idle_s = idle_s
        self._read_s = read_s
        self._buffer = bytearray()
        # When the frame whose size prefix is in must be complete (monotonic seconds).
        self._frame_deadline: float | None = None

    def _limit(self) -> tuple[int, str]:
        """The largest frame allowed now, and the setting that says so."""
        before = self._before_authentication
        if before is not None:
            if not before[1]():
                return before[0], "sasl.server.max.receive.size, before authentication"
            self._before_authentication = None
        return self._max_bytes, "socket.request.max.bytes"

    async def frames(self) -> list[bytes]:
        """The next complete frames (at least one), without their size prefixes.

        Raises ``asyncio.IncompleteReadError`` when the peer closes, ``TimeoutError``
        when a bound above runs out, ``FrameTooLargeError`` for a bad size prefix.
        """
        while True:
            complete = self._take()
            if complete:
                return complete
            await self._fill()

    def _take(self) -> list[bytes]:
        buffer, position = self._buffer, 0
        complete: list[bytes] = []
        while len(buffer) - position >= 4:
            (size,) = _SIZE.unpack_from(buffer, position)
            if size < 0 or size > self._max_bytes or self._before_authentication is not None:
                limit, setting = self._limit()
                if size < 0 or size > limit:
                    if complete:  # those before it are served first; the refusal comes next
                        break
                    raise FrameTooLargeError(f"request size {size} outside 0..{limit} ({setting})")
            end = position + 4 + size
            if end > len(buffer):
                if self._frame_deadline is None:
                    self._frame_deadline = time.monotonic() + self._read_s
                break
            complete.append(bytes(buffer[position + 4 : end]))
            position = end
            self._frame_deadline = None
        del buffer[:position]
        return complete

    async def _fill(self) -> None:
        if self._frame_deadline is None:
            wanted, timeout_s = CHUNK, self._idle_s
            expired = f"idle for {self._idle_s:.0f} s (connections.max.idle.ms)"
        else:
            (size,) = _SIZE.unpack_from(self._buffer, 0)
            wanted = max(CHUNK, 4 + size - len(self._buffer))
            timeout_s = max(self._frame_deadline - time.monotonic(), 0)
            expired = (
                f"request of {size} bytes not received within {self._read_s:.0f} s"
                " (socket.request.read.timeout.ms)"
            )
        try:
            async with asyncio.timeout(timeout_s):
                data = await self._reader.read(wanted)
        except TimeoutError:
            raise TimeoutError(expired) from None
        if not data:
            raise asyncio.IncompleteReadError(bytes(self._buffer), None)
        self._buffer += data
