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
    # v4 filters by state, v5 by type (classic, consumer or share); case-insensitive as in
    # Kafka.
    states = {s.lower() for s in getattr(request.body, "states_filter", ())}
    types = {t.lower() for t in getattr(request.body, "types_filter", ())}
    groups = tuple(
        make(
            m.ListedGroup,
            group_id=g.group_id,
            protocol_type=g.protocol_type,
            group_state=g.state.value,
            group_type=g.group_type,
        )
        for g in state.groups.list_groups()
        if (every or request.session.allows(Operation.DESCRIBE, ResourceType.GROUP, g.group_id))
        and (not states or g.state.value.lower() in states)
        and (not types or g.group_type in types)
    )
    if state.share is not None and (not types or "share" in types):
        groups += tuple(
            make(
                m.ListedGroup,
                group_id=g,
                protocol_type="share",
                group_state=group_state,
                group_type="share",
            )
            for g, group_state in state.share.group_states()
            if (every or request.session.allows(Operation.DESCRIBE, ResourceType.GROUP, g))
            and (not states or group_state.lower() in states)
        )
    return make(
        m.ListGroupsResponse, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, groups=groups
    )


ROUTE = Route(API_KEY, 0, 5, handle)
