"""Who is on one connection, and what the broker lets them do.

The server asks ``admit`` before decoding any request: until a SASL listener's client
has authenticated, only ApiVersions, SaslHandshake and SaslAuthenticate get through,
so no other handler ever sees an unauthenticated request. Handlers ask ``allows`` once
per check; with ACLs off it is always True.

After SaslHandshake v0 the client sends its SASL tokens as bare size-prefixed frames
with no request header (Kafka before 1.0); ``expects_raw_token`` tells the server so.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from headrace.base import BrokerError
from headrace.base.acls import CLUSTER_NAME, Operation, ResourceType

from ._acl import Authorizer
from ._sasl import SaslError, SaslExchange, SaslState
from ._settings import Listener
from ._tls import ANONYMOUS

if TYPE_CHECKING:
    from headrace.base.scram_credentials import CredentialStore

# ApiVersions, SaslHandshake, SaslAuthenticate: all a client may send before it is known.
PRE_AUTHENTICATION_APIS = frozenset({18, 17, 36})
_SIZE = struct.Struct(">i")


class AuthenticationRequiredError(BrokerError):
    """A request other than the SASL exchange arrived before authentication."""


class SaslFailedError(BrokerError):
    """A bare (SaslHandshake v0) token failed; Kafka closes the connection then."""


class Session:
    def __init__(
        self,
        listener: Listener,
        peer_host: str,
        *,
        tls_principal: str = ANONYMOUS,
        authorizer: Authorizer | None = None,
        credentials: CredentialStore | None = None,
        sasl_mechanisms: tuple[str, ...] = (),
    ) -> None:
        self.listener = listener
        self.peer_host = peer_host
        self.principal = tls_principal
        self._authorizer = authorizer
        self.sasl: SaslExchange | None = None
        if listener.uses_sasl:
            assert credentials is not None
            self.sasl = SaslExchange(sasl_mechanisms, credentials)
        self.expects_raw_token = False

    @property
    def authenticated(self) -> bool:
        return self.sasl is None or self.sasl.state is SaslState.AUTHENTICATED

    def admit(self, api_key: int) -> None:
        if not self.authenticated and api_key not in PRE_AUTHENTICATION_APIS:
            raise AuthenticationRequiredError(
                f"api key {api_key} before SASL authentication on listener {self.listener.name}"
            )

    def completed_sasl(self) -> None:
        assert self.sasl is not None and self.sasl.username is not None
        self.principal = "User:" + self.sasl.username
        self.expects_raw_token = False

    def raw_token(self, frame: bytes) -> bytes:
        """Answer one bare SASL token (after SaslHandshake v0) with a bare frame."""
        assert self.sasl is not None
        try:
            reply = self.sasl.step(frame)
        except SaslError as exc:
            raise SaslFailedError(str(exc)) from None
        if self.sasl.state is SaslState.AUTHENTICATED:
            self.completed_sasl()
        return _SIZE.pack(len(reply)) + reply

    def allows(
        self, operation: Operation, resource_type: ResourceType, name: str = CLUSTER_NAME
    ) -> bool:
        if self._authorizer is None:
            return True
        return self._authorizer.authorize(
            self.principal, self.peer_host, operation, resource_type, name
        )

    def allows_any(self, operation: Operation, resource_type: ResourceType) -> bool:
        """At least one resource of the type (``Authorizer.authorize_any``)."""
        if self._authorizer is None:
            return True
        return self._authorizer.authorize_any(
            self.principal, self.peer_host, operation, resource_type
        )

    @property
    def authorizer(self) -> Authorizer | None:
        return self._authorizer


OPEN_LISTENER = Listener("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 0)


def open_session() -> Session:
    """A session with no security at all: what a handler sees when called directly."""
    return Session(OPEN_LISTENER, "")
