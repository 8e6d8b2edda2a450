"""DeleteGroups (key 42): remove empty groups and their offsets, durably."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import GroupError
from ..security import Operation, ResourceType

API_KEY = 42


async def _delete(state: BrokerState, group_id: str) -> ErrorCode:
    try:
        await state.groups.delete(group_id)
    except GroupError as exc:
        return ErrorCode(exc.error_code)
    return ErrorCode.none


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    results = []
    for group_id in request.body.groups_names:
        results.append(
            make(
                m.DeletableGroupResult,
                group_id=group_id,
                error_code=await _delete(state, group_id)
                if request.session.allows(Operation.DELETE, ResourceType.GROUP, group_id)
                else ErrorCode.group_authorization_failed,
            )
        )
    return make(m.DeleteGroupsResponse, throttle_time=NO_THROTTLE, results=tuple(results))


ROUTE = Route(API_KEY, 0, 1, handle)
