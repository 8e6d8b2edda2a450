"""ListOffsets (key 2): earliest (-2), latest (-1), or the first offset at a timestamp.

Latest under read_committed (v2+) is the last stable offset: the first offset of the
oldest open transaction, where a read_committed consumer must stop.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation
from ._authz import topic_code

API_KEY = 2
LATEST = -1
EARLIEST = -2
READ_COMMITTED = 1


def _lookup(state: BrokerState, m: Any, topic: str, p: Any, read_committed: bool) -> Any:
    log = state.partition_log(topic, p.partition_index)
    if log is None:
        return make(
            m.ListOffsetsPartitionResponse,
            partition_index=p.partition_index,
            error_code=ErrorCode.unknown_topic_or_partition,
            timestamp=-1,
            offset=-1,
            old_style_offsets=(),
        )
    timestamp, offset = -1, -1
    if p.timestamp == LATEST and read_committed:
        offset = state.txn.partitions.get(log).last_stable_offset()
    elif p.timestamp == LATEST:
        offset = log.log_end_offset
    elif p.timestamp == EARLIEST:
        offset = log.log_start_offset
    elif p.timestamp >= 0:
        found = log.offset_for_timestamp(p.timestamp)
        if found is not None:
            offset, timestamp = found
    else:
        return make(
            m.ListOffsetsPartitionResponse,
            partition_index=p.partition_index,
            error_code=ErrorCode.invalid_request,
            timestamp=-1,
            offset=-1,
        )
    return make(
        m.ListOffsetsPartitionResponse,
        partition_index=p.partition_index,
        error_code=ErrorCode.none,
        timestamp=timestamp,
        offset=offset,
        leader_epoch=0,
    )


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    read_committed = getattr(request.body, "isolation_level", 0) == READ_COMMITTED
    topics = tuple(
        make(
            m.ListOffsetsTopicResponse,
            name=t.name,
            partitions=tuple(
                _lookup(state, m, t.name, p, read_committed)
                if described
                else make(
                    m.ListOffsetsPartitionResponse,
                    partition_index=p.partition_index,
                    error_code=ErrorCode.topic_authorization_failed,
                    timestamp=-1,
                    offset=-1,
                    old_style_offsets=(),
                )
                for p in t.partitions
            ),
        )
        for t in request.body.topics
        for described in [topic_code(request, Operation.DESCRIBE, t.name) is None]
    )
    return make(m.ListOffsetsResponse, throttle_time=NO_THROTTLE, topics=topics)


ROUTE = Route(API_KEY, 1, 5, handle)
