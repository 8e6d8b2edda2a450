"""Authentication and ACLs as a client meets them, over the wire, against one broker.

Raw requests (kio entities over a socket) pin the exact error codes Kafka uses;
aiokafka shows that a real client gets no data with a wrong password.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import struct
import time
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest
from brokerproc import free_port
from kafka_clients import unique
from kio.schema.consumer_group_heartbeat.v1.request import (
    ConsumerGroupHeartbeatRequest as HeartbeatV1,
)
from kio.schema.create_partitions.v3.request import CreatePartitionsRequest, CreatePartitionsTopic
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.metadata.v8.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v12.request import MetadataRequest as MetadataV12
from kio.schema.metadata.v12.request import MetadataRequestTopic as MetadataTopicV12
from kio.schema.produce.v8 import request as produce
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as HandshakeV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import Records, i16, i32, i32Timedelta
from rawkafka import RawClient, record_batch
from secured_broker import PASSWORDS, SecuredBroker, start_secured_broker

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBroker]:
    broker = start_secured_broker(tmp_path_factory.mktemp("acls"))
    try:
        broker.allow(
            "User:alice", "--topic", "alice-", "--group", "alice-", "--transactional-id", "alice-"
        )
        yield broker
    finally:
        broker.process.stop()


def login(secured: SecuredBroker, user: str, password: str | None = None) -> RawClient:
    client = RawClient(secured.address("SASL_PLAINTEXT"))
    shake = client.request(17, 1, SaslHandshakeRequest(mechanism="PLAIN"))
    assert shake.error_code == ErrorCode.none
    token = f"\0{user}\0{password or PASSWORDS[user]}".encode()
    reply = client.request(36, 2, SaslAuthenticateRequest(auth_bytes=token))
    if reply.error_code != ErrorCode.none:
        client.close()
        raise PermissionError(reply.error_code)
    return client


def produce_code(
    client: RawClient, topic: str, transactional_id: str | None = None, value: bytes = b"v"
) -> int:
    body = produce.ProduceRequest(
        transactional_id=None if transactional_id is None else TransactionalId(transactional_id),
        acks=i16(-1),
        timeout=i32Timedelta.parse(timedelta(seconds=5)),
        topic_data=(
            produce.TopicProduceData(
                name=TopicName(topic),
                partition_data=(
                    produce.PartitionProduceData(
                        index=i32(0), records=Records(record_batch([value]))
                    ),
                ),
            ),
        ),
    )
    response = client.request(0, 8, body)
    return int(response.responses[0].partition_responses[0].error_code)


def metadata(client: RawClient, topics: list[str] | None) -> dict[str, int]:
    body = MetadataRequest(
        topics=None
        if topics is None
        else tuple(MetadataRequestTopic(name=TopicName(t)) for t in topics),
        allow_auto_topic_creation=True,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    return {t.name: int(t.error_code) for t in client.request(3, 8, body).topics}


def partition_counts(client: RawClient, topics: list[str]) -> dict[str, int]:
    body = MetadataRequest(
        topics=tuple(MetadataRequestTopic(name=TopicName(t)) for t in topics),
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    return {t.name: len(t.partitions) for t in client.request(3, 8, body).topics}


def grow(client: RawClient, topics: list[str], count: int) -> list[tuple[str, int, str | None]]:
    """CreatePartitions v3 as Kafka's admin client sends it: (name, error, message) each."""
    body = CreatePartitionsRequest(
        topics=tuple(
            CreatePartitionsTopic(name=TopicName(t), count=i32(count), assignments=None)
            for t in topics
        ),
        timeout=i32Timedelta.parse(timedelta(seconds=10)),
        validate_only=False,
    )
    return [
        (r.name, int(r.error_code), r.error_message) for r in client.request(37, 3, body).results
    ]


def _authentication_failures(secured: SecuredBroker) -> dict[str, float]:
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(secured.metrics_url, timeout=10) as response:
        families = text_string_to_metric_families(response.read().decode())
        return {
            s.labels["listener"]: s.value
            for f in families
            for s in f.samples
            if s.name == "headrace_broker_authentication_failures_total"
        }


