"""ACLs as Kafka's protocol carries them: bindings, filters, and the numbers they use.

A binding allows or denies one principal (``User:alice``, or ``User:*``) from one host
(or ``*``) one operation on resources named literally (``orders``; ``*`` is every name)
or by prefix (``orders-``). A filter selects bindings, as DescribeAcls and DeleteAcls do.
The numbers are the protocol's (CreateAcls and friends carry them as int8). The broker
decides with these (``log_broker.security``'s Authorizer) and ``headrace acls`` sends
them, so they live here, below both.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

WILDCARD = "*"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


CLUSTER_NAME = "kafka-cluster"


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def validate(self) -> None:
        """Raise ValueError for a binding Kafka would refuse to create."""
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise ValueError("resource type must be concrete")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise ValueError("pattern type must be LITERAL or PREFIXED")
        if self.operation in (Operation.ANY, Operation.UNKNOWN):
            raise ValueError("operation must be concrete")
        if self.permission not in (Permission.ALLOW, Permission.DENY):
            raise ValueError("permission must be ALLOW or DENY")
        if not self.resource_name:
            raise ValueError("resource name cannot be empty")
        if ":" not in self.principal:
            raise ValueError(f"principal {self.principal!r} must be TYPE:NAME")
        if self.resource_type is ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise ValueError(f"the cluster resource is named {CLUSTER_NAME!r}")

    def covers(self, resource_type: ResourceType, name: str) -> bool:
        if self.resource_type is not resource_type:
            return False
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)


@dataclass(frozen=True, slots=True)
class AclFilter:
    """What DescribeAcls and DeleteAcls select; None and ANY match everything."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: Permission = Permission.ANY

    def matches(self, acl: AclBinding) -> bool:
        if (
            self.resource_type is not ResourceType.ANY
            and acl.resource_type is not self.resource_type
        ):
            return False
        if not self._matches_pattern(acl):
            return False
        if self.principal is not None and acl.principal != self.principal:
            return False
        if self.host is not None and acl.host != self.host:
            return False
        if self.operation is not Operation.ANY and acl.operation is not self.operation:
            return False
        return self.permission is Permission.ANY or acl.permission is self.permission

    def _matches_pattern(self, acl: AclBinding) -> bool:
        if self.pattern_type is PatternType.MATCH:
            # Every binding that would apply to a resource of this exact name.
            return self.resource_name is None or acl.covers(acl.resource_type, self.resource_name)
        if self.pattern_type is not PatternType.ANY and acl.pattern_type is not self.pattern_type:
            return False
        return self.resource_name is None or acl.resource_name == self.resource_name
