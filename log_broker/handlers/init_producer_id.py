"""InitProducerId (key 22): a producer id and epoch, for idempotence or a transaction.

Without a transactional id: a fresh producer id, unique across restarts, at epoch 0.
With one, the transaction coordinator answers: the id's producer with its epoch bumped,
which fences any older producer of that id (and aborts its open transaction). From
v3 a producer may name its current id and epoch to bump its own epoch after an
abortable error; v4 answers a fenced caller PRODUCER_FENCED instead of
INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from headrace.base.millis import duration_millis
from headrace.transactions import ProducerIdAndEpoch, TransactionError

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ._authz import require_producer_id
from ._txn import txn_error_code

API_KEY = 22


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    body = request.body
    expected = None
    producer_id = getattr(body, "producer_id", -1)
    if producer_id >= 0:
        expected = ProducerIdAndEpoch(producer_id, getattr(body, "producer_epoch", -1))
    timeout_ms = duration_millis(body.transaction_timeout)
    try:
        require_producer_id(request, body.transactional_id)
        pid, epoch = await state.txn.coordinator.init_producer_id(
            body.transactional_id, timeout_ms, expected
        )
    except TransactionError as exc:
        code = txn_error_code(exc, fenced_allowed=request.api_version >= 4)
        return make(
            m.InitProducerIdResponse,
            throttle_time=NO_THROTTLE,
            error_code=code,
            producer_id=-1,
            producer_epoch=-1,
        )
    return make(
        m.InitProducerIdResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        producer_id=pid,
        producer_epoch=epoch,
    )


ROUTE = Route(API_KEY, 0, 4, handle)
