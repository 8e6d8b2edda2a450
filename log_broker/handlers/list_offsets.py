"""ListOffsets (key 2): earliest (-2), latest (-1), or the first offset at a timestamp."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module

API_KEY = 2
LATEST = -1
EARLIEST = -2


def _lookup(state: BrokerState, m: Any, topic: str, p: Any) -> Any:
    log = state.partition_log(topic, p.partition_index)
    if log is None:
        return make(m.ListOffsetsPartitionResponse, partition_index=p.partition_index,
                    error_code=ErrorCode.unknown_topic_or_partition, timestamp=-1, offset=-1,
                    old_style_offsets=())
    timestamp, offset = -1, -1
    if p.timestamp == LATEST:
        offset = log.log_end_offset
    elif p.timestamp == EARLIEST:
        offset = log.log_start_offset
    elif p.timestamp >= 0:
        found = log.offset_for_timestamp(p.timestamp)
        if found is not None:
            offset, timestamp = found
    else:
        return make(m.ListOffsetsPartitionResponse, partition_index=p.partition_index,
                    error_code=ErrorCode.invalid_request, timestamp=-1, offset=-1)
    return make(m.ListOffsetsPartitionResponse, partition_index=p.partition_index,
                error_code=ErrorCode.none, timestamp=timestamp, offset=offset, leader_epoch=0)


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    topics = tuple(
        make(m.ListOffsetsTopicResponse, name=t.name,
             partitions=tuple(_lookup(state, m, t.name, p) for p in t.partitions))
        for t in request.body.topics
    )
    return make(m.ListOffsetsResponse, throttle_time=NO_THROTTLE, topics=topics)


ROUTE = Route(API_KEY, 1, 5, handle)
