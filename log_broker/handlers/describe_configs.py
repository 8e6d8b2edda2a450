"""DescribeConfigs (key 32): every effective config, defaults included.

Clients such as Quix Streams read ``retention.ms`` from here, so a topic without
overrides still reports each setting with its default and ``DEFAULT_CONFIG`` source.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .. import storage
from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation
from ._authz import config_code

API_KEY = 32
TOPIC = 2
BROKER = 4
# ConfigSource values from DescribeConfigsResponse.json.
DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5


def _topic_configs(m: Any, topic: storage.Topic, synonyms: bool, docs: bool) -> list[Any]:
    entries = []
    for entry in storage.describe_configs(topic.config):
        source = DEFAULT_CONFIG if entry.is_default else DYNAMIC_TOPIC_CONFIG
        synonym = make(m.DescribeConfigsSynonym, name=entry.name, value=entry.value, source=source)
        entries.append(
            make(
                m.DescribeConfigsResourceResult,
                name=entry.name,
                value=entry.value,
                read_only=False,
                is_default=entry.is_default,
                config_source=source,
                is_sensitive=False,
                synonyms=(synonym,) if synonyms else (),
                config_type=int(entry.type),
                documentation=entry.doc if docs else None,
            )
        )
    return entries


def _broker_configs(m: Any, state: BrokerState) -> list[Any]:
    return [
        make(
            m.DescribeConfigsResourceResult,
            name=name,
            value=value,
            read_only=True,
            is_default=False,
            config_source=STATIC_BROKER_CONFIG,
            is_sensitive=False,
            synonyms=(),
            config_type=0,
            documentation=None,
        )
        for name, value in state.config.broker_configs().items()
    ]


def _result(state: BrokerState, m: Any, resource: Any, body: Any) -> Any:
    if resource.resource_type == TOPIC:
        topic = state.logs.topics().get(resource.resource_name)
        if topic is None:
            return make(
                m.DescribeConfigsResult,
                error_code=ErrorCode.unknown_topic_or_partition,
                error_message=f"topic {resource.resource_name!r} does not exist",
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=(),
            )
        entries = _topic_configs(
            m,
            topic,
            getattr(body, "include_synonyms", False),
            getattr(body, "include_documentation", False),
        )
    else:
        entries = _broker_configs(m, state)
    keys = resource.configuration_keys
    configs = tuple(e for e in entries if not keys or e.name in keys)
    return make(
        m.DescribeConfigsResult,
        error_code=ErrorCode.none,
        error_message=None,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
        configs=configs,
    )


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    results = tuple(
        _result(state, m, r, request.body)
        if refused is None
        else make(
            m.DescribeConfigsResult,
            error_code=refused,
            error_message=None,
            resource_type=r.resource_type,
            resource_name=r.resource_name,
            configs=(),
        )
        for r in request.body.resources
        for refused in [config_code(request, Operation.DESCRIBE_CONFIGS, r)]
    )
    return make(m.DescribeConfigsResponse, throttle_time=NO_THROTTLE, results=results)


ROUTE = Route(API_KEY, 1, 3, handle)
