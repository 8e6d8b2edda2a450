"""Heartbeat (key 12): keeps a member alive; REBALANCE_IN_PROGRESS tells it to rejoin."""

from __future__ import annotations

from typing import Any

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import GroupError
from ..security import Operation
from ._authz import require_group
from ._groups import code_of

API_KEY = 12


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    error: GroupError | None = None
    try:
        require_group(request, Operation.READ, body.group_id)
        state.groups.heartbeat(
            body.group_id,
            body.generation_id,
            body.member_id,
            getattr(body, "group_instance_id", None),
        )
    except GroupError as exc:
        error = exc
    return make(m.HeartbeatResponse, throttle_time=NO_THROTTLE, error_code=code_of(error))


ROUTE = Route(API_KEY, 0, 3, handle)
