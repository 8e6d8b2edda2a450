"""Authorized operations, the bit sets DescribeCluster and DescribeTopicPartitions
return: bit ``op`` is set for each operation the principal may perform on the
resource, among those Kafka defines for its type (``AclEntry.supportedOperations``)."""

from __future__ import annotations

from typing import Any

from ..security import Operation, ResourceType

OPERATIONS_OMITTED = -(2**31)
"""The schemas' default: no authorized operations were asked for."""

_SUPPORTED = {
    ResourceType.TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        Operation.CREATE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
        Operation.ALTER,
        Operation.DESCRIBE,
    ),
}


def authorized_operations(request: Any, resource_type: ResourceType, *name: str) -> int:
    allows = request.session.allows
    bits = 0
    for operation in _SUPPORTED[resource_type]:
        if allows(operation, resource_type, *name):
            bits |= 1 << operation
    return bits
