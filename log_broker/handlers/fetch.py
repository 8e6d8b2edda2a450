"""Fetch (key 1): byte ranges of segment files, with long polling and size limits.

Order of work for one request:
1. Read every requested partition from its fetch offset, bounded by the high watermark,
   ``partition_max_bytes`` and what is left of ``max_bytes``. As in KIP-74, the first
   partition that has data always gets at least one whole batch, even a batch larger
   than the limits, so a consumer can never be stuck behind a big batch; later
   partitions get only what fits.
2. If fewer than ``min_bytes`` came back and there was no error, wait for an append to
   any requested partition (or ``max_wait``), then read again.
Under read_committed (isolation level 1) reading stops at the last stable offset (the
first offset of the oldest open transaction), and each partition lists the aborted
transactions overlapping the returned batches, which the client drops.
Fetch sessions (KIP-227) are not offered: session id 0 tells clients to send full
requests every time.
"""

from __future__ import annotations

import time
from typing import Any

from kio.schema.errors import ErrorCode

from .. import _records, storage
from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation
from ._authz import topic_code

API_KEY = 1
READ_COMMITTED = 1


def _read_all(
    state: BrokerState, m: Any, body: Any, denied: set[str]
) -> tuple[list[Any], int, bool]:
    # fetch.max.bytes caps every response, whatever the client asks for.
    cap = state.config.fetch_max_bytes
    remaining = min(body.max_bytes, cap) if body.max_bytes > 0 else cap
    total = 0
    errors = False
    read_committed = getattr(body, "isolation_level", 0) == READ_COMMITTED
    topics = []
    for fetch_topic in body.topics:
        partitions = []
        for p in fetch_topic.partitions:
            if fetch_topic.topic in denied:
                errors = True
                partitions.append(_empty(m, p.partition, ErrorCode.topic_authorization_failed))
                continue
            log = state.partition_log(fetch_topic.topic, p.partition)
            if log is None:
                errors = True
                partitions.append(_empty(m, p.partition, ErrorCode.unknown_topic_or_partition))
                continue
            high_watermark = log.log_end_offset
            txn_state = state.txn.partitions.get(log) if read_committed else None
            stable = high_watermark if txn_state is None else txn_state.last_stable_offset()
            limit = min(p.partition_max_bytes, remaining)
            try:
                if limit <= 0 and total > 0:
                    records = b""
                else:
                    records = log.read(p.fetch_offset, max(limit, 1), upper_bound=stable)
                    if total > 0 and len(records) > limit:
                        records = b""  # only the first partition may exceed the limits
            except storage.OffsetOutOfRangeError:
                errors = True
                partitions.append(
                    _empty(
                        m,
                        p.partition,
                        ErrorCode.offset_out_of_range,
                        high_watermark,
                        log.log_start_offset,
                    )
                )
                continue
            total += len(records)
            remaining -= len(records)
            aborted = None
            if txn_state is not None:
                aborted = tuple(
                    make(
                        m.AbortedTransaction, producer_id=t.producer_id, first_offset=t.first_offset
                    )
                    for t in txn_state.aborted.overlapping(p.fetch_offset, _end_of(records))
                )
            partitions.append(
                make(
                    m.PartitionData,
                    partition_index=p.partition,
                    error_code=ErrorCode.none,
                    high_watermark=high_watermark,
                    last_stable_offset=stable,
                    log_start_offset=log.log_start_offset,
                    aborted_transactions=aborted,
                    preferred_read_replica=-1,
                    records=records,
                )
            )
        topics.append(
            make(m.FetchableTopicResponse, topic=fetch_topic.topic, partitions=tuple(partitions))
        )
    return topics, total, errors


def _end_of(records: bytes) -> int:
    """The offset after the last batch of fetched bytes (-1 for none)."""
    end = -1
    for header in _records.scan_batches(records, verify_crc=False):
        end = header.last_offset + 1
    return end


def _empty(
    m: Any, index: int, error: ErrorCode, high_watermark: int = -1, log_start_offset: int = -1
) -> Any:
    return make(
        m.PartitionData,
        partition_index=index,
        error_code=error,
        high_watermark=high_watermark,
        last_stable_offset=high_watermark,
        log_start_offset=log_start_offset,
        aborted_transactions=None,
        # Empty, not null: librdkafka cannot parse a null record set.
        preferred_read_replica=-1,
        records=b"",
    )


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    deadline = time.monotonic() + body.max_wait.total_seconds()
    wanted = [(t.topic, p.partition) for t in body.topics for p in t.partitions]
    denied = {t.topic for t in body.topics if topic_code(request, Operation.READ, t.topic)}
    while True:
        topics, total, errors = _read_all(state, m, body, denied)
        left = deadline - time.monotonic()
        if total >= body.min_bytes or errors or left <= 0 or not wanted:
            break
        await state.notifier.wait(wanted, left)
    return make(
        m.FetchResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        session_id=0,
        responses=tuple(topics),
    )


ROUTE = Route(API_KEY, 4, 11, handle)
