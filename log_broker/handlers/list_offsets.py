"""ListOffsets (key 2): an offset by timestamp spec, or the first offset at a timestamp.

The specs, by the version that brought them:

- ``-1`` latest, ``-2`` earliest (v1). Latest under read_committed (v2+) is the last
  stable offset: the first offset of the oldest open transaction, where a
  read_committed consumer must stop.
- ``-3`` max timestamp (v7, KIP-734): the first record carrying the largest timestamp
  in the log, with that timestamp; ``-1`` for an empty log.
- ``-4`` earliest local (v8), ``-5`` latest tiered (v9) and ``-6`` earliest pending
  upload (v11) belong to tiered storage (KIP-405, KIP-1005, KIP-1023). This broker
  keeps every segment locally, so it answers as Kafka does for a topic without remote
  storage: the log start offset for ``-4``, offset and leader epoch ``-1`` for the two
  others.

v6 is v5 made flexible; v10 adds a timeout for remote reads, which never happen here.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation
from ..storage import PartitionLog
from ._authz import topic_code

API_KEY = 2
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6
NOT_TIERED = (LATEST_TIERED, EARLIEST_PENDING_UPLOAD)
READ_COMMITTED = 1


def _partition(m: Any, index: int, error: ErrorCode, **found: int) -> Any:
    values = {"timestamp": -1, "offset": -1, **found}
    return make(
        m.ListOffsetsPartitionResponse,
        partition_index=index,
        error_code=error,
        old_style_offsets=(),
        **values,
    )


def _max_timestamp(log: PartitionLog) -> tuple[int, int]:
    """(offset, timestamp) of the first record with the log's largest timestamp."""
    largest = log.max_timestamp()
    found = log.offset_for_timestamp(largest) if largest >= 0 else None
    return found if found is not None else (-1, -1)


def _lookup(state: BrokerState, m: Any, topic: str, p: Any, read_committed: bool) -> Any:
    index = p.partition_index
    log = state.partition_log(topic, index)
    if log is None:
        return _partition(m, index, ErrorCode.unknown_topic_or_partition)
    timestamp, offset = -1, -1
    if p.timestamp == LATEST and read_committed:
        offset = state.txn.partitions.get(log).last_stable_offset()
    elif p.timestamp == LATEST:
        offset = log.log_end_offset
    elif p.timestamp in (EARLIEST, EARLIEST_LOCAL):
        offset = log.log_start_offset
    elif p.timestamp == MAX_TIMESTAMP:
        offset, timestamp = _max_timestamp(log)
    elif p.timestamp in NOT_TIERED:
        return _partition(m, index, ErrorCode.none, leader_epoch=-1)
    elif p.timestamp >= 0:
        found = log.offset_for_timestamp(p.timestamp)
        if found is not None:
            offset, timestamp = found
    else:
        return _partition(m, index, ErrorCode.invalid_request)
    return _partition(m, index, ErrorCode.none, timestamp=timestamp, offset=offset, leader_epoch=0)


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
                else _partition(m, p.partition_index, ErrorCode.topic_authorization_failed)
                for p in t.partitions
            ),
        )
        for t in request.body.topics
        for described in [topic_code(request, Operation.DESCRIBE, t.name) is None]
    )
    return make(m.ListOffsetsResponse, throttle_time=NO_THROTTLE, topics=topics)


ROUTE = Route(API_KEY, 1, 11, handle)
