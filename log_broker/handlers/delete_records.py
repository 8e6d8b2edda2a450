"""DeleteRecords (key 21): move a partition's log start offset forward.

Offset -1 means "up to the high watermark", as in Kafka's tool.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import INTERNAL_TOPICS, BrokerState
from .._wire import Request, response_module
from ..security import Operation
from ._authz import topic_code

API_KEY = 21


def _delete(state: BrokerState, m: Any, topic: str, p: Any) -> Any:
    if topic in INTERNAL_TOPICS:
        return make(
            m.DeleteRecordsPartitionResult,
            partition_index=p.partition_index,
            low_watermark=-1,
            error_code=ErrorCode.invalid_topic_exception,
        )
    log = state.partition_log(topic, p.partition_index)
    if log is None:
        return make(
            m.DeleteRecordsPartitionResult,
            partition_index=p.partition_index,
            low_watermark=-1,
            error_code=ErrorCode.unknown_topic_or_partition,
        )
    target = log.log_end_offset if p.offset == -1 else p.offset
    if not log.log_start_offset <= target <= log.log_end_offset:
        if target < log.log_start_offset:
            target = log.log_start_offset
        else:
            return make(
                m.DeleteRecordsPartitionResult,
                partition_index=p.partition_index,
                low_watermark=log.log_start_offset,
                error_code=ErrorCode.offset_out_of_range,
            )
    low = log.delete_records_before(target)
    return make(
        m.DeleteRecordsPartitionResult,
        partition_index=p.partition_index,
        low_watermark=low,
        error_code=ErrorCode.none,
    )


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    topics = tuple(
        make(
            m.DeleteRecordsTopicResult,
            name=t.name,
            partitions=tuple(
                _delete(state, m, t.name, p)
                if refused is None
                else make(
                    m.DeleteRecordsPartitionResult,
                    partition_index=p.partition_index,
                    low_watermark=-1,
                    error_code=refused,
                )
                for p in t.partitions
            ),
        )
        for t in request.body.topics
        for refused in [topic_code(request, Operation.DELETE, t.name)]
    )
    return make(m.DeleteRecordsResponse, throttle_time=NO_THROTTLE, topics=topics)


ROUTE = Route(API_KEY, 0, 1, handle)
