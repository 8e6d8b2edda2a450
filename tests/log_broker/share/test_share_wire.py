"""Share-group requests byte for byte: session epochs, acknowledgement errors, unknown
topics, and acknowledgements kept across a broker restart."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from kio.schema.delete_topics.v1.request import DeleteTopicsRequest
from kio.schema.describe_share_group_offsets.v1 import request as offsets_request
from kio.schema.errors import ErrorCode
from kio.schema.share_acknowledge.v1 import request as ack_request
from kio.schema.share_fetch.v1 import request as fetch_request
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64
from rawkafka import RawClient, record_batch

from headrace.log_broker import Broker

TOPIC = "wire"
ACCEPT, RELEASE = 1, 2


def produce(client: RawClient, count: int) -> None:
    from kio.schema.produce.v8 import request as p

    body = p.ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=i32Timedelta.parse(timedelta(seconds=5)),
        topic_data=(
            p.TopicProduceData(
                name=TopicName(TOPIC),
                partition_data=(
                    p.PartitionProduceData(
                        index=i32(0),
                        records=Records(record_batch([b"v%d" % i for i in range(count)])),
                    ),
                ),
            ),
        ),
    )
    response = client.request(0, 8, body)
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.none


def join(client: RawClient, member: str) -> uuid.UUID:
    response = client.request(
        76,
        1,
        ShareGroupHeartbeatRequest(
            group_id=GroupId("g"),
            member_id=member,
            member_epoch=i32(0),
            subscribed_topic_names=(TopicName(TOPIC),),
        ),
    )
    assert response.error_code == ErrorCode.none, response
    [assigned] = response.assignment.topic_partitions
    assert tuple(assigned.partitions) == (0,)
    topic_id: uuid.UUID = assigned.topic_id
    return topic_id


def fetch(
    client: RawClient,
    member: str,
    epoch: int,
    topic_id: uuid.UUID,
    acks: tuple[tuple[int, int, int], ...] = (),
) -> Any:
    batches = tuple(
        fetch_request.AcknowledgementBatch(
            first_offset=i64(first), last_offset=i64(last), acknowledge_types=(i8(kind),)
        )
        for first, last, kind in acks
    )
    return client.request(
        78,
        1,
        fetch_request.ShareFetchRequest(
            group_id=GroupId("g"),
            member_id=member,
            share_session_epoch=i32(epoch),
            max_wait=i32Timedelta.parse(timedelta(milliseconds=100)),
            min_bytes=i32(1),
            max_records=i32(100),
            batch_size=i32(100),
            topics=(
                fetch_request.FetchTopic(
                    topic_id=topic_id,
                    partitions=(
                        fetch_request.FetchPartition(
                            partition_index=i32(0), acknowledgement_batches=batches
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
        ),
    )


def acknowledge(
    client: RawClient, member: str, epoch: int, topic_id: uuid.UUID, first: int, last: int
) -> Any:
    return client.request(
        79,
        1,
        ack_request.ShareAcknowledgeRequest(
            group_id=GroupId("g"),
            member_id=member,
            share_session_epoch=i32(epoch),
            topics=(
                ack_request.AcknowledgeTopic(
                    topic_id=topic_id,
                    partitions=(
                        ack_request.AcknowledgePartition(
                            partition_index=i32(0),
                            acknowledgement_batches=(
                                ack_request.AcknowledgementBatch(
                                    first_offset=i64(first),
                                    last_offset=i64(last),
                                    acknowledge_types=(i8(ACCEPT),),
                                ),
                            ),
                        ),
                    ),
                ),
            ),
        ),
    )


def start_offset(client: RawClient) -> int:
    [partition] = describe_offsets(client).groups[0].topics[0].partitions
    return int(partition.start_offset)


def share_partitions(client: RawClient) -> int:
    return sum(len(t.partitions) for t in describe_offsets(client).groups[0].topics)


def describe_offsets(client: RawClient) -> Any:
    return client.request(
        90,
        1,
        offsets_request.DescribeShareGroupOffsetsRequest(
            groups=(
                offsets_request.DescribeShareGroupOffsetsRequestGroup(
                    group_id=GroupId("g"), topics=None
                ),
            )
        ),
    )


def first_session(bootstrap: str) -> None:
    with RawClient(bootstrap) as client:
        produce(client, 10)
        topic_id = join(client, "m1")
        stranger = fetch(client, "stranger", 0, topic_id)  # only members open sessions
        assert stranger.error_code == ErrorCode.unknown_member_id
        assert fetch(client, "m1", 1, topic_id).error_code == ErrorCode.share_session_not_found
        opened = fetch(client, "m1", 0, topic_id)  # latest: nothing yet
        assert opened.error_code == ErrorCode.none
        produce(client, 5)
        got = fetch(client, "m1", 1, topic_id)
        [partition] = got.responses[0].partitions
        [acquired] = partition.acquired_records
        assert (acquired.first_offset, acquired.last_offset, acquired.delivery_count) == (10, 14, 1)
        assert partition.records  # the batch holding them
        assert fetch(client, "m1", 7, topic_id).error_code == ErrorCode.invalid_share_session_epoch
        zero = acknowledge(client, "m1", 0, topic_id, 10, 11)
        assert zero.error_code == ErrorCode.invalid_share_session_epoch
        wrong = acknowledge(client, "m1", 2, topic_id, 3, 4)  # never delivered
        assert wrong.responses[0].partitions[0].error_code == ErrorCode.invalid_record_state
        right = acknowledge(client, "m1", 3, topic_id, 10, 12)
        assert right.responses[0].partitions[0].error_code == ErrorCode.none
        unknown = fetch(client, "m1", 4, uuid.uuid4())
        assert unknown.responses[0].partitions[0].error_code == ErrorCode.unknown_topic_id
        assert start_offset(client) == 13
        assert listed(client, types=()) == [("g", "share", "Stable")]
        assert listed(client, types=("share",), states=("stable",)) == [("g", "share", "Stable")]
        assert listed(client, types=("consumer",)) == []
        assert listed(client, types=("share",), states=("empty",)) == []


def listed(
    client: RawClient, types: tuple[str, ...], states: tuple[str, ...] = ()
) -> list[tuple[str, str, str]]:
    """ListGroups v5: the groups with their type and state."""
    from kio.schema.list_groups.v5.request import ListGroupsRequest

    response = client.request(16, 5, ListGroupsRequest(states_filter=states, types_filter=types))
    return [(g.group_id, g.group_type, g.group_state) for g in response.groups]


def after_restart(bootstrap: str) -> None:
    with RawClient(bootstrap) as client:
        assert start_offset(client) == 13  # the acknowledgement survived
        topic_id = join(client, "m2")
        got = fetch(client, "m2", 0, topic_id)
        [partition] = got.responses[0].partitions
        ranges = [
            (r.first_offset, r.last_offset, r.delivery_count) for r in partition.acquired_records
        ]
        assert ranges == [(13, 14, 2)]  # what m1 held comes back, delivered once before
        deleted = client.request(
            20,
            1,
            DeleteTopicsRequest(
                topic_names=(TopicName(TOPIC),), timeout=i32Timedelta.parse(timedelta(seconds=5))
            ),
        )
        assert deleted.responses[0].error_code == ErrorCode.none
        assert share_partitions(client) == 0  # a deleted topic's share state goes with it


async def test_sessions_errors_and_a_restart(tmp_path: Path) -> None:
    async with Broker(tmp_path / "data") as broker:
        await asyncio.to_thread(first_session, broker.bootstrap_servers)
    async with Broker(tmp_path / "data") as broker:
        await asyncio.to_thread(after_restart, broker.bootstrap_servers)
