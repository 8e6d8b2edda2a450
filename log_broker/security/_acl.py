"""ACLs, Kafka's model and rules: bindings, filters, and the decision for one request.

A binding allows or denies one principal (``User:alice``, or ``User:*``) from one host
(or ``*``) one operation on resources named literally (``orders``; ``*`` is every name)
or by prefix (``orders-``). Deciding, as Kafka's StandardAuthorizer does:
1. a super user may do anything;
2. a matching DENY for the operation (or ALL) refuses, whatever else allows;
3. a matching ALLOW for the operation (or ALL) permits; DESCRIBE is also allowed by
   READ, WRITE, DELETE or ALTER, and DESCRIBE_CONFIGS by ALTER_CONFIGS;
4. otherwise refused, unless no binding names the resource at all and
   ``allow.everyone.if.no.acl.found`` is on.
The numbers are the protocol's (CreateAcls and friends carry them as int8).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import IntEnum
from pathlib import Path

from headrace.base import write_atomically

FILE = Path("security") / "acls.json"
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

# Operations that, allowed, also allow another (Kafka's "implied" operations).
_IMPLIED_BY = {
    Operation.DESCRIBE: {Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER},
    Operation.DESCRIBE_CONFIGS: {Operation.ALTER_CONFIGS},
}


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


class Authorizer:
    """The broker's ACLs and the decision over them; persisted in the data dir."""

    def __init__(
        self,
        path: Path | None,
        *,
        super_users: frozenset[str] = frozenset(),
        allow_if_no_acl: bool = False,
        bindings: list[AclBinding] | None = None,
    ) -> None:
        self._path = path
        self._super_users = super_users
        self._allow_if_no_acl = allow_if_no_acl
        self._bindings: list[AclBinding] = bindings or []

    @classmethod
    def open(
        cls,
        data_dir: Path,
        *,
        super_users: frozenset[str] = frozenset(),
        allow_if_no_acl: bool = False,
    ) -> Authorizer:
        path = data_dir / FILE
        bindings = []
        if path.exists():
            for raw in json.loads(path.read_text()):
                bindings.append(
                    AclBinding(
                        ResourceType[raw["resource_type"]],
                        raw["resource_name"],
                        PatternType[raw["pattern_type"]],
                        raw["principal"],
                        raw["host"],
                        Operation[raw["operation"]],
                        Permission[raw["permission"]],
                    )
                )
        return cls(
            path, super_users=super_users, allow_if_no_acl=allow_if_no_acl, bindings=bindings
        )

    def authorize(
        self,
        principal: str,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if principal in self._super_users:
            return True
        applicable = [b for b in self._bindings if b.covers(resource_type, name)]
        if not applicable:
            return self._allow_if_no_acl
        mine = [
            b
            for b in applicable
            if b.principal in (principal, "User:*") and b.host in (host, WILDCARD)
        ]
        if any(
            b.permission is Permission.DENY and b.operation in (operation, Operation.ALL)
            for b in mine
        ):
            return False
        allowing = {operation, Operation.ALL, *_IMPLIED_BY.get(operation, ())}
        return any(b.permission is Permission.ALLOW and b.operation in allowing for b in mine)

    def authorize_any(
        self, principal: str, host: str, operation: Operation, resource_type: ResourceType
    ) -> bool:
        """May the principal do ``operation`` on at least one resource of this type?

        Kafka's ``authorizeByResourceType``: some ALLOW binding for it that no DENY
        binding of the principal covers (an idempotent producer needs WRITE on some
        topic, or IDEMPOTENT_WRITE on the cluster).
        """
        if principal in self._super_users:
            return True
        of_type = [b for b in self._bindings if b.resource_type is resource_type]
        if not of_type:
            return self._allow_if_no_acl
        mine = [
            b
            for b in of_type
            if b.principal in (principal, "User:*") and b.host in (host, WILDCARD)
        ]
        denies = [
            b
            for b in mine
            if b.permission is Permission.DENY and b.operation in (operation, Operation.ALL)
        ]
        allowing = {operation, Operation.ALL, *_IMPLIED_BY.get(operation, ())}
        return any(
            b.permission is Permission.ALLOW
            and b.operation in allowing
            and not any(d.covers(resource_type, b.resource_name) for d in denies)
            for b in mine
        )

    def bindings(self, selected: AclFilter | None = None) -> list[AclBinding]:
        return [b for b in self._bindings if selected is None or selected.matches(b)]

    def add(self, bindings: list[AclBinding]) -> None:
        for binding in bindings:
            binding.validate()
        fresh = [b for b in bindings if b not in self._bindings]
        if fresh:
            self._bindings.extend(fresh)
            self._save()

    def remove(self, selected: AclFilter) -> list[AclBinding]:
        removed = [b for b in self._bindings if selected.matches(b)]
        if removed:
            self._bindings = [b for b in self._bindings if not selected.matches(b)]
            self._save()
        return removed

    def _save(self) -> None:
        if self._path is None:
            return
        raw = [
            {k: (v.name if isinstance(v, IntEnum) else v) for k, v in asdict(b).items()}
            for b in self._bindings
        ]
        self._path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the data dir
        write_atomically(self._path, json.dumps(raw, indent=1).encode())
