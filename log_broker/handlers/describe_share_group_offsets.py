"""DescribeShareGroupOffsets (key 90): each share partition's start offset and lag.

The lag counts the records of the partition not finished with yet: from the
share-partition start offset to the log end, less those already acknowledged or
archived beyond the start (in flight or never delivered, they are all still to do).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType
from ._share import share_service

API_KEY = 90


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    service = share_service(state)
    groups = []
    for asked in request.body.groups:
        group_id = asked.group_id
        if not request.session.allows(Operation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(
                make(
                    m.DescribeShareGroupOffsetsResponseGroup,
                    group_id=group_id,
                    topics=(),
                    error_code=ErrorCode.group_authorization_failed,
                    error_message=None,
                )
            )
            continue
        wanted = (
            None
            if asked.topics is None
            else {(t.topic_name, p) for t in asked.topics for p in t.partitions}
        )
        by_topic: dict[str, tuple[Any, list[Any]]] = {}
        for summary in service.coordinator.summaries(group_id):
            name = service.topic_name(summary.topic_id)
            log_ = None if name is None else state.partition_log(name, summary.partition)
            if name is None or log_ is None:
                continue
            if wanted is not None and (name, summary.partition) not in wanted:
                continue
            lag = max(log_.log_end_offset - summary.start_offset - summary.finished, 0)
            by_topic.setdefault(name, (summary.topic_id, []))[1].append(
                make(
                    m.DescribeShareGroupOffsetsResponsePartition,
                    partition_index=summary.partition,
                    start_offset=summary.start_offset,
                    leader_epoch=0,
                    lag=lag,
                    error_code=ErrorCode.none,
                    error_message=None,
                )
            )
        groups.append(
            make(
                m.DescribeShareGroupOffsetsResponseGroup,
                group_id=group_id,
                topics=tuple(
                    make(
                        m.DescribeShareGroupOffsetsResponseTopic,
                        topic_name=name,
                        topic_id=topic_id,
                        partitions=tuple(partitions),
                    )
                    for name, (topic_id, partitions) in sorted(by_topic.items())
                ),
                error_code=ErrorCode.none,
                error_message=None,
            )
        )
    return make(
        m.DescribeShareGroupOffsetsResponse, throttle_time=NO_THROTTLE, groups=tuple(groups)
    )


ROUTE = Route(API_KEY, 0, 1, handle)
