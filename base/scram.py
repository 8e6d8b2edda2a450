"""SCRAM (RFC 5802, SHA-256 and SHA-512 as in RFC 7677), the server's side. No I/O.

What a broker keeps per user and mechanism is a ``ScramCredential``: salt, iteration
count, StoredKey and ServerKey. The password itself is never kept; StoredKey lets the
server check a client's proof and ServerKey lets it prove itself back.

The exchange, two round trips:
1. client-first ``n,,n=USER,r=CNONCE``; the server answers server-first
   ``r=CNONCE+SNONCE,s=SALT,i=ITERATIONS`` (unknown users get a made-up salt, so the
   answer does not tell whether the user exists);
2. client-final ``c=biws,r=NONCE,p=PROOF``; the server recovers ClientKey as
   ``PROOF xor HMAC(StoredKey, AuthMessage)``, checks ``H(ClientKey) == StoredKey`` and
   answers server-final ``v=SIGNATURE``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

MIN_ITERATIONS = 4096
DEFAULT_ITERATIONS = 8192
# Salts answered for user names that have no credential: derived from the name under a
# key of this process, so asking twice gives the same salt, as for a real user, and the
# answer does not tell whether the user exists.
_UNKNOWN_USER_SALT_KEY = secrets.token_bytes(32)


def unknown_user_salt(username: str) -> bytes:
    return hmac.new(_UNKNOWN_USER_SALT_KEY, username.encode(), hashlib.sha256).digest()


class ScramMechanism(Enum):
    # value: (Kafka's name, hashlib name, the mechanism's number in the Kafka protocol)
    SCRAM_SHA_256 = ("SCRAM-SHA-256", "sha256", 1)
    SCRAM_SHA_512 = ("SCRAM-SHA-512", "sha512", 2)

    @property
    def kafka_name(self) -> str:
        return self.value[0]

    @property
    def hash_name(self) -> str:
        return self.value[1]

    @property
    def protocol_id(self) -> int:
        return self.value[2]

    @classmethod
    def named(cls, name: str) -> ScramMechanism:
        for mechanism in cls:
            if mechanism.kafka_name == name.upper():
                return mechanism
        raise ValueError(f"unknown SCRAM mechanism {name!r} (SCRAM-SHA-256 or SCRAM-SHA-512)")

    @classmethod
    def by_protocol_id(cls, number: int) -> ScramMechanism:
        for mechanism in cls:
            if mechanism.protocol_id == number:
                return mechanism
        raise ValueError(f"unknown SCRAM mechanism number {number}")


class ScramError(Exception):
    """The client's message is malformed or its proof is wrong."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_salted_password(
        cls, mechanism: ScramMechanism, salted: bytes, salt: bytes, iterations: int
    ) -> ScramCredential:
        client_key = _hmac(mechanism, salted, b"Client Key")
        return cls(
            salt=salt,
            iterations=iterations,
            stored_key=hashlib.new(mechanism.hash_name, client_key).digest(),
            server_key=_hmac(mechanism, salted, b"Server Key"),
        )

    def matches_password(self, mechanism: ScramMechanism, password: str) -> bool:
        """True when ``password`` derives this credential (PLAIN checks with this)."""
        salted = salted_password(mechanism, password, self.salt, self.iterations)
        candidate = ScramCredential.from_salted_password(
            mechanism, salted, self.salt, self.iterations
        )
        return hmac.compare_digest(candidate.stored_key, self.stored_key)


