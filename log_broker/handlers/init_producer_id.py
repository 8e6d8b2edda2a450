"""InitProducerId (key 22): a fresh producer id, unique across restarts, at epoch 0.

Idempotent producers (kafka-python's default) need this before their first produce.
Transactional ids belong to the transaction coordinator; without one, they are refused.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module

API_KEY = 22


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    if request.body.transactional_id is not None:
        return make(m.InitProducerIdResponse, throttle_time=NO_THROTTLE,
                    error_code=ErrorCode.coordinator_not_available, producer_id=-1,
                    producer_epoch=-1)
    return make(m.InitProducerIdResponse, throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
                producer_id=state.producer_ids.allocate(), producer_epoch=0)


ROUTE = Route(API_KEY, 0, 4, handle)
