"""DescribeAcls (key 29): the bindings a filter selects, grouped by resource pattern;
needs DESCRIBE on the cluster."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._wire import Request, response_module
from ..security import Operation
from ._acls import acl_filter, refusal

API_KEY = 29


async def handle(_state: Any, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    refused = refusal(request, Operation.DESCRIBE)
    if refused is None:
        try:
            selected = acl_filter(request.body)
        except ValueError as exc:
            refused = ErrorCode.invalid_request, str(exc)
    if refused is not None:
        error, message = refused
        return make(
            m.DescribeAclsResponse,
            throttle_time=NO_THROTTLE,
            error_code=error,
            error_message=message,
            resources=(),
        )
    by_resource: dict[tuple[int, str, int], list[Any]] = {}
    for binding in request.session.authorizer.bindings(selected):
        key = (binding.resource_type, binding.resource_name, binding.pattern_type)
        by_resource.setdefault(key, []).append(
            make(
                m.AclDescription,
                principal=binding.principal,
                host=binding.host,
                operation=binding.operation,
                permission_type=binding.permission,
            )
        )
    resources = tuple(
        make(
            m.DescribeAclsResource,
            resource_type=rtype,
            resource_name=name,
            pattern_type=ptype,
            acls=tuple(acls),
        )
        for (rtype, name, ptype), acls in by_resource.items()
    )
    return make(
        m.DescribeAclsResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        resources=resources,
    )


ROUTE = Route(API_KEY, 1, 3, handle)
