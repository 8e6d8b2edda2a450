"""OffsetCommit (key 8): store a group's positions; answered once they are durable.

Per partition, as Kafka's request handler does before asking the coordinator: an
unknown topic or partition gets UNKNOWN_TOPIC_OR_PARTITION, metadata beyond
``offset.metadata.max.bytes`` gets OFFSET_METADATA_TOO_LARGE. The rest is committed
together; a group-level refusal (unknown member, old generation, rebalance) is the
error of each of them. Explicit retention times (v2-v4) are ignored: retention
follows ``offsets.retention.minutes`` as in Kafka 2.1+.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import GroupError, NewOffset, TopicPartition
from ..security import Operation
from ._authz import require_group, topic_code

API_KEY = 8


def _check(state: BrokerState, topic: str, p: Any) -> ErrorCode:
    log = state.partition_log(topic, p.partition_index)
    if log is None:
        return ErrorCode.unknown_topic_or_partition
    metadata = p.committed_metadata or ""
    limit = state.groups.coordinator.config.offset_metadata_max_bytes
    if len(metadata.encode("utf-8")) > limit:
        return ErrorCode.offset_metadata_too_large
    return ErrorCode.none


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    codes: dict[TopicPartition, ErrorCode] = {}
    offsets: dict[TopicPartition, NewOffset] = {}
    for topic in body.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            codes[tp] = topic_code(request, Operation.READ, topic.name) or _check(
                state, topic.name, p
            )
            if codes[tp] is ErrorCode.none:
                offsets[tp] = NewOffset(
                    p.committed_offset,
                    getattr(p, "committed_leader_epoch", -1),
                    p.committed_metadata or "",
                )
    if offsets:
        try:
            require_group(request, Operation.READ, body.group_id)
            await state.groups.commit(
                body.group_id,
                body.generation_id_or_member_epoch,
                body.member_id,
                getattr(body, "group_instance_id", None),
                offsets,
            )
        except GroupError as exc:
            for tp in offsets:
                codes[tp] = ErrorCode(exc.error_code)
    topics = tuple(
        make(
            m.OffsetCommitResponseTopic,
            name=topic.name,
            partitions=tuple(
                make(
                    m.OffsetCommitResponsePartition,
                    partition_index=p.partition_index,
                    error_code=codes[TopicPartition(topic.name, p.partition_index)],
                )
                for p in topic.partitions
            ),
        )
        for topic in body.topics
    )
    return make(m.OffsetCommitResponse, throttle_time=NO_THROTTLE, topics=topics)


# v8 is v7 in the flexible encoding; v9 carries a consumer-protocol member's epoch
# in place of the generation (KIP-848), fenced by the coordinator.
ROUTE = Route(API_KEY, 2, 9, handle)
