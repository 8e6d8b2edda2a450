"""What the console shows of a cluster's security: SCRAM users (DescribeUserScramCredentials)
and ACLs (DescribeAcls), read-only, over the wire like every other page.

The requests are the client commands' (``headrace users``, ``headrace acls``): one admin
connection per page, with the console's own TLS and SASL settings. A cluster that
refuses them (no authorizer: SECURITY_DISABLED; or the console's principal may not
describe) is a page that says so, not an error page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from headrace.base import ClientSecurity
from headrace.base.acls import AclFilter

if TYPE_CHECKING:
    from headrace.client_tools.security._admin_client import SecurityAdminClient


@dataclass(frozen=True)
class Answer:
    """Rows of a page, or why the cluster would not give them."""

    rows: list[dict[str, Any]]
    refused: str | None = None


class SecurityReader:
    def __init__(self, bootstrap_servers: str, security: ClientSecurity) -> None:
        self._servers, self._security = bootstrap_servers, security

    def _client(self) -> SecurityAdminClient:
        # The client commands' admin client: the same requests, not written twice;
        # imported on the first page that needs it, not when the command starts.
        from headrace.client_tools.security._admin_client import SecurityAdminClient

        return SecurityAdminClient(
            self._servers, security=self._security, client_id="headrace-console"
        )

    async def users(self) -> Answer:
        """One row per user and SCRAM mechanism, sorted by user."""
        from headrace.client_tools.security._admin_client import AdminRequestError

        try:
            async with self._client() as client:
                described = await client.describe_scram()
        except AdminRequestError as refused:
            return Answer([], str(refused))
        return Answer(
            [
                {"user": user, "mechanism": mechanism, "iterations": iterations}
                for user in sorted(described)
                for mechanism, iterations in sorted(described[user])
            ]
        )

    async def acls(self) -> Answer:
        """Every ACL binding, sorted by resource, then principal."""
        from headrace.client_tools.security._admin_client import AdminRequestError

        try:
            async with self._client() as client:
                bindings = await client.describe_acls(AclFilter())
        except AdminRequestError as refused:
            return Answer([], str(refused))
        rows = [
            {
                "resource_type": b.resource_type.name,
                "resource_name": b.resource_name,
                "pattern_type": b.pattern_type.name,
                "principal": b.principal,
                "host": b.host,
                "operation": b.operation.name,
                "permission": b.permission.name,
            }
            for b in bindings
        ]
        return Answer(
            sorted(rows, key=lambda r: (r["resource_type"], r["resource_name"], r["principal"]))
        )
