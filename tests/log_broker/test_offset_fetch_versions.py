"""OffsetFetch over a real socket at every version Kafka 4.4's clients use (1-10):
committed offsets by name and by topic id, several groups in one request, the
``require_stable`` flag against offsets a transaction holds (UNSTABLE_OFFSET_COMMIT
until it commits) and a consumer-protocol member's epoch (KIP-848)."""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from brokerproc import BrokerProcess
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.add_offsets_to_txn.v2.request import AddOffsetsToTxnRequest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.consumer_group_heartbeat.v0.request import ConsumerGroupHeartbeatRequest
from kio.schema.end_txn.v2.request import EndTxnRequest
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.offset_commit.v9 import request as commit_v9
from kio.schema.txn_offset_commit.v3 import request as txn_commit
from kio.schema.types import GroupId, TopicName, TransactionalId
from kio.static.primitive import i32, i32Timedelta, i64
from rawkafka import RawClient, create_topic

from headrace.log_broker import Broker
from jvm import compile_java, java_command

TOPIC = "fetched"
OFFSET_COMMIT, OFFSET_FETCH, METADATA, CREATE_TOPICS, API_VERSIONS = 8, 9, 3, 19, 18
INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = 22, 25, 26, 28
CONSUMER_GROUP_HEARTBEAT = 68


async def run(tmp_path: Path, scenario: Callable[[RawClient], None]) -> None:
    async with Broker(tmp_path / "data", group_initial_rebalance_delay_ms=0) as broker:

        def connected() -> None:  # a blocking client: off the broker's event loop
            with RawClient(broker.bootstrap_servers) as client:
                create_topic(client, TOPIC, partitions=2)
                scenario(client)

        await asyncio.to_thread(connected)


def commit(client: RawClient, group: str, offsets: dict[int, int]) -> None:
    """A plain commit without membership (a consumer assigning partitions itself)."""
    got = client.request(
        OFFSET_COMMIT,
        9,
        commit_v9.OffsetCommitRequest(
            group_id=GroupId(group),
            generation_id_or_member_epoch=i32(-1),
            member_id="",
            group_instance_id=None,
            topics=(
                commit_v9.OffsetCommitRequestTopic(
                    name=TopicName(TOPIC),
                    partitions=tuple(
                        commit_v9.OffsetCommitRequestPartition(
                            partition_index=i32(p),
                            committed_offset=i64(o),
                            committed_leader_epoch=i32(-1),
                            committed_metadata=f"m{o}",
                        )
                        for p, o in offsets.items()
                    ),
                ),
            ),
        ),
    )
    assert all(p.error_code == ErrorCode.none for t in got.topics for p in t.partitions)


def topic_id(client: RawClient) -> uuid.UUID:
    got = client.request(
        METADATA,
        12,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name=TopicName(TOPIC)),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    found = got.topics[0].topic_id
    assert isinstance(found, uuid.UUID)
    return found


def fetch(
    client: RawClient,
    version: int,
    groups: dict[str, list[int] | None],
    *,
    require_stable: bool = False,
    by_id: uuid.UUID | None = None,
    member: tuple[str | None, int] = (None, -1),
) -> dict[str, tuple[ErrorCode, dict[int, tuple[int, ErrorCode]]]]:
    """OffsetFetch at ``version``: per group, its error and {partition: (offset, error)}."""
    m: Any = importlib.import_module(f"kio.schema.offset_fetch.v{version}.request")
    extra: dict[str, Any] = {"require_stable": require_stable} if version >= 7 else {}
    if version < 8:
        [(group, partitions)] = groups.items()
        topics = (
            None
            if partitions is None
            else (m.OffsetFetchRequestTopic(name=TopicName(TOPIC), partition_indexes=partitions),)
        )
        got = client.request(
            OFFSET_FETCH,
            version,
            m.OffsetFetchRequest(group_id=GroupId(group), topics=topics, **extra),
        )
        answers = [(group, got.topics, getattr(got, "error_code", ErrorCode.none))]
    else:
        key: dict[str, Any] = {"topic_id": by_id} if version >= 10 else {"name": TopicName(TOPIC)}
        epoch: dict[str, Any] = (
            {"member_id": member[0], "member_epoch": i32(member[1])} if version >= 9 else {}
        )
        got = client.request(
            OFFSET_FETCH,
            version,
            m.OffsetFetchRequest(
                groups=tuple(
                    m.OffsetFetchRequestGroup(
                        group_id=GroupId(group),
                        topics=None
                        if partitions is None
                        else (m.OffsetFetchRequestTopics(partition_indexes=partitions, **key),),
                        **epoch,
                    )
                    for group, partitions in groups.items()
                ),
                **extra,
            ),
        )
        answers = [(g.group_id, g.topics, g.error_code) for g in got.groups]
    result = {}
    for group, topics, error in answers:
        partitions_found: dict[int, tuple[int, ErrorCode]] = {}
        for topic in topics:
            if version >= 10:
                assert topic.topic_id == by_id
            else:
                assert topic.name == TOPIC
            for p in topic.partitions:
                partitions_found[int(p.partition_index)] = (
                    int(p.committed_offset),
                    ErrorCode(p.error_code),
                )
        result[str(group)] = (ErrorCode(error), partitions_found)
    return result


