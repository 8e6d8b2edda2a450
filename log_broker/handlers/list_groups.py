"""ListGroups (key 16): every group this coordinator knows, with its protocol type
(share groups, KIP-932, with protocol type ``share``)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType

API_KEY = 16


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    # DESCRIBE on the cluster lists every group; otherwise those the principal may describe.
    every = request.session.allows(Operation.DESCRIBE, ResourceType.CLUSTER)
    groups = tuple(
        make(m.ListedGroup, group_id=g.group_id, protocol_type=g.protocol_type)
        for g in state.groups.list_groups()
        if every or request.session.allows(Operation.DESCRIBE, ResourceType.GROUP, g.group_id)
    )
    if state.share is not None:
        groups += tuple(
            make(m.ListedGroup, group_id=g, protocol_type="share")
            for g in state.share.group_ids()
            if every or request.session.allows(Operation.DESCRIBE, ResourceType.GROUP, g)
        )
    return make(
        m.ListGroupsResponse, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, groups=groups
    )


ROUTE = Route(API_KEY, 0, 2, handle)
