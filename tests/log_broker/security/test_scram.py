"""SCRAM exchanges both ways, the credential file, and PLAIN against the same store."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from headrace.base.scram import (
    ScramClientExchange,
    ScramError,
    ScramServerExchange,
    new_credential,
)
from headrace.log_broker.security import CredentialStore, ScramMechanism
from headrace.log_broker.security._sasl import SaslError, SaslExchange, SaslState


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_exchange_succeeds_with_the_right_password(mechanism: ScramMechanism) -> None:
    credential = new_credential(mechanism, "pencil")
    server = ScramServerExchange(mechanism, lambda user: credential if user == "u,=" else None)
    client = ScramClientExchange(mechanism, "u,=", "pencil")
    server_first = server.first(client.first())
    client.verify(server.final(client.final(server_first)))
    assert server.username == "u,="


@pytest.mark.parametrize("password,user", [("eraser", "user"), ("pencil", "nobody")])
def test_exchange_fails_for_a_wrong_password_or_user(password: str, user: str) -> None:
    mechanism = ScramMechanism.SCRAM_SHA_512
    credential = new_credential(mechanism, "pencil")
    server = ScramServerExchange(mechanism, lambda u: credential if u == "user" else None)
    client = ScramClientExchange(mechanism, user, password)
    server_first = server.first(client.first())
    # An unknown user still gets a salt and a count, so the answer reveals nothing.
    assert b",s=" in server_first and b",i=" in server_first
    with pytest.raises(ScramError):
        server.final(client.final(server_first))


@pytest.mark.parametrize("garbage", [b"", b"p=,,", b"n,,r=only-nonce", b"\xff\xfe"])
def test_garbled_client_first_is_refused(garbage: bytes) -> None:
    exchange = SaslExchange(("SCRAM-SHA-256",), CredentialStore(Path("/nonexistent"), {}))
    assert exchange.handshake("SCRAM-SHA-256")
    with pytest.raises(SaslError):
        exchange.step(garbage)
    assert exchange.state is SaslState.FAILED
    with pytest.raises(SaslError):  # a failed exchange stays failed
        exchange.step(b"n,,n=u,r=x")


def test_store_keeps_no_password_and_plain_checks_against_it(tmp_path: Path) -> None:
    store = CredentialStore.open(tmp_path)
    store.set_password("alice", ScramMechanism.SCRAM_SHA_512, "correct horse")
    path = tmp_path / "security" / "scram-credentials.json"
    assert "correct horse" not in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert set(json.loads(path.read_text())["alice"]["SCRAM-SHA-512"]) == {
        "salt",
        "iterations",
        "stored_key",
        "server_key",
    }
    reopened = CredentialStore.open(tmp_path)
    assert reopened.check_password("alice", "correct horse")
    assert not reopened.check_password("alice", "wrong")
    exchange = SaslExchange(("PLAIN",), reopened)
    assert exchange.handshake("PLAIN")
    exchange.step(b"\0alice\0correct horse")
    assert exchange.state is SaslState.AUTHENTICATED and exchange.username == "alice"
    assert reopened.delete("alice") and not CredentialStore.open(tmp_path).users()


def test_disabled_mechanism_is_refused_at_handshake() -> None:
    exchange = SaslExchange(("SCRAM-SHA-512",), CredentialStore(Path("/nonexistent"), {}))
    assert not exchange.handshake("PLAIN")
    assert exchange.state is SaslState.AWAITING_HANDSHAKE
