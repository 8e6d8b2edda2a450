"""Lengths in a request are checked before kio decodes it: a valid request of any
shape walks to its exact end, and an array or string length past the end of the frame is
refused as a malformed request instead of reaching kio, whose native decoder aborts the
whole process when it cannot reserve what a length asks for."""

from __future__ import annotations

import struct
from datetime import timedelta

import pytest
from brokerproc import BrokerProcess
from kio.index import load_request_schema
from kio.schema.create_topics.v5.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.fetch.v11 import request as fetch
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v8 import request as produce
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64
from rawkafka import RawClient, encode, frame, record_batch

from headrace.log_broker._entities import make
from headrace.log_broker._errors import MalformedRequestError
from headrace.log_broker._length_guard import RequestLengthError, check_body
from headrace.log_broker._wire import decode_request

REQUESTS = [
    (
        0,
        8,
        produce.ProduceRequest(
            transactional_id=None,
            acks=i16(-1),
            timeout=i32Timedelta.parse(timedelta(seconds=1)),
            topic_data=(
                produce.TopicProduceData(
                    name=TopicName("t"),
                    partition_data=(
                        produce.PartitionProduceData(
                            index=i32(0), records=Records(record_batch([b"a", b"b"]))
                        ),
                        produce.PartitionProduceData(index=i32(1), records=None),
                    ),
                ),
            ),
        ),
    ),
    (
        1,
        11,
        fetch.FetchRequest(
            replica_id=BrokerId(-1),
            max_wait=i32Timedelta.parse(timedelta(0)),
            min_bytes=i32(1),
            max_bytes=i32(1 << 20),
            isolation_level=i8(1),
            session_id=i32(0),
            session_epoch=i32(-1),
            topics=(
                fetch.FetchTopic(
                    topic=TopicName("t"),
                    partitions=(
                        fetch.FetchPartition(
                            partition=i32(0),
                            current_leader_epoch=i32(-1),
                            fetch_offset=i64(0),
                            log_start_offset=i64(-1),
                            partition_max_bytes=i32(1 << 20),
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
            rack_id="",
        ),
    ),
    (
        3,
        12,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name=TopicName("t")),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    ),
    (
        19,
        5,
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=TopicName("t"),
                    num_partitions=i32(3),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(CreatableTopicConfig(name="retention.ms", value="1000"),),
                ),
            ),
            timeout=i32Timedelta.parse(timedelta(seconds=1)),
            validate_only=False,
        ),
    ),
]


def _header_size(payload: bytes) -> int:
    (client_id_length,) = struct.unpack_from(">h", payload, 8)
    size = 10 + max(client_id_length, 0)
    flexible = load_request_schema(*struct.unpack_from(">hh", payload, 0)).__flexible__
    return int(size + 1 if flexible else size)  # v2 headers end with an empty tagged section


@pytest.mark.parametrize(("api_key", "version", "body"), REQUESTS, ids=lambda v: str(v)[:20])
def test_valid_requests_walk_to_their_end(api_key: int, version: int, body: object) -> None:
    payload = encode(api_key, version, body)
    schema = load_request_schema(api_key, version)
    assert check_body(schema, payload, _header_size(payload)) == len(payload)
    # Cut anywhere inside the body, and the walk says so instead of reading past the end.
    for cut in range(_header_size(payload), len(payload)):
        with pytest.raises(RequestLengthError):
            if check_body(schema, payload[:cut], _header_size(payload)) != cut:
                raise RequestLengthError("stopped short")  # ended early: a trailing-bytes case


def _huge_first_array(flexible: bool) -> bytes:
    """A request whose first field, an array, claims two billion entries: Metadata v4's
    topics (an int32 count), or ListTransactions v0's state filters (a compact count)."""
    api_key, version, body = (
        (66, 0, make(load_request_schema(66, 0)))
        if flexible
        else (3, 4, make(load_request_schema(3, 4), topics=(), allow_auto_topic_creation=False))
    )
    payload = encode(api_key, version, body)
    head = payload[: _header_size(payload)]
    count = b"\xff\xff\xff\xff\x0f" if flexible else struct.pack(">i", 2**31 - 1)
    return head + count + b"\x00" * 8


@pytest.mark.parametrize("flexible", [False, True])
def test_a_length_past_the_frame_is_refused_before_kio(flexible: bool) -> None:
    with pytest.raises(MalformedRequestError, match="items in"):
        decode_request(_huge_first_array(flexible))


def test_the_broker_survives_the_requests_that_aborted_it(broker_process: BrokerProcess) -> None:
    for flexible in (False, True):
        attacker = RawClient(broker_process.bootstrap)
        try:
            attacker.send_raw(frame(_huge_first_array(flexible)))
            assert attacker.is_closed_by_peer()  # refused as malformed: the connection closes
        finally:
            attacker.close()
    client = RawClient(broker_process.bootstrap)
    try:
        answer = client.request(
            3, 4, make(load_request_schema(3, 4), topics=None, allow_auto_topic_creation=False)
        )
        assert answer.brokers  # still serving
    finally:
        client.close()


def test_a_null_array_is_refused_where_the_schema_has_a_list() -> None:
    """kio reads a null array as None even where the schema allows none, and the
    handler then fails on it (AlterUserScramCredentials' deletions, found by fuzzing)."""
    payload = encode(51, 0, make(load_request_schema(51, 0), deletions=(), upsertions=()))
    start = _header_size(payload)
    assert payload[start] == 1  # a compact array's count + 1: empty
    null_deletions = payload[:start] + b"\x00" + payload[start + 1 :]
    with pytest.raises(MalformedRequestError, match="null array"):
        decode_request(null_deletions)
    # Where the schema allows null (Metadata's topics: all of them), it still passes.
    metadata = encode(
        3, 4, make(load_request_schema(3, 4), topics=None, allow_auto_topic_creation=False)
    )
    assert decode_request(metadata).body.topics is None