OK = ErrorCode.none


async def test_offset_fetch_is_advertised_up_to_v10(tmp_path: Path) -> None:
    def scenario(client: RawClient) -> None:
        got = client.request(
            API_VERSIONS,
            3,
            ApiVersionsRequest(client_software_name="t", client_software_version="1"),
        )
        versions = {k.api_key: (k.min_version, k.max_version) for k in got.api_keys}
        assert versions[OFFSET_FETCH] == (1, 10)

    await run(tmp_path, scenario)


async def test_every_version_reads_committed_offsets(tmp_path: Path) -> None:
    def scenario(client: RawClient) -> None:
        commit(client, "g1", {0: 5, 1: 9})
        commit(client, "g2", {1: 3})
        tid = topic_id(client)
        for version in range(1, 11):
            got = fetch(client, version, {"g1": [0, 1]}, by_id=tid)
            assert got == {"g1": (OK, {0: (5, OK), 1: (9, OK)})}, version
            if version >= 2:  # a null topic list: every offset the group has
                assert fetch(client, version, {"g2": None}, by_id=tid) == {
                    "g2": (OK, {1: (3, OK)})
                }, version
            if version >= 8:  # several groups, each answered on its own
                got = fetch(client, version, {"g1": [1], "g2": [0, 1], "nobody": [0]}, by_id=tid)
                assert got == {
                    "g1": (OK, {1: (9, OK)}),
                    "g2": (OK, {0: (-1, OK), 1: (3, OK)}),
                    "nobody": (OK, {0: (-1, OK)}),
                }, version
                got = fetch(client, version, {"": [0], "g1": [0]}, by_id=tid)
                assert got == {"": (ErrorCode.invalid_group_id, {}), "g1": (OK, {0: (5, OK)})}
        unknown = uuid.uuid4()
        got = fetch(client, 10, {"g1": [0]}, by_id=unknown)
        assert got == {"g1": (OK, {0: (-1, ErrorCode.unknown_topic_id)})}

    await run(tmp_path, scenario)


class Txn:
    """One transactional producer that sends a group's offsets, request by request."""

    def __init__(self, client: RawClient, group: str) -> None:
        self.client, self.group, self.tid = client, group, f"txn-{group}"
        got = client.request(
            INIT_PRODUCER_ID,
            4,
            InitProducerIdRequest(
                transactional_id=TransactionalId(self.tid),
                transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
            ),
        )
        assert got.error_code == ErrorCode.none
        self.pid, self.epoch = got.producer_id, got.producer_epoch

    def send_offset(self, partition: int, offset: int) -> None:
        """AddOffsetsToTxn then TxnOffsetCommit (v3, without consumer group metadata)."""
        added = self.client.request(
            ADD_OFFSETS_TO_TXN,
            2,
            AddOffsetsToTxnRequest(
                transactional_id=TransactionalId(self.tid),
                producer_id=self.pid,
                producer_epoch=self.epoch,
                group_id=GroupId(self.group),
            ),
        )
        assert added.error_code == ErrorCode.none
        got = self.client.request(
            TXN_OFFSET_COMMIT,
            3,
            txn_commit.TxnOffsetCommitRequest(
                transactional_id=TransactionalId(self.tid),
                group_id=GroupId(self.group),
                producer_id=self.pid,
                producer_epoch=self.epoch,
                generation_id=i32(-1),
                member_id="",
                topics=(
                    txn_commit.TxnOffsetCommitRequestTopic(
                        name=TopicName(TOPIC),
                        partitions=(
                            txn_commit.TxnOffsetCommitRequestPartition(
                                partition_index=i32(partition),
                                committed_offset=i64(offset),
                                committed_metadata="",
                            ),
                        ),
                    ),
                ),
            ),
        )
        assert got.topics[0].partitions[0].error_code == ErrorCode.none

    def end(self, commit: bool) -> None:
        got = self.client.request(
            END_TXN,
            2,
            EndTxnRequest(
                transactional_id=TransactionalId(self.tid),
                producer_id=self.pid,
                producer_epoch=self.epoch,
                committed=commit,
            ),
        )
        assert got.error_code == ErrorCode.none


