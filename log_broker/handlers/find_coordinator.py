"""FindCoordinator (key 10): this broker coordinates every group (key type 0) and
every transactional id (key type 1)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType

API_KEY = 10
GROUP = 0
TRANSACTION = 1


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    key_type = getattr(request.body, "key_type", GROUP)
    resource = ResourceType.GROUP if key_type == GROUP else ResourceType.TRANSACTIONAL_ID
    if key_type in (GROUP, TRANSACTION) and not request.session.allows(
        Operation.DESCRIBE, resource, request.body.key
    ):
        error = (
            ErrorCode.group_authorization_failed
            if key_type == GROUP
            else ErrorCode.transactional_id_authorization_failed
        )
        return make(
            m.FindCoordinatorResponse,
            throttle_time=NO_THROTTLE,
            error_code=error,
            error_message=None,
            node_id=-1,
            host="",
            port=-1,
        )
    if key_type in (GROUP, TRANSACTION):
        host, port = request.session.listener.advertised()
        return make(
            m.FindCoordinatorResponse,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            error_message=None,
            node_id=state.config.node_id,
            host=host,
            port=port,
        )
    error, message = ErrorCode.invalid_request, f"unknown coordinator key type {key_type}"
    return make(
        m.FindCoordinatorResponse,
        throttle_time=NO_THROTTLE,
        error_code=error,
        error_message=message,
        node_id=-1,
        host="",
        port=-1,
    )


ROUTE = Route(API_KEY, 0, 2, handle)
