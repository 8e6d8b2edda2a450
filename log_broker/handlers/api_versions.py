"""ApiVersions (key 18): the version ranges this broker serves, read off the router,
and the feature levels it implements (KIP-584).

Features a client acts on once they are finalized, so each level here is one whose
behaviour this broker has:

- ``group.version`` 1: the consumer group protocol of KIP-848 (ConsumerGroupHeartbeat).
- ``share.version`` 1: share groups (KIP-932). Level 2 (Kafka 4.4) is not offered.
- ``transaction.version`` 0 only: level 2 turns on KIP-890 part 2 in Kafka's clients
  (implicit partition adds with Produce v12, an epoch bump at every EndTxn v5), and
  level 1 stands for flexible records in Kafka's own ``__transaction_state``; neither
  is what this coordinator does.
- ``streams.version`` 0 only: no streams groups (KIP-1071) here.

KRaft's own features (``metadata.version``, ``kraft.version``,
``eligible.leader.replicas.version``) are left out: this broker has no KRaft quorum.
Only levels above 0 are finalized, as in Kafka, where level 0 means "off".

Before v4 a client may not be told of a minimum level 0 (KAFKA-17011): Kafka then
says 1, or leaves out a feature whose maximum is 0 too, and so does this.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route, Router
from .._wire import Request, response_module

API_KEY = 18
FEATURES_FROM = 3  # the first version with (tagged) feature fields

SUPPORTED_FEATURES = {
    "group.version": (0, 1),
    "share.version": (0, 1),
    "streams.version": (0, 0),
    "transaction.version": (0, 0),
}
"""Feature name -> (min, max) level this broker implements; each is finalized at max."""

FINALIZED_EPOCH = 0
"""The levels never change while a broker runs, so their epoch never moves."""


def _features(m: Any, version: int) -> dict[str, Any]:
    if version < FEATURES_FROM:
        return {}
    supported = []
    for name, (low, high) in sorted(SUPPORTED_FEATURES.items()):
        if version < 4 and low == 0:
            if high == 0:
                continue
            low = 1
        supported.append(make(m.SupportedFeatureKey, name=name, min_version=low, max_version=high))
    finalized = tuple(
        make(m.FinalizedFeatureKey, name=name, min_version_level=high, max_version_level=high)
        for name, (_, high) in sorted(SUPPORTED_FEATURES.items())
        if high > 0
    )
    return {
        "supported_features": tuple(supported),
        "finalized_features_epoch": FINALIZED_EPOCH,
        "finalized_features": finalized,
    }


def versions_response(router: Router, version: int, error: ErrorCode) -> Any:
    m = response_module(API_KEY, version)
    keys = tuple(
        make(m.ApiVersion, api_key=r.api_key, min_version=r.min_version, max_version=r.max_version)
        for r in router
    )
    return make(
        m.ApiVersionsResponse,
        error_code=error,
        api_keys=keys,
        throttle_time=NO_THROTTLE,
        **_features(m, version),
    )


def route(router: Router) -> Route:
    async def handle(_state: Any, request: Request) -> Any:
        return versions_response(router, request.api_version, ErrorCode.none)

    return Route(API_KEY, 0, 4, handle)
