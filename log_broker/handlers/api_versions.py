"""ApiVersions (key 18): the version ranges this broker serves, read off the router."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route, Router
from .._wire import Request, response_module

API_KEY = 18


def versions_response(router: Router, version: int, error: ErrorCode) -> Any:
    m = response_module(API_KEY, version)
    keys = tuple(
        make(m.ApiVersion, api_key=r.api_key, min_version=r.min_version, max_version=r.max_version)
        for r in router
    )
    return make(m.ApiVersionsResponse, error_code=error, api_keys=keys, throttle_time=NO_THROTTLE)


def route(router: Router) -> Route:
    async def handle(_state: Any, request: Request) -> Any:
        return versions_response(router, request.api_version, ErrorCode.none)

    return Route(API_KEY, 0, 3, handle)
