"""DeleteTopics (key 20)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import INTERNAL_TOPICS, BrokerState
from .._wire import Request, response_module
from ..security import Operation
from ._authz import topic_code

API_KEY = 20


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    results = []
    for name in request.body.topic_names:
        if (refused := topic_code(request, Operation.DELETE, name)) is not None:
            error = refused
        elif name in INTERNAL_TOPICS:
            error = ErrorCode.invalid_topic_exception
        elif (topic := state.logs.topics().get(name)) is not None:
            state.logs.delete_topic(name)
            if state.share is not None:
                state.share.forget_topic(topic.topic_id)  # share groups' state of it
            error = ErrorCode.none
        else:
            error = ErrorCode.unknown_topic_or_partition
        results.append(make(m.DeletableTopicResult, name=name, error_code=error))
    return make(m.DeleteTopicsResponse, throttle_time=NO_THROTTLE, responses=tuple(results))


ROUTE = Route(API_KEY, 1, 3, handle)
