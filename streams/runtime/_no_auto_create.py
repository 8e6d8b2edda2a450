"""aiokafka clients that never make the broker create a topic.

A Kafka broker with ``auto.create.topics.enable=true`` (Kafka's default, and the
built-in broker's) creates any topic a Metadata request names, unless the request says
``allow_auto_topic_creation=false`` (a field since Metadata v4). aiokafka leaves it
true, so a source topic deleted under a running application came back at the next
metadata refresh, empty and with the broker's default partition count, and the
application read on as if nothing had happened; a misspelt sink was created the same
way. The runtime creates the topics it owns (repartition topics, changelogs) explicitly
with CreateTopics, so it never needs the broker to guess.

How: aiokafka builds its Metadata requests inside ``AIOKafkaClient`` (the periodic and
forced refreshes, the admin client's describe calls) and sends every request through a
connection the client gets from ``_get_conn``. :func:`forbid_auto_create` wraps that
method on one client instance, and each connection it hands out gets a ``send`` that
rewrites a Metadata request which left the field unset into one with the field false.
Other aiokafka clients in the process are untouched. (The bootstrap request bypasses
``_get_conn``; it names no topics, so it cannot create any.)

A broker older than Metadata v4 has no such field and may still create topics; Kafka
0.11 (2017) and every later version have it.
"""

from __future__ import annotations

import logging
from typing import Any

from aiokafka.protocol.metadata import MetadataRequest

log = logging.getLogger("headrace.streams.runtime.client")

_MARK = "_headrace_no_auto_create"
_NOT_FOUND = "Topic %s not found in cluster metadata"
_COMMIT_FAILED = "OffsetCommit failed for group %s on partition %s with offset %s: %s"


class _ReportedByTheRuntime(logging.Filter):
    """Drops aiokafka's lines about a topic that does not exist (one per metadata refresh,
    one per partition and commit retry) for the topics whose disappearance the runtime
    reports itself, in one line, as it stops."""

    def __init__(self) -> None:
        super().__init__()
        self.topics: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.msg == _NOT_FOUND and len(args) == 1:
            return args[0] not in self.topics
        if record.msg == _COMMIT_FAILED and len(args) == 4:
            return not (
                args[3] == "UnknownTopicOrPartitionError"
                and getattr(args[1], "topic", None) in self.topics
            )
        return True


_reported = _ReportedByTheRuntime()
logging.getLogger("aiokafka.cluster").addFilter(_reported)
logging.getLogger("aiokafka.consumer.group_coordinator").addFilter(_reported)


def reported_by_the_runtime(topics: set[str] | frozenset[str]) -> None:
    """Keep aiokafka quiet about ``topics`` going missing: the runtime says it."""
    _reported.topics.update(topics)


def _without_auto_create(request: Any) -> Any:
    if (
        type(request) is MetadataRequest
        and getattr(request, "_allow_auto_topic_creation", False) is None
    ):
        return MetadataRequest(request._topics, allow_auto_topic_creation=False)
    return request


def _guard_connection(conn: Any) -> None:
    if getattr(conn, _MARK, False):
        return
    send = conn.send

    def send_without_auto_create(request: Any, expect_response: bool = True) -> Any:
        return send(_without_auto_create(request), expect_response)

    conn.send = send_without_auto_create
    setattr(conn, _MARK, True)


def forbid_auto_create(kafka: Any) -> bool:
    """Make every Metadata request of ``kafka`` (an aiokafka consumer, producer or admin
    client) forbid topic auto-creation; ``False`` (and a warning) if aiokafka changed so
    that it cannot be done."""
    client: Any = getattr(kafka, "_client", None) or getattr(kafka, "client", None)
    get_conn = getattr(client, "_get_conn", None)
    probe = MetadataRequest(["t"])
    if (
        get_conn is None
        or getattr(probe, "_allow_auto_topic_creation", False) is not None
        or not hasattr(probe, "_topics")
    ):
        log.warning("aiokafka changed: this client's metadata requests may create topics")
        return False
    if getattr(client, _MARK, False):
        return True

    async def get_conn_without_auto_create(*args: Any, **kwargs: Any) -> Any:
        conn = await get_conn(*args, **kwargs)
        if conn is not None:
            _guard_connection(conn)
        return conn

    client._get_conn = get_conn_without_auto_create
    setattr(client, _MARK, True)
    return True
