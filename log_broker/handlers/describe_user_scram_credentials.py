"""DescribeUserScramCredentials (key 50): which SCRAM mechanisms (and iteration counts)
each user has; never salts or keys. Needs DESCRIBE on the cluster. A null or empty list of
users means every user, as in Kafka (librdkafka sends an empty one); a named user without
credentials gets RESOURCE_NOT_FOUND."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType

API_KEY = 50


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    if not request.session.allows(Operation.DESCRIBE, ResourceType.CLUSTER):
        return make(
            m.DescribeUserScramCredentialsResponse,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message="not allowed to describe credentials",
            results=(),
        )
    assert state.security is not None
    known = state.security.credentials.users()
    asked = request.body.users
    wanted = [u.name for u in asked] if asked else sorted(known)
    results = []
    for user in wanted:
        if user not in known:
            results.append(
                make(
                    m.DescribeUserScramCredentialsResult,
                    user=user,
                    error_code=ErrorCode.resource_not_found,
                    error_message=f"no SCRAM credentials for user {user}",
                    credential_infos=(),
                )
            )
            continue
        results.append(
            make(
                m.DescribeUserScramCredentialsResult,
                user=user,
                error_code=ErrorCode.none,
                error_message=None,
                credential_infos=tuple(
                    make(m.CredentialInfo, mechanism=mechanism.protocol_id, iterations=iterations)
                    for mechanism, iterations in known[user]
                ),
            )
        )
    return make(
        m.DescribeUserScramCredentialsResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        results=tuple(results),
    )


ROUTE = Route(API_KEY, 0, 0, handle)