async def test_require_stable_answers_unstable_while_a_transaction_holds_offsets(
    tmp_path: Path,
) -> None:
    unstable = ErrorCode.unstable_offset_commit

    def scenario(client: RawClient) -> None:
        tid = topic_id(client)
        commit(client, "eos", {0: 2, 1: 4})
        txn = Txn(client, "eos")
        txn.send_offset(0, 10)
        for version in (7, 8, 9, 10):
            stable = fetch(client, version, {"eos": [0, 1]}, require_stable=True, by_id=tid)
            assert stable == {"eos": (OK, {0: (-1, unstable), 1: (4, OK)})}, version
            every = fetch(client, version, {"eos": None}, require_stable=True, by_id=tid)
            assert every == {"eos": (OK, {0: (-1, unstable), 1: (4, OK)})}, version
            # without the flag: the last committed offset, the transaction's unseen
            plain = fetch(client, version, {"eos": [0, 1]}, by_id=tid)
            assert plain == {"eos": (OK, {0: (2, OK), 1: (4, OK)})}, version
        txn.end(commit=True)
        for version in (7, 8, 10):
            stable = fetch(client, version, {"eos": [0, 1]}, require_stable=True, by_id=tid)
            assert stable == {"eos": (OK, {0: (10, OK), 1: (4, OK)})}, version
        # an aborted transaction's offsets leave the committed ones stable
        txn.send_offset(1, 99)
        assert fetch(client, 8, {"eos": [1]}, require_stable=True)["eos"][1] == {1: (-1, unstable)}
        txn.end(commit=False)
        assert fetch(client, 8, {"eos": [1]}, require_stable=True)["eos"][1] == {1: (4, OK)}

    await run(tmp_path, scenario)


async def test_v9_checks_a_consumer_protocol_members_epoch(tmp_path: Path) -> None:
    def scenario(client: RawClient) -> None:
        joined = client.request(
            CONSUMER_GROUP_HEARTBEAT,
            0,
            ConsumerGroupHeartbeatRequest(
                group_id=GroupId("kip848"),
                member_id=str(uuid.uuid4()),
                member_epoch=i32(0),
                rebalance_timeout=i32Timedelta.parse(timedelta(seconds=30)),
                subscribed_topic_names=(TopicName(TOPIC),),
                topic_partitions=(),
            ),
        )
        assert joined.error_code == ErrorCode.none, joined
        member, epoch = joined.member_id, int(joined.member_epoch)
        assert epoch > 0

        def group_error(member_id: str | None, member_epoch: int) -> ErrorCode:
            got = fetch(client, 9, {"kip848": [0]}, member=(member_id, member_epoch))
            return got["kip848"][0]

        assert group_error(member, epoch) == OK
        assert group_error(None, -1) == OK  # an admin client: no member, no epoch
        assert group_error(member, epoch + 1) == ErrorCode.stale_member_epoch
        assert group_error(member, epoch - 1) == ErrorCode.stale_member_epoch
        assert group_error("someone-else", epoch) == ErrorCode.unknown_member_id
        # a classic group (or none at all) is not checked, as in Kafka
        assert fetch(client, 9, {"classic": [0]}, member=("x", 3))["classic"][0] == OK

    await run(tmp_path, scenario)