def test_wrong_password_fails_and_gets_no_data(secured: SecuredBroker) -> None:
    before = _authentication_failures(secured).get("SASL_PLAINTEXT", 0.0)
    with pytest.raises(PermissionError) as failed:
        login(secured, "alice", "not-her-password")
    assert failed.value.args[0] == ErrorCode.sasl_authentication_failed
    # The broker's metrics count the refused login, under its listener.
    assert _authentication_failures(secured).get("SASL_PLAINTEXT", 0.0) >= before + 1

    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaConnectionError

    async def consume() -> None:
        consumer = AIOKafkaConsumer(
            "alice-data",
            bootstrap_servers=secured.address("SASL_SSL"),
            request_timeout_ms=5000,
            **secured.sasl_ssl("alice", password="wrong").aiokafka_options(),
        )
        try:
            await consumer.start()
        finally:
            await consumer.stop()

    with pytest.raises(KafkaConnectionError):
        asyncio.run(consume())


def test_nothing_but_the_sasl_exchange_before_authentication(secured: SecuredBroker) -> None:
    client = RawClient(secured.address("SASL_PLAINTEXT"))
    try:
        with pytest.raises(ConnectionError):
            metadata(client, None)
    finally:
        client.close()
    # After a failed exchange, the connection serves nothing either.
    client = RawClient(secured.address("SASL_PLAINTEXT"))
    try:
        client.request(17, 1, SaslHandshakeRequest(mechanism="PLAIN"))
        reply = client.request(36, 2, SaslAuthenticateRequest(auth_bytes=b"\0alice\0no"))
        assert reply.error_code == ErrorCode.sasl_authentication_failed
        with pytest.raises(ConnectionError):
            metadata(client, None)
    finally:
        client.close()


def test_handshake_v0_then_bare_tokens(secured: SecuredBroker) -> None:
    client = RawClient(secured.address("SASL_PLAINTEXT"))
    try:
        shake = client.request(17, 0, HandshakeV0(mechanism="PLAIN"))
        assert shake.error_code == ErrorCode.none
        assert "SCRAM-SHA-512" in shake.mechanisms
        token = f"\0alice\0{PASSWORDS['alice']}".encode()
        client.send_raw(len(token).to_bytes(4, "big") + token)
        assert client.recv_frame() == b""
        topic = unique("alice-v0")
        assert metadata(client, [topic]) == {topic: ErrorCode.none}
    finally:
        client.close()


def test_principal_without_acls_is_refused_with_kafkas_codes(secured: SecuredBroker) -> None:
    alice_topic = unique("alice-t")
    with login(secured, "alice") as alice:
        assert produce_code(alice, alice_topic) == ErrorCode.none
    with login(secured, "bob") as bob:
        assert produce_code(bob, alice_topic) == ErrorCode.topic_authorization_failed
        assert metadata(bob, [alice_topic]) == {alice_topic: ErrorCode.topic_authorization_failed}
        assert alice_topic not in metadata(bob, None)
        join = bob.request(
            11,
            5,
            JoinGroupRequest(
                group_id=GroupId("alice-group"),
                session_timeout=i32Timedelta.parse(timedelta(seconds=10)),
                rebalance_timeout=i32Timedelta.parse(timedelta(seconds=10)),
                member_id="",
                group_instance_id=None,
                protocol_type="consumer",
                protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
            ),
        )
        assert join.error_code == ErrorCode.group_authorization_failed
        init = bob.request(
            22,
            4,
            InitProducerIdRequest(
                transactional_id=TransactionalId("alice-txn"),
                transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
                producer_id=ProducerId(-1),
                producer_epoch=i16(-1),
            ),
        )
        assert init.error_code == ErrorCode.transactional_id_authorization_failed
        idempotent = bob.request(
            22,
            4,
            InitProducerIdRequest(
                transactional_id=None,
                transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
                producer_id=ProducerId(-1),
                producer_epoch=i16(-1),
            ),
        )
        assert idempotent.error_code == ErrorCode.cluster_authorization_failed
        assert (
            produce_code(bob, alice_topic, transactional_id="alice-txn")
            == ErrorCode.transactional_id_authorization_failed
        )


