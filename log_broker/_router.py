"""Routes decoded requests to one handler per Kafka API and answers ApiVersions from
what is registered, so the advertised version ranges can never drift from the code."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ._wire import Request

Handle = Callable[[Any, Request], Awaitable[Any]]
ErrorResponse = Callable[[Request, int], Any]


@dataclass(frozen=True, slots=True)
class Route:
    api_key: int
    min_version: int
    max_version: int
    handle: Handle
    # Builds this API's response carrying one error code for every item in the request;
    # used when a request arrives at a version outside the advertised range.
    error_response: ErrorResponse | None = None

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


class Router:
    def __init__(self) -> None:
        self._routes: dict[int, Route] = {}

    def add(self, route: Route) -> None:
        if route.api_key in self._routes:
            raise ValueError(f"api key {route.api_key} registered twice")
        self._routes[route.api_key] = route

    def get(self, api_key: int) -> Route | None:
        return self._routes.get(api_key)

    def __iter__(self) -> Iterator[Route]:
        return iter(sorted(self._routes.values(), key=lambda r: r.api_key))
