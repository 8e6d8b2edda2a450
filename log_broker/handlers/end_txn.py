"""EndTxn (key 26, v0-2): commit or abort the producer's transaction.

Answered once the outcome is durable and the markers are written to every partition
of the transaction (or, if a marker could not be written, once the decision is
durable; the coordinator finishes the rest). v2 answers a fenced producer
PRODUCER_FENCED.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from headrace.transactions import TransactionError

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ._authz import require_transactional_id
from ._txn import txn_error_code

API_KEY = 26


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    body = request.body
    try:
        require_transactional_id(request, body.transactional_id)
        await state.txn.coordinator.end_txn(
            body.transactional_id, body.producer_id, body.producer_epoch, commit=body.committed
        )
        code = ErrorCode.none
    except TransactionError as exc:
        code = txn_error_code(exc, fenced_allowed=request.api_version >= 2)
    return make(m.EndTxnResponse, throttle_time=NO_THROTTLE, error_code=code)


ROUTE = Route(API_KEY, 0, 2, handle)
