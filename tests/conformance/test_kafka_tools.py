"""Kafka 4.4's own command-line tools against ``headrace broker`` (one broker process for
the module): the subcommands that need ListOffsets v7+, OffsetDelete, DescribeProducers
and WriteTxnMarkers, ElectLeaders, the feature levels of ApiVersions and DescribeQuorum,
asserted on what the tools print. Then the error paths of those handlers, and of
DescribeCluster and DescribeTopicPartitions (which Kafka 4's admin client prefers, with
a fallback that would hide their absence from the tools), as raw requests.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from brokerproc import BrokerProcess
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsV3
from kio.schema.api_versions.v4.request import ApiVersionsRequest as ApiVersionsV4
from kio.schema.describe_cluster.v2 import request as describe_cluster
from kio.schema.describe_quorum.v2 import request as describe_quorum
from kio.schema.describe_topic_partitions.v0 import request as describe_partitions
from kio.schema.elect_leaders.v2 import request as elect_leaders
from kio.schema.errors import ErrorCode
from kio.schema.join_group.v3 import request as join_group
from kio.schema.list_offsets.v11 import request as list_offsets
from kio.schema.offset_delete.v0 import request as offset_delete
from kio.schema.types import BrokerId, GroupId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64
from raw_txn_requests import produce_code
from rawkafka import RawClient, create_topic

from headrace.log_broker import Broker
from headrace.log_broker.records import _batches as _records
from headrace.log_broker.security import (
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    SecurityConfig,
)
from jvm import CONSUMER_GROUP_COMMAND, METADATA_QUORUM_COMMAND, java_command, kafka_tool

GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
FEATURES = "org.apache.kafka.tools.FeatureCommand"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"

LIST_OFFSETS, API_VERSIONS, ELECT_LEADERS, OFFSET_DELETE, JOIN_GROUP = 2, 18, 43, 47, 11
DESCRIBE_QUORUM, DESCRIBE_CLUSTER, DESCRIBE_TOPIC_PARTITIONS = 55, 60, 75


def failing_tool(main_class: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A tool run expected to fail: its exit status and output, unchecked."""
    return subprocess.run(
        java_command(main_class, *args), capture_output=True, text=True, timeout=120
    )


def table(output: str) -> list[list[str]]:
    """The rows of a tab-separated table a tool printed, cells stripped."""
    return [[cell.strip() for cell in line.split("\t")] for line in output.splitlines() if line]


def stamped(timestamps: list[int]) -> bytes:
    """One batch whose records carry these timestamps, in this order."""
    records = [_records.Record(i, ts, b"k", b"v%d" % i) for i, ts in enumerate(timestamps)]
    return _records.encode_batch(records)


@pytest.fixture(scope="module")
def broker(broker_process: BrokerProcess) -> BrokerProcess:
    return broker_process


# ---------------------------------------------------------------- the tools


def test_get_offsets_max_timestamp_and_tiered_specs(broker: BrokerProcess) -> None:
    """``--time -3`` is the first record with the largest timestamp (not the last
    record); ``-4`` (earliest local) is the log start; ``-5`` (latest tiered) has no
    offset on a topic without remote storage, so the tool prints none."""
    with RawClient(broker.bootstrap) as client:
        create_topic(client, "stamps")
        assert produce_code(client, "stamps", stamped([1_000, 9_000, 5_000, 9_000, 2_000])) == 0
    largest = kafka_tool(GET_OFFSETS, broker.bootstrap, "--topic", "stamps", "--time", "-3")
    assert largest.stdout.split() == ["stamps:0:1"], largest.stdout + largest.stderr
    local = kafka_tool(GET_OFFSETS, broker.bootstrap, "--topic", "stamps", "--time", "-4")
    assert local.stdout.split() == ["stamps:0:0"], local.stdout + local.stderr
    tiered = kafka_tool(GET_OFFSETS, broker.bootstrap, "--topic", "stamps", "--time", "-5")
    assert tiered.stdout.split() == [] and "Skip" not in tiered.stdout, tiered.stdout


