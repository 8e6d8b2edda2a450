"""What the three ACL APIs share: the protocol's numbers to the authorizer's types."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ..security import AclFilter, Operation, PatternType, Permission, ResourceType


def acl_filter(body: Any) -> AclFilter:
    """DescribeAcls' request or one DeleteAcls filter; raises ValueError for unknown numbers."""
    return AclFilter(
        resource_type=ResourceType(body.resource_type_filter),
        resource_name=body.resource_name_filter,
        pattern_type=PatternType(body.pattern_type_filter),
        principal=body.principal_filter,
        host=body.host_filter,
        operation=Operation(body.operation),
        permission=Permission(body.permission_type),
    )


def refusal(request: Any, operation: Operation) -> tuple[ErrorCode, str] | None:
    """Why this request may not touch ACLs (no authorizer, or no right on the cluster)."""
    session = request.session
    if session.authorizer is None:
        return ErrorCode.security_disabled, "no authorizer is configured on the broker"
    if not session.allows(operation, ResourceType.CLUSTER):
        return (
            ErrorCode.cluster_authorization_failed,
            f"{session.principal} may not {operation.name} the cluster",
        )
    return None
