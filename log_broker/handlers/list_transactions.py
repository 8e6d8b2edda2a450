"""ListTransactions (key 66): the transactional ids the coordinator knows, filtered by
state, producer id and (v1) how long their transaction has been running, as
``kafka-transactions.sh list`` and ``find-hanging`` use it. A state filter naming no
known state is returned in ``unknown_state_filters``, as Kafka does."""

from __future__ import annotations

import time
from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType
from ._txn_states import KNOWN_NAMES, STATE_NAMES

API_KEY = 66


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    states = set(body.state_filters)
    producers = set(body.producer_id_filters)
    min_duration = getattr(body, "duration_filter", -1)
    now_ms = time.time() * 1000
    listed = []
    for meta in state.txn.coordinator.transactions():
        name = STATE_NAMES[meta.state]
        if states and name not in states:
            continue
        if producers and meta.producer_id not in producers:
            continue
        if not request.session.allows(
            Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, meta.transactional_id
        ):
            continue  # as Kafka: only the transactions the principal may describe
        if min_duration >= 0 and (meta.start_ms < 0 or now_ms - meta.start_ms < min_duration):
            continue
        listed.append(
            make(
                m.TransactionState,
                transactional_id=meta.transactional_id,
                producer_id=meta.producer_id,
                transaction_state=name,
            )
        )
    return make(
        m.ListTransactionsResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        unknown_state_filters=tuple(sorted(states - KNOWN_NAMES)),
        transaction_states=tuple(listed),
    )


ROUTE = Route(API_KEY, 0, 1, handle)
