"""DescribeTopicPartitions (key 75, KIP-966): topics and their partitions, paged, which
Kafka 4's admin client asks in place of Metadata to describe topics. This broker leads
and holds the one replica of every partition, so a partition's leader, replicas and
in-sync replicas are all this node, and no replica is ever offline or merely eligible.

As Kafka does (``DescribeTopicPartitionsRequestHandler``):

1. no topics named means every topic the principal may DESCRIBE, the others left out
   unsaid; a named topic it may not describe is TOPIC_AUTHORIZATION_FAILED (with no
   topic id), and one that does not exist UNKNOWN_TOPIC_OR_PARTITION;
2. topics come sorted by name, from the cursor's topic and partition if one is given
   (a cursor on a topic the request does not name is INVALID_REQUEST);
3. at most ``response_partition_limit`` partitions (clamped to 1..2000) are returned;
   where the limit cuts, ``next_cursor`` says where to go on;
4. each described topic carries the principal's authorized operations on it.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import INTERNAL_TOPICS, BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType
from ._authz import topic_code
from ._operations import OPERATIONS_OMITTED, authorized_operations

API_KEY = 75
MAX_PARTITIONS = 2000  # Kafka's max.request.partition.size.limit default
_NO_ID = uuid.UUID(int=0)


def _failed(m: Any, name: str, code: ErrorCode) -> Any:
    return make(
        m.DescribeTopicPartitionsResponseTopic,
        error_code=code,
        name=name,
        topic_id=_NO_ID,
        is_internal=False,
        partitions=(),
        topic_authorized_operations=OPERATIONS_OMITTED,
    )


def _partition(m: Any, node: int, index: int) -> Any:
    return make(
        m.DescribeTopicPartitionsResponsePartition,
        error_code=ErrorCode.none,
        partition_index=index,
        leader_id=node,
        leader_epoch=0,
        replica_nodes=(node,),
        isr_nodes=(node,),
        eligible_leader_replicas=(),
        last_known_elr=(),
        offline_replicas=(),
    )


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    body = request.body
    existing = state.logs.topics()
    cursor = body.cursor
    everything = not body.topics
    names = sorted(existing) if everything else sorted({t.name for t in body.topics})
    if cursor is not None and not everything and cursor.topic_name not in names:
        invalid = tuple(_failed(m, name, ErrorCode.invalid_request) for name in names)
        return make(m.DescribeTopicPartitionsResponse, throttle_time=NO_THROTTLE, topics=invalid)
    if cursor is not None:
        names = [name for name in names if name >= cursor.topic_name]
    refused = [name for name in names if topic_code(request, Operation.DESCRIBE, name) is not None]
    allowed = [name for name in names if name not in refused]
    budget = max(1, min(body.response_partition_limit, MAX_PARTITIONS))
    node = state.config.node_id
    topics: list[Any] = []
    next_cursor = None
    for name in allowed:
        if budget == 0:
            next_cursor = make(m.Cursor, topic_name=name, partition_index=0)
            break
        topic = existing.get(name)
        if topic is None:
            if not everything:
                topics.append(_failed(m, name, ErrorCode.unknown_topic_or_partition))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        indexes = range(first, len(topic.partitions))
        shown = indexes[:budget]
        budget -= len(shown)
        if len(shown) < len(indexes):
            next_cursor = make(m.Cursor, topic_name=name, partition_index=indexes[len(shown)])
        topics.append(
            make(
                m.DescribeTopicPartitionsResponseTopic,
                error_code=ErrorCode.none,
                name=name,
                topic_id=topic.topic_id,
                is_internal=name in INTERNAL_TOPICS,
                partitions=tuple(_partition(m, node, index) for index in shown),
                topic_authorized_operations=authorized_operations(
                    request, ResourceType.TOPIC, name
                ),
            )
        )
        if next_cursor is not None:
            break
    if not everything:
        topics.extend(_failed(m, name, ErrorCode.topic_authorization_failed) for name in refused)
    return make(
        m.DescribeTopicPartitionsResponse,
        throttle_time=NO_THROTTLE,
        topics=tuple(topics),
        next_cursor=next_cursor,
    )


ROUTE = Route(API_KEY, 0, 0, handle)
