"""Third-party clients over SASL_SSL (SCRAM-SHA-512), SASL_PLAINTEXT (PLAIN) and mutual TLS.

Each of aiokafka, kafka-python, confluent-kafka, kcat and the reference Java client
runs a transaction and reads it back in a consumer group, through each kind of
listener, against one secured broker with ACLs on. ``alice`` (and the client
certificate's subject) may use topics, groups and transactional ids starting
``sec-``; nothing else is allowed to them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import secure_clients
from kafka_clients import unique
from secured_broker import SecuredBroker, start_secured_broker

from headrace.base import ClientSecurity

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBroker]:
    broker = start_secured_broker(tmp_path_factory.mktemp("secured"))
    try:
        for principal in ("User:alice", f"User:{broker.certs.client_subject}"):
            broker.allow(
                principal, "--topic", "sec-", "--group", "sec-", "--transactional-id", "sec-"
            )
        yield broker
    finally:
        broker.process.stop()


LISTENERS: dict[str, Callable[[SecuredBroker], ClientSecurity]] = {
    "SASL_SSL": lambda b: b.sasl_ssl("alice", "SCRAM-SHA-512"),
    "SASL_PLAINTEXT": lambda b: b.sasl_plaintext("alice", "PLAIN"),
    "SSL": lambda b: b.mutual_tls(),
}
CLIENTS = {
    "aiokafka": secure_clients.aiokafka_roundtrip,
    "kafka-python": secure_clients.kafka_python_roundtrip,
    "confluent-kafka": secure_clients.confluent_roundtrip,
    "kcat": secure_clients.kcat_roundtrip,
}


@pytest.mark.parametrize("listener", list(LISTENERS))
@pytest.mark.parametrize("client", list(CLIENTS))
def test_python_and_librdkafka_clients(secured: SecuredBroker, client: str, listener: str) -> None:
    topic, group, txn = unique("sec-t"), unique("sec-g"), unique("sec-x")
    got = CLIENTS[client](
        secured.address(listener), LISTENERS[listener](secured), topic, group, txn
    )
    assert got == secure_clients.VALUES


@pytest.mark.parametrize("listener", list(LISTENERS))
def test_java_client(secured: SecuredBroker, listener: str, tmp_path: Path) -> None:
    topic, group, txn = unique("sec-t"), unique("sec-g"), unique("sec-x")
    got = secure_clients.java_roundtrip(
        secured.address(listener), LISTENERS[listener](secured), topic, group, txn, tmp_path
    )
    assert got == secure_clients.VALUES


def test_scram_sha_256_and_plain_over_tls(secured: SecuredBroker) -> None:
    for mechanism in ("SCRAM-SHA-256", "PLAIN"):
        topic = unique("sec-t")
        got = secure_clients.aiokafka_roundtrip(
            secured.address("SASL_SSL"),
            secured.sasl_ssl("alice", mechanism),
            topic,
            unique("sec-g"),
            unique("sec-x"),
        )
        assert got == secure_clients.VALUES
