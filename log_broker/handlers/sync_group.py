"""SyncGroup (key 14): the leader hands in the assignment; every member gets its part
once the assignment is durable in ``__consumer_offsets``."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import GroupError
from ..security import Operation
from ._authz import require_group
from ._groups import code_of

API_KEY = 14


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    assignments = {a.member_id: bytes(a.assignment) for a in body.assignments}
    try:
        require_group(request, Operation.READ, body.group_id)
        assignment = await state.groups.sync(
            body.group_id,
            body.generation_id,
            body.member_id,
            getattr(body, "group_instance_id", None),
            assignments,
        )
    except GroupError as exc:
        return make(
            m.SyncGroupResponse, throttle_time=NO_THROTTLE, error_code=code_of(exc), assignment=b""
        )
    return make(
        m.SyncGroupResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        assignment=assignment,
    )


ROUTE = Route(API_KEY, 0, 3, handle)
