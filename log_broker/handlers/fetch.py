"""Fetch (key 1): byte ranges of segment files, with long polling and size limits.

Order of work for one request:
1. Locate every requested partition's answer from its fetch offset, bounded by the high
   watermark, ``partition_max_bytes`` and what is left of ``max_bytes``, reading
   nothing yet. As in KIP-74, the first partition that has data always gets at least
   one whole batch, even a batch larger than the limits, so a consumer can never be
   stuck behind a big batch; later partitions get only what fits.
2. If fewer than ``min_bytes`` were found and there was no error, wait for an append to
   any requested partition (or ``max_wait``), then locate again.
3. Reserve the answer's bytes from the broker's fetch memory budget
   (``fetch.response.max.memory.bytes``, see ``_fetch_memory``), waiting for it no
   longer than what is left of ``max_wait``; then answer with what fits in what could
   be reserved, or with no records, as when there is no data.
4. Read the located bytes. The server writes the answer without copying them again and
   releases the reservation once it is written.
Under read_committed (isolation level 1) reading stops at the last stable offset (the
first offset of the oldest open transaction), and each partition lists the aborted
transactions overlapping the returned batches, which the client drops.
Fetch sessions (KIP-227) are not offered: session id 0 tells clients to send full
requests every time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from kio.schema.errors import ErrorCode

from .. import storage
from .._entities import NO_THROTTLE, make
from .._fetch_frame import fetch_frame_pieces
from .._fetch_memory import FetchMemory, HeldResponse
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..records import _batches as _records
from ..security import Operation
from ._authz import topic_code

API_KEY = 1
READ_COMMITTED = 1


@dataclass(slots=True)
class _Planned:
    """One partition of the answer, located but not yet read."""

    index: int
    log: Any
    fetch_offset: int
    high_watermark: int
    stable: int
    located: storage.LocatedBytes | None
    txn_state: Any


def _plan(
    state: BrokerState,
    body: Any,
    denied: set[str],
    cap: int | None = None,
    strict: bool = False,
) -> tuple[list[tuple[str, list[Any]]], int, bool]:
    """Where each partition's answer lies and how many bytes all of it takes, nothing
    read yet. Partitions that fail are their error entries already. ``cap`` lowers the
    total; ``strict`` refuses even the first partition's oversized batch (the answer
    must fit what memory was reserved for it)."""
    # fetch.max.bytes caps every response, whatever the client asks for.
    limit_all = state.config.fetch_max_bytes
    remaining = min(body.max_bytes, limit_all) if body.max_bytes > 0 else limit_all
    if cap is not None:
        remaining = min(remaining, cap)
    total = 0
    errors = False
    read_committed = getattr(body, "isolation_level", 0) == READ_COMMITTED
    topics: list[tuple[str, list[Any]]] = []
    for fetch_topic in body.topics:
        partitions: list[Any] = []
        for p in fetch_topic.partitions:
            if fetch_topic.topic in denied:
                errors = True
                partitions.append((p.partition, ErrorCode.topic_authorization_failed, -1, -1))
                continue
            log = state.partition_log(fetch_topic.topic, p.partition)
            if log is None:
                errors = True
                partitions.append((p.partition, ErrorCode.unknown_topic_or_partition, -1, -1))
                continue
            high_watermark = log.log_end_offset
            txn_state = state.txn.partitions.get(log) if read_committed else None
            stable = high_watermark if txn_state is None else txn_state.last_stable_offset()
            limit = min(p.partition_max_bytes, remaining)
            located = None
            try:
                if limit > 0 or (total == 0 and not strict):
                    located = log.locate(p.fetch_offset, max(limit, 1), upper_bound=stable)
                    # only the first partition may exceed the limits
                    if located is not None and (total > 0 or strict) and located.size > limit:
                        located = None
            except storage.OffsetOutOfRangeError:
                errors = True
                partitions.append(
                    (
                        p.partition,
                        ErrorCode.offset_out_of_range,
                        high_watermark,
                        log.log_start_offset,
                    )
                )
                continue
            size = 0 if located is None else located.size
            total += size
            remaining -= size
            partitions.append(
                _Planned(
                    p.partition, log, p.fetch_offset, high_watermark, stable, located, txn_state
                )
            )
        topics.append((fetch_topic.topic, partitions))
    return topics, total, errors


def _answer(m: Any, planned: list[tuple[str, list[Any]]]) -> tuple[tuple[Any, ...], int]:
    """The response's topics with the located bytes read, and how many bytes that is."""
    total = 0
    topics = []
    for topic, partitions in planned:
        entries = []
        for part in partitions:
            if not isinstance(part, _Planned):
                entries.append(_empty(m, *part))
                continue
            log = part.log
            records = b"" if part.located is None else log.read_located(part.located)
            total += len(records)
            aborted = None
            if part.txn_state is not None:
                aborted = tuple(
                    make(
                        m.AbortedTransaction, producer_id=t.producer_id, first_offset=t.first_offset
                    )
                    for t in part.txn_state.aborted.overlapping(part.fetch_offset, _end_of(records))
                )
            entries.append(
                make(
                    m.PartitionData,
                    partition_index=part.index,
                    error_code=ErrorCode.none,
                    high_watermark=part.high_watermark,
                    last_stable_offset=part.stable,
                    log_start_offset=log.log_start_offset,
                    aborted_transactions=aborted,
                    preferred_read_replica=-1,
                    records=records,
                )
            )
        topics.append(make(m.FetchableTopicResponse, topic=topic, partitions=tuple(entries)))
    return tuple(topics), total


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


_budgets: WeakKeyDictionary[BrokerState, FetchMemory] = WeakKeyDictionary()


def fetch_memory(state: BrokerState) -> FetchMemory:
    """The broker's one budget for fetch responses in flight."""
    budget = _budgets.get(state)
    if budget is None:
        budget = _budgets[state] = FetchMemory(state.config.fetch_response_max_memory_bytes)
    return budget


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    deadline = time.monotonic() + body.max_wait.total_seconds()
    wanted = [(t.topic, p.partition) for t in body.topics for p in t.partitions]
    denied = {t.topic for t in body.topics if topic_code(request, Operation.READ, t.topic)}
    while True:
        planned, total, errors = _plan(state, body, denied)
        left = deadline - time.monotonic()
        if total >= body.min_bytes or errors or left <= 0 or not wanted:
            break
        await state.notifier.wait(wanted, left)
    reservation = None
    if total:
        budget = fetch_memory(state)
        reservation = budget.try_reserve(total)
        if reservation is None:
            # Wait for memory as for data: up to max_wait, then what fits, or nothing.
            reservation = await budget.reserve(total, deadline - time.monotonic())
            if reservation is None:
                reservation = budget.reserve_free(total)
            # The log may have moved on while this waited: locate again, within
            # what was reserved.
            cap = 0 if reservation is None else reservation.size
            planned, total, errors = _plan(state, body, denied, cap, strict=True)
    try:
        topics, total = _answer(m, planned)
    except BaseException:
        if reservation is not None:
            reservation.release()
        raise
    response = make(
        m.FetchResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        session_id=0,
        responses=topics,
    )
    if reservation is None:
        return response
    if not total:
        reservation.release()
        return response
    reservation.shrink(total)
    frame = fetch_frame_pieces(request.api_version, request.correlation_id, response)
    return HeldResponse(response, frame, reservation)


ROUTE = Route(API_KEY, 4, 11, handle)
