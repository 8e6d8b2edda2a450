"""DescribeTransactions (key 65): the state, timeout, start time, producer and partitions
of each transactional id, as ``kafka-transactions.sh describe`` and admin clients show
them. An id the coordinator does not know is TRANSACTIONAL_ID_NOT_FOUND."""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType
from ._txn_states import STATE_NAMES

API_KEY = 65
_NEVER = datetime.datetime.fromtimestamp(-0.001, datetime.UTC)  # -1 ms: not started, as Kafka says
_EPOCH = datetime.datetime.fromtimestamp(0, datetime.UTC)  # an error entry's default, as Kafka's


def _describe(state: BrokerState, m: Any, transactional_id: str) -> Any:
    coordinator = state.txn.coordinator
    meta = next(
        (t for t in coordinator.transactions() if t.transactional_id == transactional_id), None
    )
    if meta is None:
        return make(
            m.TransactionState,
            error_code=ErrorCode.transactional_id_not_found,
            transactional_id=transactional_id,
            transaction_state="",
            transaction_timeout=datetime.timedelta(0),
            transaction_start_time=_EPOCH,
            producer_id=-1,
            producer_epoch=-1,
            topics=(),
        )
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(meta.partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    started = (
        datetime.datetime.fromtimestamp(meta.start_ms / 1000, datetime.UTC)
        if meta.start_ms >= 0
        else _NEVER
    )
    return make(
        m.TransactionState,
        error_code=ErrorCode.none,
        transactional_id=transactional_id,
        transaction_state=STATE_NAMES[meta.state],
        transaction_timeout=datetime.timedelta(milliseconds=meta.timeout_ms),
        transaction_start_time=started,
        producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch,
        topics=tuple(
            make(m.TopicData, topic=topic, partitions=tuple(parts))
            for topic, parts in by_topic.items()
        ),
    )


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    described = tuple(
        _describe(state, m, tid)
        if request.session.allows(Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid)
        else make(
            m.TransactionState,
            error_code=ErrorCode.transactional_id_authorization_failed,
            transactional_id=tid,
            transaction_state="",
            transaction_timeout=datetime.timedelta(0),
            transaction_start_time=_EPOCH,
            producer_id=-1,
            producer_epoch=-1,
            topics=(),
        )
        for tid in request.body.transactional_ids
    )
    return make(
        m.DescribeTransactionsResponse, throttle_time=NO_THROTTLE, transaction_states=described
    )


ROUTE = Route(API_KEY, 0, 0, handle)
