"""AlterConfigs (key 33, replaces a topic's overrides) and IncrementalAlterConfigs
(key 44, set/delete/append/subtract per key). Broker configs are static here; a share
group's ``share.*`` configs may be set or deleted incrementally (``_share``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from .. import storage
from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation
from ._authz import config_code
from ._codes import error_code_for
from ._share import GROUP_RESOURCE, alter_share_group_config

ALTER_CONFIGS = 33
INCREMENTAL_ALTER_CONFIGS = 44

TOPIC = 2
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

Change = Callable[[storage.Topic], dict[str, str]]


def _apply(
    state: BrokerState,
    resource: Any,
    new_overrides: Change,
    validate_only: bool,
) -> tuple[ErrorCode, str | None]:
    if resource.resource_type != TOPIC:
        return ErrorCode.invalid_request, "only topic configs can be altered"
    topic = state.logs.topics().get(resource.resource_name)
    if topic is None:
        return ErrorCode.unknown_topic_or_partition, None
    try:
        overrides = new_overrides(topic)
        if validate_only:
            storage.TopicConfig.from_overrides(overrides)
        else:
            state.logs.alter_config(topic.name, overrides)
    except storage.StorageError as exc:
        return error_code_for(exc), str(exc)
    except ValueError as exc:
        return ErrorCode.invalid_config, str(exc)
    return ErrorCode.none, None


def _replace(resource: Any) -> Change:
    return lambda _topic: {c.name: c.value for c in resource.configs if c.value is not None}


def _incremental(resource: Any) -> Change:
    def change(topic: storage.Topic) -> dict[str, str]:
        overrides = dict(topic.overrides)
        for c in resource.configs:
            current = overrides.get(c.name)
            if current is None:
                current = dict((n, v) for n, v, _ in storage.effective_configs({})).get(c.name)
            items = [i for i in (current or "").split(",") if i]
            if c.config_operation == SET:
                overrides[c.name] = c.value or ""
            elif c.config_operation == DELETE:
                overrides.pop(c.name, None)
            elif c.config_operation == APPEND:
                overrides[c.name] = ",".join(
                    items + [v for v in (c.value or "").split(",") if v and v not in items]
                )
            elif c.config_operation == SUBTRACT:
                drop = set((c.value or "").split(","))
                overrides[c.name] = ",".join(i for i in items if i not in drop)
            else:
                raise ValueError(f"unknown config operation {c.config_operation}")
        return overrides

    return change


def _handler(api_key: int, response_name: str, change_for: Callable[[Any], Change]) -> Any:
    async def handle(state: BrokerState, request: Request) -> Any:
        m = response_module(api_key, request.api_version)
        responses = []
        for resource in request.body.resources:
            refused = config_code(request, Operation.ALTER_CONFIGS, resource)
            if refused is not None:
                error, message = refused, None
            elif resource.resource_type == GROUP_RESOURCE and api_key == INCREMENTAL_ALTER_CONFIGS:
                error, message = await alter_share_group_config(
                    state, resource, request.body.validate_only
                )
            else:
                error, message = _apply(
                    state, resource, change_for(resource), request.body.validate_only
                )
            responses.append(
                make(
                    m.AlterConfigsResourceResponse,
                    error_code=error,
                    error_message=message,
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                )
            )
        return make(
            getattr(m, response_name), throttle_time=NO_THROTTLE, responses=tuple(responses)
        )

    return handle


ALTER_ROUTE = Route(ALTER_CONFIGS, 0, 1, _handler(ALTER_CONFIGS, "AlterConfigsResponse", _replace))
INCREMENTAL_ROUTE = Route(
    INCREMENTAL_ALTER_CONFIGS,
    0,
    1,
    _handler(INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigsResponse", _incremental),
)
