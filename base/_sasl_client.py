"""The client's side of the SASL exchange, for headrace's own kio clients.

``authenticate(request, security)`` runs SaslHandshake v1 and SaslAuthenticate v1 (no
tagged fields, so any of our small kio clients can send them) over a connection whose
``request`` sends one kio entity and returns the decoded response.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from ._client_security import ClientSecurity
from .scram import ScramClientExchange, ScramMechanism


class ClientAuthenticationError(ConnectionError):
    """The broker refused the mechanism or the credentials (never names the password)."""


def _check(what: str, code: Any, message: str | None = None) -> None:
    if code != ErrorCode.none:
        raise ClientAuthenticationError(
            f"{what}: {ErrorCode(code).name.upper()}" + (f" ({message})" if message else "")
        )


async def authenticate(request: Callable[[Any], Awaitable[Any]], security: ClientSecurity) -> None:
    mechanism = str(security.sasl_mechanism).upper()
    shake = await request(SaslHandshakeRequest(mechanism=mechanism))
    _check(f"SASL mechanism {mechanism}", shake.error_code)
    user, password = str(security.sasl_username), str(security.sasl_password)
    if mechanism == "PLAIN":
        reply = await request(SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()))
        _check("SASL authentication", reply.error_code, reply.error_message)
        return
    scram = ScramClientExchange(ScramMechanism.named(mechanism), user, password)
    first = await request(SaslAuthenticateRequest(auth_bytes=scram.first()))
    _check("SASL authentication", first.error_code, first.error_message)
    final = await request(SaslAuthenticateRequest(auth_bytes=scram.final(first.auth_bytes)))
    _check("SASL authentication", final.error_code, final.error_message)
    scram.verify(final.auth_bytes)
