"""Just enough of a Kafka client for ``headrace users`` and ``headrace acls`` online.

One connection to the first reachable bootstrap server, TLS and SASL (PLAIN or SCRAM)
as ``--command-config`` says, kio entities written one at a time. ACL and SCRAM
requests go to any broker, so no coordinator lookup is needed.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import struct
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kio.index import load_response_schema
from kio.schema.alter_user_scram_credentials.v0 import request as alter_scram
from kio.schema.create_acls.v3 import request as create_acls
from kio.schema.delete_acls.v3 import request as delete_acls
from kio.schema.describe_acls.v3.request import DescribeAclsRequest
from kio.schema.describe_user_scram_credentials.v0.request import (
    DescribeUserScramCredentialsRequest,
)
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer

from headrace.base import ClientSecurity, read_properties

from .._entities import make
from ._acl import AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType
from ._client_auth import authenticate
from ._scram import ScramMechanism

_SIZE = struct.Struct(">i")
T = TypeVar("T")


class AdminRequestError(RuntimeError):
    pass


def _check(what: str, code: Any, message: str | None = None) -> None:
    if code != ErrorCode.none:
        raise AdminRequestError(f"{what}: {ErrorCode(code).name.upper()}"
                                + (f" ({message})" if message else ""))


class SecurityAdminClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 timeout_s: float) -> None:
        self._reader, self._writer = reader, writer
        self._timeout_s = timeout_s
        self._correlation = 0

    @classmethod
    async def connect(cls, bootstrap_servers: str, security: ClientSecurity,
                      timeout_s: float = 15.0) -> SecurityAdminClient:
        last: OSError | None = None
        for address in filter(None, (a.strip() for a in bootstrap_servers.split(","))):
            host, _, port = address.rpartition(":")
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(
                    host, int(port), ssl=security.ssl_context()), timeout_s)
            except OSError as exc:
                last = exc
                continue
            client = cls(reader, writer, timeout_s)
            try:
                if security.uses_sasl:
                    await authenticate(client.request, security)
            except BaseException:
                client.close()
                raise
            return client
        raise ConnectionError(
            f"cannot reach a broker at {bootstrap_servers} (is one running?)") from last

    @classmethod
    async def run(cls, args: argparse.Namespace,
                  action: Callable[[SecurityAdminClient], Awaitable[T]]) -> T:
        security = (ClientSecurity.from_properties(read_properties(args.command_config))
                    if getattr(args, "command_config", None) else ClientSecurity())
        client = await cls.connect(args.bootstrap_servers, security)
        try:
            return await action(client)
        finally:
            client.close()

    def close(self) -> None:
        self._writer.close()

    async def request(self, body: Any) -> Any:
        flexible = body.__flexible__
        header_cls = RequestHeaderV2 if flexible else RequestHeaderV1
        async with asyncio.timeout(self._timeout_s):
            self._correlation += 1
            buf = io.BytesIO()
            buf.write(b"\0\0\0\0")
            entity_writer(header_cls)(buf, make(
                header_cls, request_api_key=body.__api_key__,
                request_api_version=body.__version__, correlation_id=self._correlation,
                client_id="headrace-admin"))
            entity_writer(type(body))(buf, body)
            frame = buf.getbuffer()
            _SIZE.pack_into(frame, 0, len(frame) - 4)
            del frame
            self._writer.write(buf.getvalue())
            await self._writer.drain()
            size = _SIZE.unpack(await self._reader.readexactly(4))[0]
            data = await self._reader.readexactly(size)
        response_header = ResponseHeaderV1 if flexible else ResponseHeaderV0
        header, used = entity_reader(response_header)(data, 0)
        if header.correlation_id != self._correlation:
            raise ConnectionError("response out of order")
        schema = load_response_schema(body.__api_key__, body.__version__)
        return entity_reader(schema)(data, used)[0]

    async def describe_scram(self) -> dict[str, list[tuple[str, int]]]:
        response = await self.request(DescribeUserScramCredentialsRequest(users=None))
        _check("describing users", response.error_code, response.error_message)
        users = {}
        for result in response.results:
            _check(f"describing {result.user}", result.error_code, result.error_message)
            users[result.user] = [
                (ScramMechanism.by_protocol_id(info.mechanism).kafka_name, info.iterations)
                for info in result.credential_infos]
        return users

    async def alter_scram(self, user: str,
                          upserts: list[tuple[ScramMechanism, int, bytes, bytes]],
                          deletions: list[ScramMechanism]) -> None:
        response = await self.request(alter_scram.AlterUserScramCredentialsRequest(
            deletions=tuple(alter_scram.ScramCredentialDeletion(
                name=user, mechanism=m.protocol_id) for m in deletions),
            upsertions=tuple(alter_scram.ScramCredentialUpsertion(
                name=user, mechanism=m.protocol_id, iterations=iterations, salt=salt,
                salted_password=salted) for m, iterations, salt, salted in upserts)))
        for result in response.results:
            _check(f"user {result.user}", result.error_code, result.error_message)

    async def create_acls(self, bindings: list[AclBinding]) -> None:
        response = await self.request(create_acls.CreateAclsRequest(creations=tuple(
            create_acls.AclCreation(
                resource_type=b.resource_type, resource_name=b.resource_name,
                resource_pattern_type=b.pattern_type, principal=b.principal, host=b.host,
                operation=b.operation, permission_type=b.permission)
            for b in bindings)))
        for result in response.results:
            _check("creating an ACL", result.error_code, result.error_message)

    async def describe_acls(self, selected: AclFilter) -> list[AclBinding]:
        response = await self.request(DescribeAclsRequest(**_filter_fields(selected)))
        _check("describing ACLs", response.error_code, response.error_message)
        return [AclBinding(ResourceType(r.resource_type), r.resource_name,
                           PatternType(r.pattern_type), a.principal, a.host,
                           Operation(a.operation), Permission(a.permission_type))
                for r in response.resources for a in r.acls]

    async def delete_acls(self, selected: AclFilter) -> int:
        response = await self.request(delete_acls.DeleteAclsRequest(filters=(
            delete_acls.DeleteAclsFilter(**_filter_fields(selected)),)))
        removed = 0
        for result in response.filter_results:
            _check("deleting ACLs", result.error_code, result.error_message)
            removed += len(result.matching_acls)
        return removed


def _filter_fields(selected: AclFilter) -> dict[str, Any]:
    return {"resource_type_filter": selected.resource_type,
            "resource_name_filter": selected.resource_name,
            "pattern_type_filter": selected.pattern_type,
            "principal_filter": selected.principal, "host_filter": selected.host,
            "operation": selected.operation, "permission_type": selected.permission}
