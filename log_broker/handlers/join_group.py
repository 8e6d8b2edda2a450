"""JoinGroup (key 11): enter a group; answered when the join phase ends.

From v4 a dynamic member's first join (without a member id) is answered at once with
MEMBER_ID_REQUIRED and the id to rejoin with, as Kafka does since 2.2.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import GroupError, JoinRequest, MemberIdRequiredError
from ..security import Operation
from ._authz import require_group
from ._groups import code_of, millis

API_KEY = 11


def _error(m: Any, error: GroupError, member_id: str) -> Any:
    return make(
        m.JoinGroupResponse,
        throttle_time=NO_THROTTLE,
        error_code=code_of(error),
        generation_id=-1,
        protocol_name="",
        leader="",
        member_id=member_id,
        members=(),
    )


async def handle(state: BrokerState, request: Request) -> Any:
    body, version = request.body, request.api_version
    m = response_module(API_KEY, version)
    session_timeout = millis(body.session_timeout)
    rebalance_timeout = millis(body.rebalance_timeout)
    join = JoinRequest(
        group_id=body.group_id,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        client_id=request.client_id or "",
        client_host=request.client_host,
        session_timeout_ms=session_timeout,
        rebalance_timeout_ms=rebalance_timeout if rebalance_timeout >= 0 else session_timeout,
        protocol_type=body.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in body.protocols),
        require_known_member_id=version >= 4,
    )
    try:
        require_group(request, Operation.READ, body.group_id)
        result = await state.groups.join(join)
    except MemberIdRequiredError as exc:
        return _error(m, exc, exc.member_id)
    except GroupError as exc:
        return _error(m, exc, body.member_id)
    members = tuple(
        make(
            m.JoinGroupResponseMember,
            member_id=j.member_id,
            group_instance_id=j.group_instance_id,
            metadata=j.metadata,
        )
        for j in result.members
    )
    return make(
        m.JoinGroupResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        generation_id=result.generation,
        protocol_name=result.protocol,
        leader=result.leader,
        member_id=result.member_id,
        members=members,
    )


ROUTE = Route(API_KEY, 2, 5, handle)