def test_consumer_groups_delete_offsets(broker: BrokerProcess) -> None:
    """``--delete-offsets`` removes the group's offsets of a topic: each partition is
    reported Successful, and ``--describe`` shows the topic no more."""
    with RawClient(broker.bootstrap) as client:
        create_topic(client, "read-once", partitions=2)
    group = ("--group", "cleaner")
    kafka_tool(
        CONSUMER_GROUP_COMMAND,
        broker.bootstrap,
        "--reset-offsets",
        "--to-earliest",
        "--execute",
        "--topic",
        "read-once",
        *group,
    )
    deleted = kafka_tool(
        CONSUMER_GROUP_COMMAND, broker.bootstrap, "--delete-offsets", "--topic", "read-once", *group
    )
    assert "Request succeeded for deleting offsets from group cleaner." in deleted.stdout
    rows = [line.split() for line in deleted.stdout.splitlines() if line.startswith("read-once")]
    assert rows == [["read-once", "0", "Successful"], ["read-once", "1", "Successful"]], rows
    described = kafka_tool(CONSUMER_GROUP_COMMAND, broker.bootstrap, "--describe", *group)
    assert "read-once" not in described.stdout, described.stdout


def test_transactions_tool_finds_and_aborts_an_open_transaction(broker: BrokerProcess) -> None:
    """A producer dies inside its transaction: ``list`` shows it Ongoing,
    ``describe-producers`` shows where it started, ``find-hanging`` finds nothing while
    its coordinator still knows it, and ``abort --start-offset`` ends it, so the last
    stable offset moves past it."""
    with RawClient(broker.bootstrap) as client:
        create_topic(client, "left-open")
    died = subprocess.run(
        [sys.executable, "-c", _DIE_IN_TRANSACTION, broker.bootstrap, "dies-open", "left-open"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert died.returncode == 0 and died.stdout.split() == ["0"], died.stderr
    listed = table(kafka_tool(TRANSACTIONS, broker.bootstrap, "list").stdout)
    [row] = [row for row in listed if row[0] == "dies-open"]
    assert row[3] == "Ongoing"
    producers = kafka_tool(
        TRANSACTIONS,
        broker.bootstrap,
        "describe-producers",
        "--topic",
        "left-open",
        "--partition",
        "0",
    )
    header, *entries = table(producers.stdout)
    assert [entry[header.index("CurrentTransactionStartOffset")] for entry in entries] == ["0"]
    hanging = kafka_tool(TRANSACTIONS, broker.bootstrap, "find-hanging", "--topic", "left-open")
    assert table(hanging.stdout)[1:] == [], hanging.stdout
    kafka_tool(
        TRANSACTIONS,
        broker.bootstrap,
        "abort",
        "--topic",
        "left-open",
        "--partition",
        "0",
        "--start-offset",
        "0",
    )
    stable = kafka_tool(
        GET_OFFSETS,
        broker.bootstrap,
        "--topic",
        "left-open",
        "--time",
        "-1",
        "--command-config",
        str(_read_committed_config(broker)),
    )
    assert stable.stdout.split() == ["left-open:0:2"], stable.stdout  # the record, the marker


_DIE_IN_TRANSACTION = """
import asyncio, os, sys
from aiokafka import AIOKafkaProducer

async def main():
    producer = AIOKafkaProducer(
        bootstrap_servers=sys.argv[1], transactional_id=sys.argv[2], transaction_timeout_ms=900000
    )
    await producer.start()
    await producer.begin_transaction()
    sent = await producer.send_and_wait(sys.argv[3], b"open", partition=0)
    print(sent.offset, flush=True)
    os._exit(0)  # no abort, no close: as a process killed mid-transaction

asyncio.run(main())
"""


def _read_committed_config(broker: BrokerProcess) -> Path:
    path = broker.data_dir.parent / "read-committed.properties"
    path.write_text("isolation.level=read_committed\n")
    return path


def test_leader_election_needs_none(broker: BrokerProcess) -> None:
    """One broker leads every partition as its preferred replica: electing all of them
    exits 0 with nothing to report, as Kafka's tool does when no partition needed an
    election; naming one says a valid replica is already elected."""
    with RawClient(broker.bootstrap) as client:
        create_topic(client, "led")
    every = kafka_tool(
        LEADER_ELECTION, broker.bootstrap, "--election-type", "preferred", "--all-topic-partitions"
    )
    assert every.stdout.strip() == "", every.stdout
    one = kafka_tool(
        LEADER_ELECTION,
        broker.bootstrap,
        "--election-type",
        "unclean",
        "--topic",
        "led",
        "--partition",
        "0",
    )
    assert one.stdout.strip() == "Valid replica already elected for partitions led-0"


def test_features_describe(broker: BrokerProcess) -> None:
    """The feature levels this broker implements, finalized where above 0."""
    described = kafka_tool(FEATURES, broker.bootstrap, "describe")
    features = {}
    for line in described.stdout.splitlines():
        cells = dict(re.findall(r"(\w+): (\S+)", line))
        features[cells["Feature"]] = (
            int(cells["SupportedMinVersion"]),
            int(cells["SupportedMaxVersion"]),
            int(cells["FinalizedVersionLevel"]),
        )
    assert features == {
        "group.version": (0, 1, 1),
        "share.version": (0, 1, 1),
        "streams.version": (0, 0, 0),
        "transaction.version": (0, 0, 0),
    }, described.stdout


def test_metadata_quorum_says_there_is_none(broker: BrokerProcess) -> None:
    done = failing_tool(
        METADATA_QUORUM_COMMAND, "--bootstrap-server", broker.bootstrap, "describe", "--status"
    )
    assert done.returncode == 1
    assert "InvalidRequestException: This broker has no KRaft quorum to describe" in done.stderr


# ---------------------------------------------------------------- raw requests


def test_list_offsets_specs_by_raw_request(broker: BrokerProcess) -> None:
    """v11: max timestamp of an empty log is -1; earliest local is the log start;
    latest tiered and earliest pending upload are -1 with leader epoch -1; an unknown
    topic is UNKNOWN_TOPIC_OR_PARTITION."""
    with RawClient(broker.bootstrap) as client:
        create_topic(client, "empty")

        def ask(topic: str, spec: int) -> Any:
            got = client.request(
                LIST_OFFSETS,
                11,
                list_offsets.ListOffsetsRequest(
                    replica_id=BrokerId(-1),
                    isolation_level=i8(0),
                    topics=(
                        list_offsets.ListOffsetsTopic(
                            name=TopicName(topic),
                            partitions=(
                                list_offsets.ListOffsetsPartition(
                                    partition_index=i32(0), timestamp=i64(spec)
                                ),
                            ),
                        ),
                    ),
                    timeout=i32Timedelta.parse(timedelta(seconds=5)),
                ),
            )
            return got.topics[0].partitions[0]

        empty_max = ask("empty", -3)
        assert (empty_max.error_code, empty_max.offset, empty_max.timestamp) == (0, -1, -1)
        assert ask("empty", -4).offset == 0
        for spec in (-5, -6):
            found = ask("empty", spec)
            assert (found.error_code, found.offset, found.leader_epoch) == (0, -1, -1)
        assert ask("no-such-topic", -3).error_code == ErrorCode.unknown_topic_or_partition


def test_api_versions_features_by_version(broker: BrokerProcess) -> None:
    """v4 may say level 0; before v4 a minimum of 0 becomes 1 and a feature whose
    maximum is 0 is left out (KAFKA-17011), as Kafka does."""
    with RawClient(broker.bootstrap) as client:
        v4 = client.request(
            API_VERSIONS, 4, ApiVersionsV4(client_software_name="t", client_software_version="1")
        )
        v3 = client.request(
            API_VERSIONS, 3, ApiVersionsV3(client_software_name="t", client_software_version="1")
        )
    assert {f.name: (f.min_version, f.max_version) for f in v4.supported_features} == {
        "group.version": (0, 1),
        "share.version": (0, 1),
        "streams.version": (0, 0),
        "transaction.version": (0, 0),
    }
    assert {f.name: (f.min_version, f.max_version) for f in v3.supported_features} == {
        "group.version": (1, 1),
        "share.version": (1, 1),
    }
    for answer in (v3, v4):
        assert answer.finalized_features_epoch >= 0
        assert {f.name: f.max_version_level for f in answer.finalized_features} == {
            "group.version": 1,
            "share.version": 1,
        }


def _offset_delete(client: RawClient, group: str, topic: str, *partitions: int) -> Any:
    return client.request(
        OFFSET_DELETE,
        0,
        offset_delete.OffsetDeleteRequest(
            group_id=GroupId(group),
            topics=(
                offset_delete.OffsetDeleteRequestTopic(
                    name=TopicName(topic),
                    partitions=tuple(
                        offset_delete.OffsetDeleteRequestPartition(partition_index=i32(p))
                        for p in partitions
                    ),
                ),
            ),
        ),
    )


def _codes(answer: Any) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}


def _subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0: version, topics, no user data."""
    out = bytearray(b"\x00\x00") + len(topics).to_bytes(4, "big")
    for topic in topics:
        out += len(topic).to_bytes(2, "big") + topic.encode()
    return bytes(out + b"\xff\xff\xff\xff")


def test_offset_delete_errors(broker: BrokerProcess) -> None:
    """A group that does not exist is GROUP_ID_NOT_FOUND; a topic that does not exist is
    UNKNOWN_TOPIC_OR_PARTITION whatever the group; a topic a member of the group is
    subscribed to keeps its offsets (GROUP_SUBSCRIBED_TO_TOPIC), another topic's are
    deleted."""
    with RawClient(broker.bootstrap) as client:
        create_topic(client, "subscribed")
        create_topic(client, "other")
        missing = _offset_delete(client, "no-such-group", "other", 0)
        assert missing.error_code == ErrorCode.group_id_not_found
        joined = client.request(
            JOIN_GROUP,
            3,
            join_group.JoinGroupRequest(
                group_id=GroupId("reader"),
                session_timeout=i32Timedelta.parse(timedelta(seconds=30)),
                rebalance_timeout=i32Timedelta.parse(timedelta(seconds=30)),
                member_id="",
                protocol_type="consumer",
                protocols=(
                    join_group.JoinGroupRequestProtocol(
                        name="range", metadata=_subscription("subscribed")
                    ),
                ),
            ),
        )
        assert joined.error_code == ErrorCode.none
        unknown = _offset_delete(client, "reader", "no-such-topic", 0)
        assert unknown.error_code == ErrorCode.none
        assert _codes(unknown) == {("no-such-topic", 0): ErrorCode.unknown_topic_or_partition}
        kept = _offset_delete(client, "reader", "subscribed", 0)
        assert _codes(kept) == {("subscribed", 0): ErrorCode.group_subscribed_to_topic}
        free = _offset_delete(client, "reader", "other", 0)
        assert (free.error_code, _codes(free)) == (ErrorCode.none, {("other", 0): 0})


def _elect(client: RawClient, topic: str | None, *partitions: int) -> Any:
    return client.request(
        ELECT_LEADERS,
        2,
        elect_leaders.ElectLeadersRequest(
            election_type=i8(0),
            topic_partitions=None
            if topic is None
            else (
                elect_leaders.TopicPartitions(
                    topic=TopicName(topic), partitions=tuple(map(i32, partitions))
                ),
            ),
        ),
    )


def test_elect_leaders_unknown_partitions(broker: BrokerProcess) -> None:
    with RawClient(broker.bootstrap) as client:
        create_topic(client, "elected")
        got = _elect(client, "elected", 0, 7)
        results = {r.partition_id: r for r in got.replica_election_results[0].partition_result}
        assert results[0].error_code == ErrorCode.election_not_needed
        assert results[7].error_code == ErrorCode.unknown_topic_or_partition
        assert results[7].error_message == "No such partition as elected-7"
        unknown = _elect(client, "no-such-topic", 0).replica_election_results[0]
        assert unknown.partition_result[0].error_code == ErrorCode.unknown_topic_or_partition
        everything = _elect(client, None)
        assert everything.error_code == ErrorCode.none
        names = {r.topic for r in everything.replica_election_results}
        assert "elected" in names
        assert all(not r.partition_result for r in everything.replica_election_results)


def _describe_partitions(
    client: RawClient, topics: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None
) -> Any:
    return client.request(
        DESCRIBE_TOPIC_PARTITIONS,
        0,
        describe_partitions.DescribeTopicPartitionsRequest(
            topics=tuple(describe_partitions.TopicRequest(name=TopicName(t)) for t in topics),
            response_partition_limit=i32(limit),
            cursor=None
            if cursor is None
            else describe_partitions.Cursor(
                topic_name=TopicName(cursor[0]), partition_index=i32(cursor[1])
            ),
        ),
    )


def test_describe_topic_partitions_pages(broker: BrokerProcess) -> None:
    """A partition limit cuts the answer where a cursor says, and the cursor goes on
    from there; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION with no topic id."""
    with RawClient(broker.bootstrap) as client:
        create_topic(client, "paged", partitions=3)
        first = _describe_partitions(client, ["paged", "paged-too-little"], limit=2)
        [paged] = first.topics
        assert [p.partition_index for p in paged.partitions] == [0, 1]
        assert (paged.partitions[0].leader_id, paged.partitions[0].isr_nodes) == (1, (1,))
        assert first.next_cursor is not None
        assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("paged", 2)
        rest = _describe_partitions(client, ["paged", "paged-too-little"], cursor=("paged", 2))
        assert [p.partition_index for p in rest.topics[0].partitions] == [2]
        assert rest.topics[1].name == "paged-too-little"
        assert rest.topics[1].error_code == ErrorCode.unknown_topic_or_partition
        assert rest.topics[1].topic_id is None  # the zero id, as kio reads it
        assert rest.next_cursor is None


def test_describe_cluster(broker: BrokerProcess) -> None:
    """One broker, its own controller as far as clients can tell; asking a broker for
    controller endpoints is MISMATCHED_ENDPOINT_TYPE."""
    with RawClient(broker.bootstrap) as client:

        def ask(endpoint_type: int) -> Any:
            return client.request(
                DESCRIBE_CLUSTER,
                2,
                describe_cluster.DescribeClusterRequest(
                    include_cluster_authorized_operations=True,
                    endpoint_type=i8(endpoint_type),
                    include_fenced_brokers=True,
                ),
            )

        brokers = ask(1)
        assert brokers.error_code == ErrorCode.none and brokers.cluster_id
        [node] = brokers.brokers
        assert (node.broker_id, node.port, node.is_fenced) == (1, broker.port, False)
        assert brokers.controller_id == 1
        # No ACLs: every operation Kafka defines on a cluster.
        cluster_operations = (5, 7, 8, 9, 10, 11, 12)  # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
        # DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
        assert brokers.cluster_authorized_operations == sum(1 << op for op in cluster_operations)
        assert ask(2).error_code == ErrorCode.mismatched_endpoint_type


async def test_acls_are_kafkas(tmp_path: Path) -> None:
    """Each API refuses as Kafka's KafkaApis (and controller) do: OffsetDelete needs
    DELETE on the group, then READ on each topic; ElectLeaders ALTER on the cluster;
    DescribeQuorum DESCRIBE on the cluster; DescribeTopicPartitions DESCRIBE on each
    named topic, and leaves out of a full listing those it may not describe;
    DescribeCluster reports no operations without DESCRIBE on the cluster."""
    async with Broker(tmp_path / "data", security=SecurityConfig(acls_enabled=True)) as running:
        state = running.state
        state.logs.create_topic("guarded", 1, {})
        assert state.security is not None and state.security.authorizer is not None
        authorizer = state.security.authorizer

        def allow(resource: ResourceType, name: str, operation: Operation) -> None:
            authorizer.add(
                [
                    AclBinding(
                        resource,
                        name,
                        PatternType.LITERAL,
                        "User:ANONYMOUS",
                        "*",
                        operation,
                        Permission.ALLOW,
                    )
                ]
            )

        def refused() -> None:
            with RawClient(running.bootstrap_servers) as client:
                answer = _offset_delete(client, "g", "guarded", 0)
                assert answer.error_code == ErrorCode.group_authorization_failed
                allow(ResourceType.GROUP, "g", Operation.DELETE)
                answer = _offset_delete(client, "g", "guarded", 0)
                assert _codes(answer) == {("guarded", 0): ErrorCode.topic_authorization_failed}
                elected = _elect(client, "guarded", 0)
                assert elected.error_code == ErrorCode.cluster_authorization_failed
                [result] = elected.replica_election_results[0].partition_result
                assert result.error_code == ErrorCode.cluster_authorization_failed
                quorum = client.request(
                    DESCRIBE_QUORUM, 2, describe_quorum.DescribeQuorumRequest(topics=())
                )
                assert quorum.error_code == ErrorCode.cluster_authorization_failed
                named = _describe_partitions(client, ["guarded"])
                assert [(t.name, t.error_code) for t in named.topics] == [
                    ("guarded", ErrorCode.topic_authorization_failed)
                ]
                assert _describe_partitions(client, []).topics == ()
                cluster = client.request(
                    DESCRIBE_CLUSTER,
                    2,
                    describe_cluster.DescribeClusterRequest(
                        include_cluster_authorized_operations=True, include_fenced_brokers=False
                    ),
                )
                assert cluster.cluster_authorized_operations == 0
                allow(ResourceType.TOPIC, "guarded", Operation.DESCRIBE)
                [listed] = _describe_partitions(client, []).topics
                assert listed.name == "guarded" and listed.error_code == ErrorCode.none
                assert listed.topic_authorized_operations == 1 << Operation.DESCRIBE

        await asyncio.to_thread(refused)
