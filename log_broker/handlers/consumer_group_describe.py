"""ConsumerGroupDescribe (key 69): groups of the consumer protocol (KIP-848) with
their epochs, assignor and each member's current and target assignment.

A group that is not of that protocol (classic, or unknown) is GROUP_ID_NOT_FOUND,
as in Kafka, which is how admin clients know to fall back to DescribeGroups.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import ConsumerGroup, Partition
from ..security import Operation, ResourceType
from .consumer_group_heartbeat import by_topic

API_KEY = 69
_OPERATIONS_OMITTED = -(2**31)
# No ACLs here: READ (3), DELETE (6) and DESCRIBE (8) are allowed on every group.
_GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
_CONSUMER_MEMBER = 1  # member_type: a member of the consumer protocol


def _assignment(m: Any, partitions: Iterable[Partition], names: Mapping[uuid.UUID, str]) -> Any:
    return make(
        m.Assignment,
        topic_partitions=tuple(
            make(
                m.TopicPartitions,
                topic_id=topic_id,
                topic_name=names.get(topic_id, ""),
                partitions=tuple(ps),
            )
            for topic_id, ps in by_topic(partitions).items()
        ),
    )


def _described(m: Any, group: ConsumerGroup, names: Mapping[uuid.UUID, str], ops: int) -> Any:
    members = tuple(
        make(
            m.Member,
            member_id=member.member_id,
            instance_id=member.instance_id,
            rack_id=member.rack,
            member_epoch=member.epoch,
            client_id=member.client_id,
            client_host=member.client_host,
            subscribed_topic_names=member.topic_names,
            subscribed_topic_regex=member.topic_regex,
            assignment=_assignment(m, member.assigned, names),
            target_assignment=_assignment(m, group.target.get(member.member_id, ()), names),
            member_type=_CONSUMER_MEMBER,
        )
        for member in group.members.values()
    )
    return make(
        m.DescribedGroup,
        error_code=ErrorCode.none,
        group_id=group.group_id,
        group_state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.assignor,
        members=members,
        authorized_operations=ops,
    )


def _failed(m: Any, group_id: str, code: ErrorCode, message: str) -> Any:
    return make(
        m.DescribedGroup,
        error_code=code,
        error_message=message,
        group_id=group_id,
        group_state="",
        group_epoch=-1,
        assignment_epoch=-1,
        assignor_name="",
        members=(),
        authorized_operations=_OPERATIONS_OMITTED,
    )


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    ops = _GROUP_OPERATIONS if body.include_authorized_operations else _OPERATIONS_OMITTED
    names = {t.topic_id: name for name, t in state.logs.topics().items()}
    groups = []
    for group_id in body.group_ids:
        group = state.groups.coordinator.consumer.get(group_id)
        if not request.session.allows(Operation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(_failed(m, group_id, ErrorCode.group_authorization_failed, ""))
        elif group is None:
            message = f"Group {group_id} is not a consumer group."
            groups.append(_failed(m, group_id, ErrorCode.group_id_not_found, message))
        else:
            groups.append(_described(m, group, names, ops))
    return make(m.ConsumerGroupDescribeResponse, throttle_time=NO_THROTTLE, groups=tuple(groups))


ROUTE = Route(API_KEY, 0, 1, handle)