def test_create_partitions_needs_alter_on_the_topic(secured: SecuredBroker) -> None:
    """Kafka checks ALTER on each topic and answers a refusal with no message, so a
    principal without it can neither grow another's topic nor learn that it exists."""
    alice_topic = unique("alice-grow")
    with login(secured, "alice") as alice:
        assert produce_code(alice, alice_topic) == ErrorCode.none
        assert partition_counts(alice, [alice_topic]) == {alice_topic: 1}
    missing = unique("alice-missing")
    refused = ErrorCode.topic_authorization_failed
    with login(secured, "bob") as bob:
        assert grow(bob, [alice_topic, missing], 4) == [
            (alice_topic, refused, None),
            (missing, refused, None),
        ]
    with login(secured, "alice") as alice:
        assert partition_counts(alice, [alice_topic]) == {alice_topic: 1}
        assert grow(alice, [alice_topic], 3) == [(alice_topic, ErrorCode.none, None)]
        assert partition_counts(alice, [alice_topic]) == {alice_topic: 3}
        # alice's ACLs cover the prefix alice- only
        outside = unique("other-grow")
        assert grow(alice, [outside], 2) == [(outside, refused, None)]
        assert grow(alice, [alice_topic, alice_topic], 5) == [
            (alice_topic, ErrorCode.invalid_request, "Duplicate topic name.")
        ]
        assert partition_counts(alice, [alice_topic]) == {alice_topic: 3}


def test_frames_before_authentication_are_capped(secured: SecuredBroker) -> None:
    """Until a client has authenticated, a frame may hold at most
    sasl.server.max.receive.size (512 KiB), as in Kafka: a larger size prefix closes the
    connection at once, before the broker reads or buffers any of the body."""
    with socket.create_connection(("127.0.0.1", secured.ports["SASL_PLAINTEXT"])) as raw:
        raw.settimeout(10)
        raw.sendall(struct.pack(">i", 512 * 1024 + 1))
        assert raw.recv(1) == b""
    with login(secured, "alice") as alice:
        assert produce_code(alice, unique("alice-big"), value=b"x" * (700 * 1024)) == 0


