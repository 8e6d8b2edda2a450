"""ShareGroupDescribe (key 77): members, epochs and assignments of share groups."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType
from ._share import share_service

API_KEY = 77
_OPERATIONS_OMITTED = -(2**31)
ASSIGNOR = "simple"


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    service = share_service(state)
    described = []
    for group_id in request.body.group_ids:
        if not request.session.allows(Operation.DESCRIBE, ResourceType.GROUP, group_id):
            described.append(_empty(m, group_id, ErrorCode.group_authorization_failed, None))
            continue
        group = service.coordinator.groups.get(group_id)
        if group is None:
            if service.has_state(group_id):
                described.append(_empty(m, group_id, ErrorCode.none, None, state="Empty"))
            else:
                described.append(
                    _empty(m, group_id, ErrorCode.group_id_not_found, f"no share group {group_id}")
                )
            continue
        members = []
        for member in group.members.values():
            topics = []
            for name, partitions in member.assignment.items():
                topic = service.topic(name)
                if topic is not None:
                    topics.append(
                        make(
                            m.TopicPartitions,
                            topic_id=topic.topic_id,
                            topic_name=name,
                            partitions=partitions,
                        )
                    )
            members.append(
                make(
                    m.Member,
                    member_id=member.member_id,
                    rack_id=member.rack_id,
                    member_epoch=member.epoch,
                    client_id=member.client_id,
                    client_host=member.client_host,
                    subscribed_topic_names=member.subscribed,
                    assignment=make(m.Assignment, topic_partitions=tuple(topics)),
                )
            )
        described.append(
            make(
                m.DescribedGroup,
                error_code=ErrorCode.none,
                error_message=None,
                group_id=group_id,
                group_state=group.state,
                group_epoch=group.epoch,
                assignment_epoch=group.epoch,
                assignor_name=ASSIGNOR,
                members=tuple(members),
                authorized_operations=_OPERATIONS_OMITTED,
            )
        )
    return make(m.ShareGroupDescribeResponse, throttle_time=NO_THROTTLE, groups=tuple(described))


def _empty(m: Any, group_id: str, code: ErrorCode, message: str | None, state: str = "") -> Any:
    return make(
        m.DescribedGroup,
        error_code=code,
        error_message=message,
        group_id=group_id,
        group_state=state,
        group_epoch=0,
        assignment_epoch=0,
        assignor_name=ASSIGNOR if state else "",
        members=(),
        authorized_operations=_OPERATIONS_OMITTED,
    )


ROUTE = Route(API_KEY, 1, 1, handle)
