"""Bounds on what clients can make the broker spend: connections, idle sockets, slow
requests, and the log lines a flood of failures would write.

Each is a setting, in server.properties (``headrace broker --config``) and as a flag,
named as Kafka's broker settings where Kafka has one (``fetch.max.bytes`` 55 MiB,
``socket.request.max.bytes`` 100 MiB, ``max.connections``, ``max.connections.per.ip``,
``connections.max.idle.ms`` 10 minutes, ``offset.metadata.max.bytes`` 4096,
``message.max.bytes`` and the other topic defaults); the rest are headrace's own:

- ``socket.request.read.timeout.ms``: once a request's size prefix has arrived, the
  rest of the request must arrive within this time, or the connection is closed (a
  client sending a frame a byte a minute never counts as idle);
- ``max.broker.partitions``: partitions the broker holds in total (each keeps three
  files open), checked when topics are created or grown; it also bounds the topics
  and partitions one request may name (``broad_request_cap``), since no honest
  request names more than can exist (a 100 MiB Fetch could otherwise list millions,
  each costing the loop some work);
- ``max.partitions.per.request``: that bound set directly;
- ``max.in.flight.requests.per.connection`` (64): requests read from one connection
  ahead of their answers before the broker stops reading from it.

Where Kafka's default is "unlimited", the default here is derived from the process's
open-file limit (raised to its hard limit at start), so the broker refuses a client
before the operating system refuses the broker.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ._entities import entity_lists

__all__ = [
    "ConnectionLimiter",
    "FileBudget",
    "RateLimitedLog",
    "broad_request_cap",
    "entries_in",
    "file_budget",
]

log = logging.getLogger("headrace.broker")

_FILES_PER_PARTITION = 4  # a segment's log, offset index and time index, and a spare
_RESERVED_FILES = 64  # listeners, data-directory files, logging, the interpreter's own


@dataclass(frozen=True, slots=True)
class FileBudget:
    """How the open-file limit is shared between connections and partitions."""

    open_files: int
    max_connections: int
    max_broker_partitions: int


def file_budget() -> FileBudget:
    """Raise the soft open-file limit to the hard one, then give a quarter of it to
    connections and the rest, after a reserve, to partitions."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    files = soft if soft != resource.RLIM_INFINITY else 1 << 20
    connections = max(files // 4, 16)
    partitions = max((files - connections - _RESERVED_FILES) // _FILES_PER_PARTITION, 16)
    return FileBudget(files, connections, partitions)


class ConnectionLimiter:
    """Admits a connection only under ``max.connections`` in total and
    ``max.connections.per.ip`` from its address."""

    def __init__(self, max_connections: int, max_per_ip: int) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self._open: Counter[str] = Counter()
        self._total = 0
        self.refused = 0

    def admit(self, host: str) -> str | None:
        """Count the connection in and return None, or say why it is refused."""
        if self._total >= self.max_connections:
            reason = f"{self._total} connections open (max.connections {self.max_connections})"
        elif self._open[host] >= self.max_per_ip:
            reason = (
                f"{self._open[host]} connections open from {host} "
                f"(max.connections.per.ip {self.max_per_ip})"
            )
        else:
            self._open[host] += 1
            self._total += 1
            return None
        self.refused += 1
        return reason

    def release(self, host: str) -> None:
        self._total -= 1
        self._open[host] -= 1
        if not self._open[host]:
            del self._open[host]


class RateLimitedLog:
    """At most one line per kind of event per ``interval_s``; the next line says how
    many were left out. A flood of identical failures (thousands of refused connections
    or accept errors a second) then costs a line every few seconds, not a full disk."""

    def __init__(self, logger: logging.Logger, interval_s: float = 10.0) -> None:
        self._logger = logger
        self._interval_s = interval_s
        self._last: dict[str, float] = {}
        self._suppressed: Counter[str] = Counter()

    def log(
        self, level: int, kind: str, message: str, *args: Any, exc_info: BaseException | None = None
    ) -> None:
        now = time.monotonic()
        last = self._last.get(kind)
        if last is not None and now - last < self._interval_s:
            self._suppressed[kind] += 1
            return
        self._last[kind] = now
        left_out = self._suppressed.pop(kind, 0)
        if left_out:
            message += f" ({left_out} more like this in the last {self._interval_s:.0f} s)"
        self._logger.log(level, message, *args, exc_info=exc_info)

    def loop_exception_handler(
        self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]
    ) -> None:
        """For ``loop.set_exception_handler``: asyncio reports an accept that failed for
        want of file descriptors up to a hundred times per wake-up, each with a traceback."""
        message = str(context.get("message", "unhandled error in the event loop"))
        exception = context.get("exception")
        if isinstance(exception, OSError):
            # Out of descriptors or buffers: the cause is the line; a traceback adds nothing.
            self.log(logging.ERROR, message, "%s: %s", message, exception)
            return
        self.log(
            logging.ERROR,
            message,
            "%s",
            message,
            exc_info=exception if isinstance(exception, BaseException) else None,
        )


def broad_request_cap(max_broker_partitions: int | None) -> int:
    """Topics plus partitions one request may name: each count is at most the
    partitions that can exist, so twice ``max.broker.partitions`` (at least 1,000)."""
    if max_broker_partitions is None:
        return 2**31 - 1
    return max(2 * max_broker_partitions, 1000)


def entries_in(body: Any) -> int:
    """Topics and partitions a request names: the lengths of the tuples in its fields
    and one level down (topics, then each topic's partitions), counted without
    touching each partition."""
    count = 0
    for value in entity_lists(body):
        count += len(value)
        for item in value:
            count += sum(len(inner) for inner in entity_lists(item))
    return count