def topic_ids(client: RawClient, topics: list[str]) -> dict[str, uuid.UUID]:
    body = MetadataV12(
        topics=tuple(MetadataTopicV12(name=TopicName(t), topic_id=None) for t in topics),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return {str(t.name): t.topic_id for t in client.request(3, 12, body).topics}


def test_topic_names_stay_hidden_from_principals_without_describe(
    secured: SecuredBroker,
) -> None:
    """Kafka shows a principal only the topics it may DESCRIBE: a Metadata request by
    topic id answers TOPIC_AUTHORIZATION_FAILED without the name, and a KIP-848 regex
    subscription (".*") is assigned only the topics its member may describe."""
    alice_topic, bob_topic = unique("alice-hidden"), unique("bob-visible")
    secured.allow("User:bob", "--topic", bob_topic, "--group", "bob-", pattern="literal")
    secured.allow("User:bob", "--group", "bob-", operation="Read")
    with login(secured, "admin") as admin:
        assert produce_code(admin, alice_topic) == ErrorCode.none
        assert produce_code(admin, bob_topic) == ErrorCode.none
        ids = topic_ids(admin, [alice_topic, bob_topic])
    with login(secured, "bob") as bob:
        body = MetadataV12(
            topics=(MetadataTopicV12(name=None, topic_id=ids[alice_topic]),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        [entry] = bob.request(3, 12, body).topics
        assert entry.error_code == ErrorCode.topic_authorization_failed
        assert entry.name is None and entry.topic_id == ids[alice_topic]
        assigned: set[uuid.UUID] = set()
        member_id, epoch = str(uuid.uuid4()), 0
        for _ in range(20):
            beat = bob.request(
                68,
                1,
                HeartbeatV1(
                    group_id=GroupId("bob-regex"),
                    member_id=member_id,
                    member_epoch=i32(epoch),
                    rebalance_timeout=i32Timedelta.parse(timedelta(seconds=30)),
                    subscribed_topic_regex=".*" if epoch == 0 else None,
                    topic_partitions=() if epoch == 0 else None,
                ),
            )
            assert beat.error_code == ErrorCode.none, beat.error_message
            epoch = int(beat.member_epoch)
            if beat.assignment is not None:
                assigned = {t.topic_id for t in beat.assignment.topic_partitions}
                if assigned:
                    break
            time.sleep(0.1)
        assert assigned == {ids[bob_topic]}


def scram_first(secured: SecuredBroker, user: str) -> dict[str, str]:
    """The server-first message of a SCRAM-SHA-512 exchange for ``user``, as attributes."""
    with RawClient(secured.address("SASL_PLAINTEXT")) as client:
        shake = client.request(17, 1, SaslHandshakeRequest(mechanism="SCRAM-SHA-512"))
        assert shake.error_code == ErrorCode.none
        first = f"n,,n={user},r=clientnonce".encode()
        reply = client.request(36, 2, SaslAuthenticateRequest(auth_bytes=first))
        assert reply.error_code == ErrorCode.none
        return dict(part.split("=", 1) for part in reply.auth_bytes.decode().split(","))


def test_guessing_passwords_is_slow_quiet_and_tells_nothing(secured: SecuredBroker) -> None:
    """Kafka's connection.failed.authentication.delay.ms (100 ms) before a failure is
    answered; one log line per ten seconds however many fail; and an unknown user is
    answered like a known one: the same salt each time, the same iterations."""
    started = time.monotonic()
    with pytest.raises(PermissionError):
        login(secured, "alice", "wrong")
    assert time.monotonic() - started >= 0.1
    known = [scram_first(secured, "alice") for _ in range(2)]
    unknown = [scram_first(secured, "nobody-at-all") for _ in range(2)]
    assert known[0]["s"] == known[1]["s"] and unknown[0]["s"] == unknown[1]["s"]
    assert unknown[0]["i"] == known[0]["i"]
    assert len(base64.b64decode(unknown[0]["s"])) == len(base64.b64decode(known[0]["s"]))
    before = secured.process.log_path.read_text().count("SASL authentication failed")

    def guess(_: int) -> None:
        with pytest.raises(PermissionError):
            login(secured, "bob", "guess")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(guess, range(40)))
    after = secured.process.log_path.read_text().count("SASL authentication failed")
    assert after - before <= 2


def test_prefixed_acls_cover_names_that_start_with_the_prefix(secured: SecuredBroker) -> None:
    with login(secured, "alice") as alice:
        assert produce_code(alice, unique("alice-prefixed")) == ErrorCode.none
        assert produce_code(alice, unique("alicx")) == ErrorCode.topic_authorization_failed
        assert produce_code(alice, unique("other")) == ErrorCode.topic_authorization_failed


def test_deny_wins_over_allow(secured: SecuredBroker) -> None:
    topic = unique("carol-topic")
    secured.allow("User:bob", "--topic", topic, operation="Write", pattern="literal")
    with login(secured, "bob") as bob:
        assert produce_code(bob, topic) == ErrorCode.none
    secured.headrace(
        "acls",
        "add",
        "--bootstrap-servers",
        secured.address("SASL_SSL"),
        "--command-config",
        str(secured.command_config()),
        "--deny-principal",
        "User:bob",
        "--operation",
        "Write",
        "--topic",
        "carol-",
        "--resource-pattern-type",
        "prefixed",
    )
    with login(secured, "bob") as bob:
        assert produce_code(bob, topic) == ErrorCode.topic_authorization_failed


def test_super_user_needs_no_acls(secured: SecuredBroker) -> None:
    with login(secured, "admin") as admin:
        assert produce_code(admin, unique("anything")) == ErrorCode.none


def test_users_online_and_acls_survive_a_restart(secured: SecuredBroker) -> None:
    admin = [
        "--bootstrap-servers",
        secured.address("SASL_SSL"),
        "--command-config",
        str(secured.command_config()),
    ]
    secured.headrace(
        "users",
        "add",
        "dave",
        "--password-stdin",
        "--mechanism",
        "SCRAM-SHA-512",
        *admin,
        stdin="dave-pw\n",
    )
    assert "dave" in secured.headrace("users", "list", *admin)
    topic = unique("dave-t")
    secured.allow("User:dave", "--topic", topic, operation="Write", pattern="literal")
    with login(secured, "dave", "dave-pw") as dave:
        assert produce_code(dave, topic) == ErrorCode.none

    secured.process.stop()
    secured.process.start()
    listed = secured.headrace("acls", "list", "--topic", topic, *admin)
    assert "User:dave" in listed and "WRITE" in listed
    with login(secured, "dave", "dave-pw") as dave:
        assert produce_code(dave, topic) == ErrorCode.none

    secured.headrace(
        "acls",
        "remove",
        "--allow-principal",
        "User:dave",
        "--operation",
        "Write",
        "--topic",
        topic,
        *admin,
    )
    with login(secured, "dave", "dave-pw") as dave:
        assert produce_code(dave, topic) == ErrorCode.topic_authorization_failed
    secured.headrace("users", "delete", "dave", *admin)
    with pytest.raises(PermissionError):
        login(secured, "dave", "dave-pw")


def test_every_client_command_takes_command_config(secured: SecuredBroker) -> None:
    admin = [
        "--bootstrap-servers",
        secured.address("SASL_SSL"),
        "--command-config",
        str(secured.command_config()),
    ]
    topic, group = unique("cli"), unique("cli-g")
    secured.headrace("topics", "create", topic, "--partitions", "2", *admin)
    assert topic in secured.headrace("topics", "list", *admin)
    secured.headrace("produce", topic, *admin, stdin="one\ntwo\n")
    out = secured.headrace(
        "consume",
        topic,
        "--group",
        group,
        "--from-beginning",
        "--max-messages",
        "2",
        "--timeout-ms",
        "20000",
        *admin,
    )
    assert sorted(out.split()) == ["one", "two"]
    assert "RECORDS" in secured.headrace("topics", "describe", topic, *admin)
    assert group in secured.headrace("groups", "list", *admin)
    assert topic in secured.headrace("groups", "describe", group, *admin)
    secured.headrace("topics", "delete", topic, *admin)


def test_admin_clients_manage_acls_and_scram_users(secured: SecuredBroker) -> None:
    """confluent-kafka's and kafka-python's admin APIs for ACLs and SCRAM users."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(
        {
            "bootstrap.servers": secured.address("SASL_SSL"),
            **secured.sasl_ssl("admin").librdkafka_options(),
        }
    )
    topic = unique("erin-t")
    binding = AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:erin",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    for future in admin.create_acls([binding]).values():
        future.result(30)
    found = admin.describe_acls(
        AclBindingFilter(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.ANY,
            None,  # type: ignore[arg-type]  # None matches any principal; the stubs say str
            None,  # type: ignore[arg-type]  # and any host
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
    ).result(30)
    assert [(b.name, b.principal, b.operation) for b in found] == [
        (topic, "User:erin", AclOperation.WRITE)
    ]
    upsert = UserScramCredentialUpsertion(
        "erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"erin-pw"
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    futures = admin.describe_user_scram_credentials(["erin"])
    assert isinstance(futures, dict)  # one future per user asked about
    described = futures["erin"].result(30)
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 8192)
    ]
    # Asked about no user in particular, librdkafka sends an empty list, which Kafka reads
    # as every user (as it reads a null one).
    everyone = admin.describe_user_scram_credentials().result(30)  # type: ignore[union-attr]
    assert "erin" in everyone and "admin" in everyone
    got = secure_roundtrip_produce(secured, "erin", "erin-pw", topic)
    assert got == ErrorCode.none

    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KafkaPythonResource

    kp = KafkaAdminClient(
        bootstrap_servers=secured.address("SASL_PLAINTEXT"),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="admin",
        sasl_plain_password=PASSWORDS["admin"],
    )
    try:
        selected = ACLFilter(
            principal="User:erin",
            host="*",
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(
                KafkaPythonResource.TOPIC, topic, ACLResourcePatternType.ANY
            ),
        )
        acls, error = kp.describe_acls(selected)
        assert error.errno == 0 and len(acls) == 1
        deleted = kp.delete_acls([selected])
        assert len(deleted[0][1]) == 1
    finally:
        kp.close()
    assert secure_roundtrip_produce(secured, "erin", "erin-pw", topic) == (
        ErrorCode.topic_authorization_failed
    )


def secure_roundtrip_produce(secured: SecuredBroker, user: str, password: str, topic: str) -> int:
    with login(secured, user, password) as client:
        return produce_code(client, topic)


def test_console_reads_a_secured_broker(secured: SecuredBroker, tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "console"))
    from console_scene import spawn, stop, wait_http

    topic = unique("console-t")
    admin = [
        "--bootstrap-servers",
        secured.address("SASL_SSL"),
        "--command-config",
        str(secured.command_config()),
    ]
    secured.headrace("topics", "create", topic, *admin)
    port = free_port()
    console = spawn(["console", *admin, "--listen", f"127.0.0.1:{port}"], tmp_path / "console.log")
    try:
        wait_http(f"http://127.0.0.1:{port}/brokers")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/topics", timeout=20) as page:
            assert topic in page.read().decode()
    finally:
        stop(console)
    assert PASSWORDS["admin"] not in (tmp_path / "console.log").read_text()
