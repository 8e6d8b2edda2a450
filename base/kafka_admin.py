"""Connections to a cluster's brokers for the requests aiokafka does not make (groups'
offsets as a non-member, log directories, ...), with the client's TLS and SASL.

Requests are kio entities over ``KioConnection``, one connection per broker address,
opened on first use; ``_any`` tries the bootstrap brokers in turn. Subclasses add the
requests; this works against any Kafka-protocol broker, not only the built-in one.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Self

from ._client_security import PLAINTEXT, ClientSecurity
from ._kio_connection import KioConnection as KioConnection
from ._sasl_client import ClientAuthenticationError as ClientAuthenticationError
from ._sasl_client import authenticate as authenticate


class KioAdmin:
    def __init__(
        self,
        bootstrap_servers: str,
        *,
        timeout: float = 15.0,
        security: ClientSecurity = PLAINTEXT,
        client_id: str = "headrace-admin",
    ) -> None:
        self._bootstrap = [_address(a) for a in bootstrap_servers.split(",") if a.strip()]
        self.security = security
        self._timeout = timeout
        self._client_id = client_id
        self._connections: dict[tuple[str, int], KioConnection] = {}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    async def _connect(self, address: tuple[str, int]) -> KioConnection:
        connection = self._connections.get(address)
        if connection is None:
            # asyncio.timeout, not wait_for: wait_for can cancel after the connection has
            # opened and drop its transport unclosed; here nothing awaits after it opens.
            async with asyncio.timeout(self._timeout):
                reader, writer = await asyncio.open_connection(
                    *address, ssl=self.security.ssl_context()
                )
            connection = KioConnection(reader, writer, self._timeout, self._client_id)
            if self.security.uses_sasl:
                try:
                    await authenticate(connection.request, self.security)
                except BaseException:
                    connection.close()
                    raise
            self._connections[address] = connection
        return connection

    async def _any(self, body: Any) -> Any:
        last: OSError | None = None
        for address in self._bootstrap:
            try:
                return await (await self._connect(address)).request(body)
            except OSError as exc:
                last = exc
        raise ConnectionError(
            f"cannot reach a broker at {','.join(f'{h}:{p}' for h, p in self._bootstrap)}"
            " (is one running?)"
        ) from last


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.strip().rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"bootstrap server must be HOST:PORT, got {text!r}")
    return host, int(port)
