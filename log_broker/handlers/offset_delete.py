"""OffsetDelete (key 47, KIP-496): remove a group's committed offsets of some topics,
as ``kafka-consumer-groups --delete-offsets`` asks.

The checks are Kafka's (``KafkaApis.handleDeleteOffsetsRequest``), in its order:

1. DELETE on the group, else GROUP_AUTHORIZATION_FAILED for the whole request;
2. per topic, READ on it, else TOPIC_AUTHORIZATION_FAILED for each of its partitions;
   a topic or partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION;
3. the rest goes to the group coordinator (``GroupCoordinator.delete_offsets``): an
   error for the group as a whole, or one per partition (GROUP_SUBSCRIBED_TO_TOPIC
   for a topic the group still reads).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import GroupError, TopicPartition
from ..security import Operation, ResourceType
from ._authz import topic_code

API_KEY = 47


def _checked(state: BrokerState, request: Request, topic: str, partition: int) -> ErrorCode:
    refused = topic_code(request, Operation.READ, topic)
    if refused is not None:
        return refused
    if state.partition_log(topic, partition) is None:
        return ErrorCode.unknown_topic_or_partition
    return ErrorCode.none


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    body = request.body
    if not request.session.allows(Operation.DELETE, ResourceType.GROUP, body.group_id):
        return make(
            m.OffsetDeleteResponse,
            error_code=ErrorCode.group_authorization_failed,
            throttle_time=NO_THROTTLE,
            topics=(),
        )
    errors: dict[TopicPartition, ErrorCode] = {}
    for topic in body.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            errors[tp] = _checked(state, request, topic.name, p.partition_index)
    valid = [tp for tp, code in errors.items() if code is ErrorCode.none]
    group_error = ErrorCode.none
    try:
        deleted = await state.groups.delete_offsets(body.group_id, valid)
    except GroupError as exc:
        group_error = ErrorCode(exc.error_code)
        errors = {tp: code for tp, code in errors.items() if code is not ErrorCode.none}
    else:
        for tp, error in deleted.items():
            errors[tp] = ErrorCode.none if error is None else ErrorCode(error.error_code)
    by_topic: dict[str, list[Any]] = {}
    for tp, code in errors.items():
        by_topic.setdefault(tp.topic, []).append(
            make(m.OffsetDeleteResponsePartition, partition_index=tp.partition, error_code=code)
        )
    return make(
        m.OffsetDeleteResponse,
        error_code=group_error,
        throttle_time=NO_THROTTLE,
        topics=tuple(
            make(m.OffsetDeleteResponseTopic, name=name, partitions=tuple(partitions))
            for name, partitions in by_topic.items()
        ),
    )


ROUTE = Route(API_KEY, 0, 0, handle)
