"""DeleteAcls (key 31): remove what each filter selects, reporting each removed binding;
needs ALTER on the cluster."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._wire import Request, response_module
from ..security import Operation
from ._acls import acl_filter, refusal

API_KEY = 31


async def handle(_state: Any, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    refused = refusal(request, Operation.ALTER)
    results = []
    for raw in request.body.filters:
        error, message = refused if refused is not None else (ErrorCode.none, None)
        removed = []
        if refused is None:
            try:
                removed = request.session.authorizer.remove(acl_filter(raw))
            except ValueError as exc:
                error, message = ErrorCode.invalid_request, str(exc)
        results.append(
            make(
                m.DeleteAclsFilterResult,
                error_code=error,
                error_message=message,
                matching_acls=tuple(
                    make(
                        m.DeleteAclsMatchingAcl,
                        error_code=ErrorCode.none,
                        error_message=None,
                        resource_type=b.resource_type,
                        resource_name=b.resource_name,
                        pattern_type=b.pattern_type,
                        principal=b.principal,
                        host=b.host,
                        operation=b.operation,
                        permission_type=b.permission,
                    )
                    for b in removed
                ),
            )
        )
    return make(m.DeleteAclsResponse, throttle_time=NO_THROTTLE, filter_results=tuple(results))


ROUTE = Route(API_KEY, 1, 3, handle)
