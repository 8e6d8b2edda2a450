"""CreatePartitions (key 37): grow a topic's partition count; never shrinks it.

0. Authorization comes first, as in Kafka's controller: ALTER on the topic (Kafka's
   ``ControllerApis`` checks the topic only; ALTER on the cluster does not count). A
   refused topic gets TOPIC_AUTHORIZATION_FAILED and no message, whether it exists or
   not, so the answer tells nothing of other principals' topics. A topic named twice in
   one request is refused as Kafka does (INVALID_REQUEST, one answer), never grown twice.
1. Internal topics are refused: their partition count decides where a group's or a
   transaction's state lives, so changing it would lose that state.
2. Manual replica assignments are refused, as in CreateTopics (one broker).
3. The new count must exceed the current one; storage writes the topic's metadata
   first, then opens each new partition's log.

Records already written keep their partitions: keyed records produced from now on may
land elsewhere, as in Kafka.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from .. import storage
from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import INTERNAL_TOPICS, BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType
from ._codes import error_code_for

API_KEY = 37


async def _grow(
    state: BrokerState, topic: Any, validate_only: bool
) -> tuple[ErrorCode, str | None]:
    if topic.name in INTERNAL_TOPICS:
        return ErrorCode.invalid_topic_exception, f"{topic.name} is internal"
    if topic.assignments:
        return ErrorCode.invalid_replica_assignment, "manual replica assignment is not supported"
    existing = state.logs.topics().get(topic.name)
    if existing is None:
        return ErrorCode.unknown_topic_or_partition, f"topic {topic.name!r} does not exist"
    current = len(existing.partitions)
    if topic.count <= current:
        return (
            ErrorCode.invalid_partitions,
            f"topic {topic.name!r} has {current} partitions; {topic.count} would not add any",
        )
    if validate_only:
        return ErrorCode.none, None
    try:
        # Off the event loop: thousands of partitions take seconds to create.
        await asyncio.to_thread(state.logs.add_partitions, topic.name, topic.count)
    except storage.StorageError as exc:
        return error_code_for(exc), str(exc)
    return ErrorCode.none, None


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    named = Counter(topic.name for topic in body.topics)
    answered: set[str] = set()
    results = []
    for topic in body.topics:
        if topic.name in answered:
            continue  # a duplicate gets one answer, as in Kafka
        answered.add(topic.name)
        error: ErrorCode
        message: str | None
        if named[topic.name] > 1:
            error, message = ErrorCode.invalid_request, "Duplicate topic name."
        elif not request.session.allows(Operation.ALTER, ResourceType.TOPIC, topic.name):
            error, message = ErrorCode.topic_authorization_failed, None
        else:
            error, message = await _grow(state, topic, body.validate_only)
        results.append(
            make(
                m.CreatePartitionsTopicResult,
                name=topic.name,
                error_code=error,
                error_message=message,
            )
        )
    return make(m.CreatePartitionsResponse, throttle_time=NO_THROTTLE, results=tuple(results))


ROUTE = Route(API_KEY, 0, 3, handle)
