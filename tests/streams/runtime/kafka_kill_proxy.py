"""A Kafka-protocol-aware TCP proxy that SIGKILLs an application process at a chosen
step of its exactly-once commit, with no hook inside the application.

One listening port per broker node. The application is given the proxies' addresses
as its bootstrap servers, and every address a broker hands out (nodes in Metadata,
the coordinator in FindCoordinator) is rewritten to the proxy of that node, so all of
the application's connections keep going through the proxies, whatever the broker
advertises. Other clients (the test's producer and reader) talk to the brokers
directly.

A request frame starts with its size, api_key, api_version and correlation id; that is
all the proxy reads of requests. When the armed step's request comes by, the proxy
SIGKILLs the process first and drops the frame, so the broker never sees it:

- ``offsets``: the first TxnOffsetCommit (api key 28), so a transaction holds output
  records but not the offsets that consumed their input;
- ``end_txn``: the first EndTxn (26) after a TxnOffsetCommit, so the offsets are in
  the transaction but it is neither committed nor aborted;
- ``after_end_txn``: that EndTxn goes out, and the process dies when the broker's
  answer comes back, before it reads it: the transaction is committed but the
  application never learns so;
- ``offset_commit``: the first OffsetCommit (8), the commit of an at-least-once
  application, whose output is then written and its input not marked consumed.

``slow_fetch`` holds back each Fetch answer (api key 1) that long: restoring a store
from its changelog then takes long enough for a kill to land inside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import os
import signal
import struct
import threading
from collections import Counter
from typing import Any

from brokerproc import free_port
from kio.index import load_response_schema
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer

FETCH, METADATA, FIND_COORDINATOR, API_VERSIONS = 1, 3, 10, 18
OFFSET_COMMIT, END_TXN, TXN_OFFSET_COMMIT = 8, 26, 28
PHASES = ("offsets", "end_txn", "after_end_txn", "offset_commit")


class KillProxy:
    """Proxies for the broker nodes at ``upstreams`` (``host:port`` each), running on a
    thread of their own."""

    def __init__(self, upstreams: list[str]) -> None:
        self.upstreams = [(h, int(p)) for h, p in (u.rsplit(":", 1) for u in upstreams)]
        self.ports = [free_port() for _ in self.upstreams]
        self._by_upstream_port = {
            up[1]: mine for up, mine in zip(self.upstreams, self.ports, strict=True)
        }
        self.requests: Counter[int] = Counter()
        self.killed = threading.Event()
        self.killed_at = ""
        self.slow_fetch = 0.0
        self._armed: tuple[str, int] | None = None
        self._offsets_pending = False
        self._armed_pid = 0
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._servers: list[asyncio.Server] = []
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.ports)

    def start(self) -> KillProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def arm(self, phase: str, pid: int) -> None:
        """SIGKILL ``pid`` at the next ``phase`` of a commit (see the module docstring)."""
        assert phase in PHASES, phase
        with self._lock:
            self.killed.clear()
            self.killed_at = ""
            self._offsets_pending = False
            self._armed = (phase, pid)

    def disarm(self) -> None:
        with self._lock:
            self._armed = None

    async def _listen(self) -> None:
        for upstream, port in zip(self.upstreams, self.ports, strict=True):

            async def serve(
                r: asyncio.StreamReader, w: asyncio.StreamWriter, up: Any = upstream
            ) -> None:
                await self._connection(r, w, up)

            self._servers.append(await asyncio.start_server(serve, "127.0.0.1", port))

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        for writer in list(self._writers):
            writer.close()

    async def _connection(
        self,
        client_r: asyncio.StreamReader,
        client_w: asyncio.StreamWriter,
        upstream: tuple[str, int],
    ) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection(*upstream)
        except OSError:
            client_w.close()
            return
        self._writers |= {client_w, broker_w}
        inflight: dict[int, tuple[int, int]] = {}  # correlation id: (api key, version)
        answer_kills: dict[int, int] = {}  # correlation id: the pid to kill at its answer
        upward = asyncio.ensure_future(self._requests(client_r, broker_w, inflight, answer_kills))
        downward = asyncio.ensure_future(
            self._responses(broker_r, client_w, inflight, answer_kills)
        )
        await asyncio.wait({upward, downward}, return_when=asyncio.FIRST_COMPLETED)
        for task in (upward, downward):
            task.cancel()
        for writer in (client_w, broker_w):
            writer.close()
            self._writers.discard(writer)

    async def _requests(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        inflight: dict[int, tuple[int, int]],
        answer_kills: dict[int, int],
    ) -> None:
        while frame := await _read_frame(reader):
            api_key, version, correlation = struct.unpack(">hhi", frame[4:12])
            inflight[correlation] = (api_key, version)
            self.requests[api_key] += 1
            kill = self._kill_step(api_key)
            if kill == "before":
                return  # the broker never sees this request
            if kill == "after":
                answer_kills[correlation] = self._armed_pid
            writer.write(frame)
            await writer.drain()

    def _kill_step(self, api_key: int) -> str | None:
        """``before`` or ``after`` forwarding if this request is the armed step (the
        process is then already dead), else None."""
        with self._lock:
            if self._armed is None:
                return None
            phase, pid = self._armed
            if api_key == OFFSET_COMMIT:
                step = "before" if phase == "offset_commit" else None
            elif api_key == TXN_OFFSET_COMMIT:
                self._offsets_pending = True
                step = "before" if phase == "offsets" else None
            elif api_key == END_TXN and self._offsets_pending:
                self._offsets_pending = False
                step = {"end_txn": "before", "after_end_txn": "after"}.get(phase)
            else:
                step = None
            if step is None:
                return None
            self._armed = None
            if step == "after":
                self._armed_pid = pid  # killed when the answer comes back
                return step
            self._kill(pid, phase)
            return step

    def _kill(self, pid: int, phase: str) -> None:
        _kill(pid)
        self.killed_at = phase
        self.killed.set()

    async def _responses(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        inflight: dict[int, tuple[int, int]],
        answer_kills: dict[int, int],
    ) -> None:
        while frame := await _read_frame(reader):
            (correlation,) = struct.unpack(">i", frame[4:8])
            api_key, version = inflight.pop(correlation, (-1, -1))
            if (pid := answer_kills.pop(correlation, None)) is not None:
                self._kill(pid, "after_end_txn")
                return  # the application never reads the answer
            if api_key in (METADATA, FIND_COORDINATOR):
                frame = self._rewrite(api_key, version, frame)
            elif api_key == FETCH and self.slow_fetch:
                await asyncio.sleep(self.slow_fetch)
            writer.write(frame)
            await writer.drain()

    def _rewrite(self, api_key: int, version: int, frame: bytes) -> bytes:
        """The answer with every node's address replaced by its proxy's."""
        schema = load_response_schema(api_key, version)
        header_cls: Any = (
            ResponseHeaderV1
            if schema.__flexible__ and api_key != API_VERSIONS
            else ResponseHeaderV0
        )
        data = frame[4:]
        _header, used = entity_reader(header_cls)(data, 0)
        body: Any = entity_reader(schema)(data, used)[0]
        if api_key == METADATA:
            body = dataclasses.replace(body, brokers=tuple(self._moved(b) for b in body.brokers))
        elif hasattr(body, "coordinators"):
            body = dataclasses.replace(
                body, coordinators=tuple(self._moved(c) for c in body.coordinators)
            )
        else:
            body = self._moved(body)
        out = io.BytesIO()
        out.write(data[:used])
        entity_writer(schema)(out, body)
        payload = out.getvalue()
        return struct.pack(">i", len(payload)) + payload

    def _moved(self, node: Any) -> Any:
        port = self._by_upstream_port.get(int(node.port))
        if port is None:
            return node
        return dataclasses.replace(node, host="127.0.0.1", port=type(node.port)(port))


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    """One size-prefixed frame, size included; empty at the end of the stream."""
    try:
        head = await reader.readexactly(4)
        (size,) = struct.unpack(">i", head)
        return head + await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return b""
