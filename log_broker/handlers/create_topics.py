"""CreateTopics (key 19). One broker, so a replication factor above 1 cannot be met."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode

from .. import storage
from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ._authz import may_create_topic
from ._codes import error_code_for

API_KEY = 19
BROKER_DEFAULT = -1


async def _create(
    state: BrokerState, topic: Any, validate_only: bool
) -> tuple[ErrorCode, str | None]:
    if topic.replication_factor not in (BROKER_DEFAULT, 1):
        return (
            ErrorCode.invalid_replication_factor,
            f"replication factor {topic.replication_factor} > 1 available broker",
        )
    if topic.assignments:
        return ErrorCode.invalid_request, "manual replica assignment is not supported"
    partitions = (
        state.config.num_partitions
        if topic.num_partitions == BROKER_DEFAULT
        else topic.num_partitions
    )
    overrides = {c.name: c.value for c in topic.configs if c.value is not None}
    try:
        if validate_only:
            storage.validate_new_topic(
                topic.name, partitions, overrides, existing=state.logs.topics()
            )
        else:
            # Off the event loop: thousands of partitions take seconds to create.
            await asyncio.to_thread(state.logs.create_topic, topic.name, partitions, overrides)
    except storage.StorageError as exc:
        return error_code_for(exc), str(exc)
    return ErrorCode.none, None


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    results = []
    for topic in body.topics:
        error, message = (
            await _create(state, topic, body.validate_only)
            if may_create_topic(request, topic.name)
            else (ErrorCode.topic_authorization_failed, "not allowed to create it")
        )
        results.append(
            make(
                m.CreatableTopicResult,
                name=topic.name,
                error_code=error,
                error_message=message,
                num_partitions=-1,
                replication_factor=-1,
                configs=None,
            )
        )
    return make(m.CreateTopicsResponse, throttle_time=NO_THROTTLE, topics=tuple(results))


ROUTE = Route(API_KEY, 2, 4, handle)
