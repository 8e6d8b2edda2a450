"""What the share-group handlers (keys 76-79) have in common."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._state import BrokerState
from ..share import GROUP_CONFIG_NAMES, ShareError
from ..share._service import AckBatch, ShareService

Answer = Callable[..., Any]


def answerer(response_cls: Any, service: ShareService, group_id: str) -> Answer:
    """``answer(code, message, topics=())``: a ShareFetch or ShareAcknowledge response
    with the group's acquisition lock duration."""
    lock = timedelta(milliseconds=service.coordinator.rules_for(group_id).lock_duration_ms)

    def answer(code: ErrorCode, message: str | None, topics: tuple[Any, ...] = ()) -> Any:
        return make(
            response_cls,
            throttle_time=NO_THROTTLE,
            error_code=code,
            error_message=message,
            acquisition_lock_timeout=lock,
            responses=topics,
            node_endpoints=(),
        )

    return answer


def ack_batches(batches: Any) -> list[AckBatch]:
    return [AckBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types)) for b in batches]


def share_service(state: BrokerState) -> ShareService:
    if state.share is None:
        raise RuntimeError("share groups are not running")
    return state.share


def code_of(error: ShareError | None) -> ErrorCode:
    return ErrorCode.none if error is None else error.code


def message_of(error: Exception | None) -> str | None:
    return None if error is None else str(error)


def topic_names(service: ShareService, topic_ids: Any) -> dict[uuid.UUID, str | None]:
    """Each requested topic id and its topic's name (None: no such topic)."""
    return {t: service.topic_name(t) for t in topic_ids if t is not None}


GROUP_RESOURCE = 32  # DescribeConfigs' and AlterConfigs' resource type for a group
_SET, _DELETE = 0, 1


async def alter_share_group_config(
    state: BrokerState, resource: Any, validate_only: bool
) -> tuple[ErrorCode, str | None]:
    """IncrementalAlterConfigs on a GROUP resource: set or delete ``share.*`` configs."""
    service = share_service(state)
    overrides = service.group_config(resource.resource_name)
    for change in resource.configs:
        if change.name not in GROUP_CONFIG_NAMES:
            return ErrorCode.invalid_config, f"{change.name} is not a share group config"
        if change.config_operation == _SET and change.value is not None:
            overrides[change.name] = change.value
        elif change.config_operation == _DELETE:
            overrides.pop(change.name, None)
        else:
            return ErrorCode.invalid_config, f"{change.name}: only SET and DELETE apply"
    try:
        await service.set_group_config(resource.resource_name, overrides, validate_only)
    except ShareError as exc:
        return exc.code, str(exc)
    return ErrorCode.none, None
