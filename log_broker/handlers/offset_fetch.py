"""OffsetFetch (key 9): a group's committed offsets; -1 where nothing is committed.

From v2 a null topic list asks for every offset the group has.
"""

from __future__ import annotations

from itertools import groupby
from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import TopicPartition
from ..security import Operation, ResourceType
from ._authz import topic_code

API_KEY = 9


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    if not body.group_id:
        return make(
            m.OffsetFetchResponse,
            throttle_time=NO_THROTTLE,
            topics=(),
            error_code=ErrorCode.invalid_group_id,
        )
    if not request.session.allows(Operation.DESCRIBE, ResourceType.GROUP, body.group_id):
        return make(
            m.OffsetFetchResponse,
            throttle_time=NO_THROTTLE,
            topics=(),
            error_code=ErrorCode.group_authorization_failed,
        )
    if body.topics is None:
        wanted = None
    else:
        wanted = [TopicPartition(t.name, p) for t in body.topics for p in t.partition_indexes]
    found = state.groups.fetch(body.group_id, wanted)
    listed = sorted(found) if wanted is None else wanted
    if wanted is None:  # all the group's offsets: only topics the principal may describe
        listed = [tp for tp in listed if topic_code(request, Operation.DESCRIBE, tp.topic) is None]
    topics = []
    for name, tps in groupby(listed, key=lambda tp: tp.topic):
        partitions = []
        for tp in tps:
            refused = topic_code(request, Operation.DESCRIBE, tp.topic)
            value = None if refused else found.get(tp)
            partitions.append(
                make(
                    m.OffsetFetchResponsePartition,
                    partition_index=tp.partition,
                    committed_offset=-1 if value is None else value.offset,
                    committed_leader_epoch=-1 if value is None else value.leader_epoch,
                    metadata="" if value is None else value.metadata,
                    error_code=refused or ErrorCode.none,
                )
            )
        topics.append(make(m.OffsetFetchResponseTopic, name=name, partitions=tuple(partitions)))
    return make(
        m.OffsetFetchResponse,
        throttle_time=NO_THROTTLE,
        topics=tuple(topics),
        error_code=ErrorCode.none,
    )


ROUTE = Route(API_KEY, 1, 5, handle)
