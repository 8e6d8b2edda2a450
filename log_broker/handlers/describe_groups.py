"""DescribeGroups (key 15): state, protocol and members of each group.

As in Kafka, an unknown group is reported as Dead without an error, and member
metadata and assignments are filled in only while the group is Stable.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType

API_KEY = 15
_OPERATIONS_OMITTED = -(2**31)
# No ACLs here: READ (3), DELETE (6) and DESCRIBE (8) are allowed on every group.
_GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)


def _describe(state: BrokerState, m: Any, group_id: str, operations: int) -> Any:
    if not group_id:
        return make(
            m.DescribedGroup,
            error_code=ErrorCode.invalid_group_id,
            group_id=group_id,
            group_state="",
            protocol_type="",
            protocol_data="",
            members=(),
            authorized_operations=operations,
        )
    group = state.groups.describe(group_id)
    members = tuple(
        make(
            m.DescribedGroupMember,
            member_id=d.member_id,
            group_instance_id=d.group_instance_id,
            client_id=d.client_id,
            client_host=d.client_host,
            member_metadata=d.metadata,
            member_assignment=d.assignment,
        )
        for d in group.members
    )
    return make(
        m.DescribedGroup,
        error_code=ErrorCode.none,
        group_id=group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type,
        protocol_data=group.protocol,
        members=members,
        authorized_operations=operations,
    )


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    operations = (
        _GROUP_OPERATIONS
        if getattr(body, "include_authorized_operations", False)
        else _OPERATIONS_OMITTED
    )
    groups = tuple(
        _describe(state, m, group_id, operations)
        if request.session.allows(Operation.DESCRIBE, ResourceType.GROUP, group_id)
        else make(
            m.DescribedGroup,
            error_code=ErrorCode.group_authorization_failed,
            group_id=group_id,
            group_state="",
            protocol_type="",
            protocol_data="",
            members=(),
            authorized_operations=operations,
        )
        for group_id in body.groups
    )
    return make(m.DescribeGroupsResponse, throttle_time=NO_THROTTLE, groups=groups)


ROUTE = Route(API_KEY, 0, 4, handle)
