"""LeaveGroup (key 13): members leave at once instead of waiting out their sessions.

Up to v2 one member leaves and its result is the response's error code; from v3 a
batch of members (by member id or group.instance.id) with a result each.
"""

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

API_KEY = 13


async def handle(state: BrokerState, request: Request) -> Any:
    body, version = request.body, request.api_version
    m = response_module(API_KEY, version)
    if version >= 3:
        leaving = [(p.member_id, p.group_instance_id) for p in body.members]
    else:
        leaving = [(body.member_id, None)]
    try:
        require_group(request, Operation.READ, body.group_id)
        results = state.groups.leave(body.group_id, leaving)
    except GroupError as exc:
        return make(
            m.LeaveGroupResponse, throttle_time=NO_THROTTLE, error_code=code_of(exc), members=()
        )
    if version < 3:
        return make(m.LeaveGroupResponse, throttle_time=NO_THROTTLE, error_code=code_of(results[0]))
    members = tuple(
        make(
            m.MemberResponse,
            member_id=member_id,
            group_instance_id=instance_id,
            error_code=code_of(error),
        )
        for (member_id, instance_id), error in zip(leaving, results, strict=True)
    )
    return make(
        m.LeaveGroupResponse, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, members=members
    )


ROUTE = Route(API_KEY, 0, 3, handle)
