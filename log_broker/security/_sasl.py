"""One connection's SASL exchange: PLAIN or SCRAM, checked against the credential store.

States, in order: AWAITING_HANDSHAKE -> HANDSHAKEN -> AUTHENTICATED, or FAILED from
either of the first two. Only a successful exchange yields a principal; a failed one
is final for the connection (the client must reconnect to try again, as with Kafka).
No I/O here: tokens in, tokens out.
"""

from __future__ import annotations

from enum import Enum

from headrace.base.scram import ScramError, ScramMechanism, ScramServerExchange
from headrace.base.scram_credentials import CredentialStore

PLAIN = "PLAIN"
MECHANISMS = (PLAIN, *(m.kafka_name for m in ScramMechanism))


class SaslState(Enum):
    AWAITING_HANDSHAKE = "awaiting-handshake"
    HANDSHAKEN = "handshaken"
    AUTHENTICATED = "authenticated"
    FAILED = "failed"


class SaslError(Exception):
    """The exchange failed; the message is safe to send to the client."""


class SaslExchange:
    def __init__(self, enabled: tuple[str, ...], credentials: CredentialStore) -> None:
        self.enabled = enabled
        self._credentials = credentials
        self.state = SaslState.AWAITING_HANDSHAKE
        self._mechanism: str | None = None
        self._scram: ScramServerExchange | None = None
        self._scram_step = 0
        self.username: str | None = None

    def handshake(self, mechanism: str) -> bool:
        """Choose the mechanism; False when it is not enabled (the client may retry)."""
        if self.state is not SaslState.AWAITING_HANDSHAKE:
            raise SaslError("SaslHandshake after the handshake")
        if mechanism not in self.enabled:
            return False
        self._mechanism = mechanism
        if mechanism != PLAIN:
            scram = ScramMechanism.named(mechanism)
            self._scram = ScramServerExchange(
                scram, lambda user: self._credentials.lookup(user, scram)
            )
        self.state = SaslState.HANDSHAKEN
        return True

    def step(self, token: bytes) -> bytes:
        """Consume one client token, return the server's; raises SaslError on failure."""
        if self.state is not SaslState.HANDSHAKEN:
            raise SaslError("SaslAuthenticate before a successful SaslHandshake")
        try:
            if self._scram is None:
                reply = self._plain(token)
            else:
                reply = self._scram_token(self._scram, token)
        except (SaslError, ScramError, UnicodeDecodeError) as exc:
            self.state = SaslState.FAILED
            raise SaslError(
                f"Authentication failed during authentication due to invalid"
                f" credentials with SASL mechanism {self._mechanism}"
            ) from exc
        return reply

    def _plain(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise SaslError("PLAIN token must be authzid NUL user NUL password")
        authzid, user, password = (p.decode("utf-8") for p in parts)
        if authzid and authzid != user:
            raise SaslError("PLAIN authorization id must equal the user")
        if not self._credentials.check_password(user, password):
            raise SaslError("wrong user or password")
        self.username = user
        self.state = SaslState.AUTHENTICATED
        return b""

    def _scram_token(self, scram: ScramServerExchange, token: bytes) -> bytes:
        self._scram_step += 1
        if self._scram_step == 1:
            return scram.first(token)
        if self._scram_step == 2:
            reply = scram.final(token)
            self.username = scram.username
            self.state = SaslState.AUTHENTICATED
            return reply
        raise SaslError("SCRAM exchange already complete")
