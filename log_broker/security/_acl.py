"""The broker's ACLs and the decision for one request (the bindings are ``headrace.base.acls``).

A binding allows or denies one principal (``User:alice``, or ``User:*``) from one host
(or ``*``) one operation on resources named literally (``orders``; ``*`` is every name)
or by prefix (``orders-``). Deciding, as Kafka's StandardAuthorizer does:
1. a super user may do anything;
2. a matching DENY for the operation (or ALL) refuses, whatever else allows;
3. a matching ALLOW for the operation (or ALL) permits; DESCRIBE is also allowed by
   READ, WRITE, DELETE or ALTER, and DESCRIBE_CONFIGS by ALTER_CONFIGS;
4. otherwise refused, unless no binding names the resource at all and
   ``allow.everyone.if.no.acl.found`` is on.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from enum import IntEnum
from pathlib import Path

from headrace.base import write_atomically
from headrace.base.acls import (
    WILDCARD,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

FILE = Path("security") / "acls.json"

# Operations that, allowed, also allow another (Kafka's "implied" operations).
_IMPLIED_BY = {
    Operation.DESCRIBE: {Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER},
    Operation.DESCRIBE_CONFIGS: {Operation.ALTER_CONFIGS},
}


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