def salted_password(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> bytes:
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def new_credential(
    mechanism: ScramMechanism, password: str, iterations: int = DEFAULT_ITERATIONS
) -> ScramCredential:
    if iterations < MIN_ITERATIONS:
        raise ValueError(f"iterations must be at least {MIN_ITERATIONS}")
    salt = secrets.token_bytes(32)
    salted = salted_password(mechanism, password, salt, iterations)
    return ScramCredential.from_salted_password(mechanism, salted, salt, iterations)


def _hmac(mechanism: ScramMechanism, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, mechanism.hash_name).digest()


def _attributes(message: str) -> dict[str, str]:
    attributes = {}
    for part in message.split(","):
        name, sep, value = part.partition("=")
        if not sep or len(name) != 1:
            raise ScramError(f"malformed SCRAM attribute {part[:20]!r}")
        attributes[name] = value
    return attributes


def _decode_username(value: str) -> str:
    # RFC 5802: "," and "=" in names travel as "=2C" and "=3D".
    return value.replace("=2C", ",").replace("=3D", "=")


class ScramServerExchange:
    """One client's SCRAM exchange: ``first`` then ``final``, each once, in order.

    ``lookup`` maps a user name to its credential, or None when there is none.
    """

    def __init__(
        self, mechanism: ScramMechanism, lookup: Callable[[str], ScramCredential | None]
    ) -> None:
        self._mechanism = mechanism
        self._lookup = lookup
        self._credential: ScramCredential | None = None
        self._auth_prefix = ""
        self._nonce = ""
        self.username: str | None = None

    def first(self, client_first: bytes) -> bytes:
        text = client_first.decode("utf-8", errors="strict")
        gs2_header, sep, bare = _split_gs2(text)
        if not sep or gs2_header not in ("n,", "y,"):
            raise ScramError("client-first must start with 'n,,' (no channel binding)")
        attributes = _attributes(bare)
        if "m" in attributes or "n" not in attributes or "r" not in attributes:
            raise ScramError("client-first needs n= and r=")
        self.username = _decode_username(attributes["n"])
        self._credential = self._lookup(self.username)
        salt, iterations = (
            (self._credential.salt, self._credential.iterations)
            if self._credential is not None
            else (unknown_user_salt(self.username), DEFAULT_ITERATIONS)
        )
        self._nonce = attributes["r"] + secrets.token_urlsafe(24)
        server_first = f"r={self._nonce},s={base64.b64encode(salt).decode()},i={iterations}"
        self._auth_prefix = f"{bare},{server_first}"
        return server_first.encode()

    def final(self, client_final: bytes) -> bytes:
        text = client_final.decode("utf-8", errors="strict")
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise ScramError("client-final has no proof")
        attributes = _attributes(without_proof)
        # Kafka accepts a final nonce that ends with the combined one (endsWith, not
        # equals): librdkafka before 2.1 sends its own nonce in front of it again.
        if not attributes.get("r", "").endswith(self._nonce):
            raise ScramError("client-final nonce does not match")
        if attributes.get("c") not in ("biws", "eSws"):  # base64 of "n,," and "y,,"
            raise ScramError("channel binding is not supported")
        credential = self._credential
        if credential is None:
            raise ScramError("authentication failed")
        auth_message = f"{self._auth_prefix},{without_proof}".encode()
        try:
            proof = base64.b64decode(proof_b64, validate=True)
        except ValueError as exc:
            raise ScramError("proof is not base64") from exc
        signature = _hmac(self._mechanism, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("authentication failed")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        stored = hashlib.new(self._mechanism.hash_name, client_key).digest()
        if not hmac.compare_digest(stored, credential.stored_key):
            raise ScramError("authentication failed")
        server_signature = _hmac(self._mechanism, credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)


def _split_gs2(text: str) -> tuple[str, str, str]:
    # gs2-header is "n," [authzid] "," ; the bare message follows the second comma.
    first = text.find(",")
    second = text.find(",", first + 1) if first >= 0 else -1
    if second < 0:
        return text, "", ""
    return text[: first + 1], ",", text[second + 1 :]


class ScramClientExchange:
    """The client's side, for the broker's own admin commands: ``first``, then ``final``
    with the server-first message, then ``verify`` the server's signature."""

    def __init__(self, mechanism: ScramMechanism, username: str, password: str) -> None:
        self._mechanism = mechanism
        self._username = username.replace("=", "=3D").replace(",", "=2C")
        self._password = password
        self._nonce = secrets.token_urlsafe(24)
        self._bare = f"n={self._username},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attributes = _attributes(text)
        if not attributes.get("r", "").startswith(self._nonce):
            raise ScramError("server nonce does not extend ours")
        salt, iterations = base64.b64decode(attributes["s"]), int(attributes["i"])
        salted = salted_password(self._mechanism, self._password, salt, iterations)
        without_proof = f"c=biws,r={attributes['r']}"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        client_key = _hmac(self._mechanism, salted, b"Client Key")
        stored = hashlib.new(self._mechanism.hash_name, client_key).digest()
        signature = _hmac(self._mechanism, stored, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = _hmac(self._mechanism, salted, b"Server Key")
        self._server_signature = _hmac(self._mechanism, server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        expected = b"v=" + base64.b64encode(self._server_signature)
        if not hmac.compare_digest(server_final, expected):
            raise ScramError("the server's signature is wrong")
