"""Just enough of a Kafka client for ``headrace users`` and ``headrace acls`` online.

A ``KioAdmin``: a connection to the first reachable bootstrap server, TLS and SASL
(PLAIN or SCRAM) as ``--command-config`` says, kio entities written one at a time. ACL and SCRAM
requests go to any broker, so no coordinator lookup is needed.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kio.schema.alter_user_scram_credentials.v0 import request as alter_scram
from kio.schema.create_acls.v3 import request as create_acls
from kio.schema.delete_acls.v3 import request as delete_acls
from kio.schema.describe_acls.v3.request import DescribeAclsRequest
from kio.schema.describe_user_scram_credentials.v0.request import (
    DescribeUserScramCredentialsRequest,
)
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32

from headrace.base import ClientSecurity, read_properties
from headrace.base.acls import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from headrace.base.kafka_admin import KioAdmin
from headrace.base.scram import ScramMechanism

T = TypeVar("T")


class AdminRequestError(RuntimeError):
    pass


def _check(what: str, code: Any, message: str | None = None) -> None:
    if code != ErrorCode.none:
        raise AdminRequestError(
            f"{what}: {ErrorCode(code).name.upper()}" + (f" ({message})" if message else "")
        )


class SecurityAdminClient(KioAdmin):
    async def request(self, body: Any) -> Any:
        return await self._any(body)

    @classmethod
    async def run(
        cls, args: argparse.Namespace, action: Callable[[SecurityAdminClient], Awaitable[T]]
    ) -> T:
        security = (
            ClientSecurity.from_properties(read_properties(args.command_config))
            if getattr(args, "command_config", None)
            else ClientSecurity()
        )
        async with cls(args.bootstrap_servers, security=security) as client:
            return await action(client)

    async def describe_scram(self) -> dict[str, list[tuple[str, int]]]:
        response = await self.request(DescribeUserScramCredentialsRequest(users=None))
        _check("describing users", response.error_code, response.error_message)
        users = {}
        for result in response.results:
            _check(f"describing {result.user}", result.error_code, result.error_message)
            users[result.user] = [
                (ScramMechanism.by_protocol_id(info.mechanism).kafka_name, info.iterations)
                for info in result.credential_infos
            ]
        return users

    async def alter_scram(
        self,
        user: str,
        upserts: list[tuple[ScramMechanism, int, bytes, bytes]],
        deletions: list[ScramMechanism],
    ) -> None:
        response = await self.request(
            alter_scram.AlterUserScramCredentialsRequest(
                deletions=tuple(
                    alter_scram.ScramCredentialDeletion(name=user, mechanism=i8(m.protocol_id))
                    for m in deletions
                ),
                upsertions=tuple(
                    alter_scram.ScramCredentialUpsertion(
                        name=user,
                        mechanism=i8(m.protocol_id),
                        iterations=i32(iterations),
                        salt=salt,
                        salted_password=salted,
                    )
                    for m, iterations, salt, salted in upserts
                ),
            )
        )
        for result in response.results:
            _check(f"user {result.user}", result.error_code, result.error_message)

    async def create_acls(self, bindings: list[AclBinding]) -> None:
        response = await self.request(
            create_acls.CreateAclsRequest(
                creations=tuple(
                    create_acls.AclCreation(
                        resource_type=i8(b.resource_type),
                        resource_name=b.resource_name,
                        resource_pattern_type=i8(b.pattern_type),
                        principal=b.principal,
                        host=b.host,
                        operation=i8(b.operation),
                        permission_type=i8(b.permission),
                    )
                    for b in bindings
                )
            )
        )
        for result in response.results:
            _check("creating an ACL", result.error_code, result.error_message)

    async def describe_acls(self, selected: AclFilter) -> list[AclBinding]:
        response = await self.request(DescribeAclsRequest(**_filter_fields(selected)))
        _check("describing ACLs", response.error_code, response.error_message)
        return [
            AclBinding(
                ResourceType(r.resource_type),
                r.resource_name,
                PatternType(r.pattern_type),
                a.principal,
                a.host,
                Operation(a.operation),
                Permission(a.permission_type),
            )
            for r in response.resources
            for a in r.acls
        ]

    async def delete_acls(self, selected: AclFilter) -> int:
        response = await self.request(
            delete_acls.DeleteAclsRequest(
                filters=(delete_acls.DeleteAclsFilter(**_filter_fields(selected)),)
            )
        )
        removed = 0
        for result in response.filter_results:
            _check("deleting ACLs", result.error_code, result.error_message)
            removed += len(result.matching_acls)
        return removed


def _filter_fields(selected: AclFilter) -> dict[str, Any]:
    return {
        "resource_type_filter": selected.resource_type,
        "resource_name_filter": selected.resource_name,
        "pattern_type_filter": selected.pattern_type,
        "principal_filter": selected.principal,
        "host_filter": selected.host,
        "operation": selected.operation,
        "permission_type": selected.permission,
    }