def test_kafka_44_clients_wait_for_a_transactions_offsets(
    broker_process: BrokerProcess, tmp_path: Path
) -> None:
    """The Java 4.4 client: a consumer (require_stable, always) gets no offset while a
    transaction holds one, and gets it once committed (before v7 was offered it failed
    at once: the cluster "does not support [RequireStable]"); an admin client not asking
    for stable offsets gets the committed one meanwhile, and fetches two groups in one
    request."""
    topic = f"stable-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker_process.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    source = Path(__file__).parent / "java" / "StableOffsetFetch.java"
    cp = compile_java([source], tmp_path / "classes")
    done = subprocess.run(
        java_command("StableOffsetFetch", broker_process.bootstrap, topic, "eos", "idle", cp=cp),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert seen == {
        "admin_before": "null",
        "stable_before": "timeout",
        "stable_after": "42",
        "admin_group": "42",
        "admin_other": "null",
    }, done.stdout


async def test_batched_groups_are_authorized_one_by_one(tmp_path: Path) -> None:
    """v8: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED is that group's error
    alone) and on each topic (TOPIC_AUTHORIZATION_FAILED per partition; a topic the
    principal may not describe is left out of an all-offsets answer)."""
    from kio.schema.offset_fetch.v8 import request as v8
    from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
    from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

    from headrace.log_broker.security import (
        AclBinding,
        Authorizer,
        CredentialStore,
        Operation,
        PatternType,
        Permission,
        ResourceType,
        ScramMechanism,
        parse_listeners,
        security_from_properties,
    )

    data = tmp_path / "data"
    data.mkdir()
    users = CredentialStore.open(data)
    for user in ("admin", "alice"):
        users.set_password(user, ScramMechanism.SCRAM_SHA_256, f"{user}-secret", 4096)

    def allow(resource: ResourceType, name: str, operation: Operation) -> AclBinding:
        return AclBinding(
            resource, name, PatternType.LITERAL, "User:alice", "*", operation, Permission.ALLOW
        )

    Authorizer.open(data).add(
        [
            allow(ResourceType.GROUP, "mine", Operation.DESCRIBE),
            allow(ResourceType.TOPIC, TOPIC, Operation.DESCRIBE),
        ]
    )
    security = security_from_properties(
        {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin",
        }
    )

    def login(address: str, user: str) -> RawClient:
        client = RawClient(address)
        assert client.request(17, 1, SaslHandshakeRequest(mechanism="PLAIN")).error_code == OK
        token = f"\0{user}\0{user}-secret".encode()
        assert client.request(36, 2, SaslAuthenticateRequest(auth_bytes=token)).error_code == OK
        return client

    def scenario(address: str) -> None:
        with login(address, "admin") as admin:
            for topic in (TOPIC, "hidden"):
                create_topic(admin, topic)
            for group in ("mine", "theirs"):
                commit(admin, group, {0: 7})
                got = admin.request(
                    OFFSET_COMMIT,
                    9,
                    commit_v9.OffsetCommitRequest(
                        group_id=GroupId(group),
                        generation_id_or_member_epoch=i32(-1),
                        member_id="",
                        group_instance_id=None,
                        topics=(
                            commit_v9.OffsetCommitRequestTopic(
                                name=TopicName("hidden"),
                                partitions=(
                                    commit_v9.OffsetCommitRequestPartition(
                                        partition_index=i32(0),
                                        committed_offset=i64(3),
                                        committed_leader_epoch=i32(-1),
                                        committed_metadata="",
                                    ),
                                ),
                            ),
                        ),
                    ),
                )
                assert got.topics[0].partitions[0].error_code == OK

        def topics(*names: str) -> tuple[Any, ...]:
            return tuple(
                v8.OffsetFetchRequestTopics(name=TopicName(n), partition_indexes=(i32(0),))
                for n in names
            )

        with login(address, "alice") as alice:
            got = alice.request(
                OFFSET_FETCH,
                8,
                v8.OffsetFetchRequest(
                    groups=(
                        v8.OffsetFetchRequestGroup(
                            group_id=GroupId("mine"), topics=topics(TOPIC, "hidden")
                        ),
                        v8.OffsetFetchRequestGroup(
                            group_id=GroupId("theirs"), topics=topics(TOPIC)
                        ),
                        v8.OffsetFetchRequestGroup(group_id=GroupId("mine"), topics=None),
                    )
                ),
            )
        answers = [
            (
                g.group_id,
                ErrorCode(g.error_code),
                {
                    (t.name, int(p.committed_offset), ErrorCode(p.error_code))
                    for t in g.topics
                    for p in t.partitions
                },
            )
            for g in got.groups
        ]
        assert answers == [
            ("mine", OK, {(TOPIC, 7, OK), ("hidden", -1, ErrorCode.topic_authorization_failed)}),
            ("theirs", ErrorCode.group_authorization_failed, set()),
            ("mine", OK, {(TOPIC, 7, OK)}),
        ]

    async with Broker(
        data,
        listeners=parse_listeners("SASL_PLAINTEXT://127.0.0.1:0"),
        security=security,
        group_initial_rebalance_delay_ms=0,
    ) as broker:
        await asyncio.to_thread(scenario, broker.address("SASL_PLAINTEXT"))
