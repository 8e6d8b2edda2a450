"""ConsumerGroupHeartbeat (key 68): the consumer group protocol (KIP-848).

One request joins (epoch 0), stays alive and reports what the member owns, or leaves
(epoch -1; -2 for a static member coming back). The answer carries the member's
epoch, the heartbeat interval, and its assignment when that changed. Version 0 lets
the coordinator make up a member id; from version 1 the client makes its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import timedelta
from functools import partial
from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import GroupError, Heartbeat, Partition
from ..security import Operation, ResourceType
from ._authz import require_group
from ._groups import millis

API_KEY = 68


def owned_partitions(topic_partitions: Iterable[Any] | None) -> frozenset[Partition] | None:
    if topic_partitions is None:
        return None
    return frozenset(
        (tp.topic_id, int(p)) for tp in topic_partitions if tp.topic_id for p in tp.partitions
    )


def by_topic(partitions: Iterable[Partition]) -> dict[uuid.UUID, list[int]]:
    grouped: dict[uuid.UUID, list[int]] = {}
    for topic_id, partition in sorted(partitions):
        grouped.setdefault(topic_id, []).append(partition)
    return grouped


async def handle(state: BrokerState, request: Request) -> Any:
    body, version = request.body, request.api_version
    m = response_module(API_KEY, version)
    if version >= 1 and body.member_epoch == 0 and not body.member_id:
        return _error(m, ErrorCode.invalid_request, "MemberId can't be empty", body)
    beat = Heartbeat(
        group_id=body.group_id,
        member_id=body.member_id,
        member_epoch=body.member_epoch,
        instance_id=body.instance_id,
        rack_id=body.rack_id,
        rebalance_timeout_ms=millis(body.rebalance_timeout),
        topic_names=None
        if body.subscribed_topic_names is None
        else tuple(body.subscribed_topic_names),
        topic_regex=getattr(body, "subscribed_topic_regex", None),
        server_assignor=body.server_assignor,
        owned=owned_partitions(body.topic_partitions),
        client_id=request.client_id or "",
        client_host=request.client_host,
        may_describe=partial(request.session.allows, Operation.DESCRIBE, ResourceType.TOPIC),
    )
    try:
        require_group(request, Operation.READ, body.group_id)
        result = state.groups.consumer_heartbeat(beat)
    except GroupError as exc:
        return _error(m, ErrorCode(exc.error_code), str(exc), body)
    assignment = None
    if result.assignment is not None:
        assignment = make(
            m.Assignment,
            topic_partitions=tuple(
                make(m.TopicPartitions, topic_id=topic_id, partitions=tuple(partitions))
                for topic_id, partitions in by_topic(result.assignment).items()
            ),
        )
    return make(
        m.ConsumerGroupHeartbeatResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval=timedelta(milliseconds=result.heartbeat_interval_ms),
        assignment=assignment,
    )


def _error(m: Any, code: ErrorCode, message: str, body: Any) -> Any:
    return make(
        m.ConsumerGroupHeartbeatResponse,
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=message,
        member_id=body.member_id or None,
        member_epoch=-1,
        heartbeat_interval=timedelta(0),
        assignment=None,
    )


ROUTE = Route(API_KEY, 0, 1, handle)
