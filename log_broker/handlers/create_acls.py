"""CreateAcls (key 30): add bindings; needs ALTER on the cluster. Each creation gets its
own result, so one bad binding (an unknown operation, a MATCH pattern) refuses only
itself. The bindings are written to the data dir before the answer."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._wire import Request, response_module
from ..security import AclBinding, Operation, PatternType, Permission, ResourceType
from ._acls import refusal

API_KEY = 30


async def handle(_state: Any, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    creations = request.body.creations
    refused = refusal(request, Operation.ALTER)
    if refused is not None:
        error, message = refused
        return make(
            m.CreateAclsResponse,
            throttle_time=NO_THROTTLE,
            results=tuple(
                make(m.AclCreationResult, error_code=error, error_message=message)
                for _ in creations
            ),
        )
    results = []
    for creation in creations:
        try:
            binding = AclBinding(
                ResourceType(creation.resource_type),
                creation.resource_name,
                PatternType(getattr(creation, "resource_pattern_type", PatternType.LITERAL)),
                creation.principal,
                creation.host,
                Operation(creation.operation),
                Permission(creation.permission_type),
            )
            request.session.authorizer.add([binding])
        except ValueError as exc:
            results.append(
                make(
                    m.AclCreationResult,
                    error_code=ErrorCode.invalid_request,
                    error_message=str(exc),
                )
            )
            continue
        results.append(make(m.AclCreationResult, error_code=ErrorCode.none, error_message=None))
    return make(m.CreateAclsResponse, throttle_time=NO_THROTTLE, results=tuple(results))


ROUTE = Route(API_KEY, 1, 3, handle)
