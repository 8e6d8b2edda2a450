"""Bad input gets the answer the protocol prescribes, and loses nothing."""

from __future__ import annotations

import asyncio
import struct
from datetime import timedelta
from typing import Any

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v11 import request as fetch
from kio.schema.list_offsets.v5 import request as list_offsets
from kio.schema.metadata.v8.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v8 import request as produce
from kio.schema.types import BrokerId, TopicName, TransactionalId
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64
from rawkafka import RawClient, encode, frame, record_batch


def produce_body(topic: str, records: bytes, partition: int = 0) -> Any:
    return produce.ProduceRequest(
        acks=i16(-1),
        timeout=i32Timedelta.parse(timedelta(seconds=5)),
        topic_data=(
            produce.TopicProduceData(
                name=TopicName(topic),
                partition_data=(
                    produce.PartitionProduceData(index=i32(partition), records=Records(records)),
                ),
            ),
        ),
    )


def fetch_body(topic: str, offset: int) -> Any:
    return fetch.FetchRequest(
        max_wait=i32Timedelta.parse(timedelta(0)),
        min_bytes=i32(0),
        forgotten_topics_data=(),
        topics=(
            fetch.FetchTopic(
                topic=TopicName(topic),
                partitions=(
                    fetch.FetchPartition(
                        partition=i32(0), fetch_offset=i64(offset), partition_max_bytes=i32(1 << 20)
                    ),
                ),
            ),
        ),
    )


def end_offset(client: RawClient, topic: str) -> int:
    body = list_offsets.ListOffsetsRequest(
        replica_id=BrokerId(-1),
        isolation_level=i8(0),
        topics=(
            list_offsets.ListOffsetsTopic(
                name=TopicName(topic),
                partitions=(
                    list_offsets.ListOffsetsPartition(partition_index=i32(0), timestamp=i64(-1)),
                ),
            ),
        ),
    )
    response = client.request(2, 5, body)
    return int(response.topics[0].partitions[0].offset)


async def in_thread(fn: Any, *args: Any) -> Any:
    return await asyncio.to_thread(fn, *args)


async def test_bad_crc_is_refused_and_appends_nothing(broker: Any) -> None:
    def scenario() -> None:
        client = RawClient(broker.bootstrap_servers)
        good = client.request(0, 8, produce_body("crc", record_batch([b"a", b"b"])))
        assert good.responses[0].partition_responses[0].error_code == ErrorCode.none
        corrupt = bytearray(record_batch([b"c", b"d"]))
        corrupt[-1] ^= 0xFF  # inside the CRC-covered part
        bad = client.request(0, 8, produce_body("crc", bytes(corrupt)))
        assert bad.responses[0].partition_responses[0].error_code == ErrorCode.corrupt_message
        assert end_offset(client, "crc") == 2
        client.close()

    await in_thread(scenario)


async def test_invalid_topic_name(broker: Any) -> None:
    def scenario() -> None:
        client = RawClient(broker.bootstrap_servers)
        for name in ("bad/name", "x" * 250, ".."):
            response = client.request(0, 8, produce_body(name, record_batch([b"a"])))
            code = response.responses[0].partition_responses[0].error_code
            assert code == ErrorCode.invalid_topic_exception, name
            md = client.request(
                3,
                8,
                MetadataRequest(
                    topics=(MetadataRequestTopic(name=TopicName(name)),),
                    allow_auto_topic_creation=True,
                    include_cluster_authorized_operations=False,
                    include_topic_authorized_operations=False,
                ),
            )
            assert md.topics[0].error_code == ErrorCode.invalid_topic_exception
        client.close()

    await in_thread(scenario)


async def test_offset_out_of_range(broker: Any) -> None:
    def scenario() -> None:
        client = RawClient(broker.bootstrap_servers)
        client.request(0, 8, produce_body("range", record_batch([b"a", b"b", b"c"])))
        inside = client.request(1, 11, fetch_body("range", 1))
        assert inside.responses[0].partitions[0].error_code == ErrorCode.none
        beyond = client.request(1, 11, fetch_body("range", 99))
        partition = beyond.responses[0].partitions[0]
        assert partition.error_code == ErrorCode.offset_out_of_range
        assert partition.high_watermark == 3
        client.close()

    await in_thread(scenario)


async def test_api_versions_unsupported_version_answers_in_v0(broker: Any) -> None:
    def scenario() -> None:
        client = RawClient(broker.bootstrap_servers)
        request = bytearray(
            encode(
                18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 9
            )
        )
        struct.pack_into(">h", request, 2, 77)  # a version from the future
        client.send_raw(frame(bytes(request)))
        response = client.decode(18, 0, client.recv_frame(), 9)
        assert response.error_code == ErrorCode.unsupported_version
        versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert versions[18] == (0, 4)
        assert versions[0] == (3, 8)
        assert versions[1] == (4, 11)
        client.close()

    await in_thread(scenario)


async def test_unknown_api_and_oversized_frame_close_only_that_connection(broker: Any) -> None:
    def scenario() -> None:
        bystander = RawClient(broker.bootstrap_servers)
        assert bystander.request(
            18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        unknown = RawClient(broker.bootstrap_servers)
        unknown.send_raw(frame(struct.pack(">hhi", 9999, 0, 1) + b"\0\0"))
        assert unknown.is_closed_by_peer()
        old_version = RawClient(broker.bootstrap_servers)
        old_version.send_raw(frame(struct.pack(">hhi", 0, 0, 1) + b"\0\0"))  # Produce v0
        assert old_version.is_closed_by_peer()
        huge = RawClient(broker.bootstrap_servers)
        huge.send_raw(struct.pack(">i", 2**31 - 1) + b"only a little")
        assert huge.is_closed_by_peer()
        response = bystander.request(
            18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        assert response.error_code == ErrorCode.none
        for c in (bystander, unknown, old_version, huge):
            c.close()

    await in_thread(scenario)


async def test_clients_cannot_write_or_delete_internal_topics(broker: Any) -> None:
    from kio.schema.delete_topics.v3.request import DeleteTopicsRequest

    def scenario() -> None:
        client = RawClient(broker.bootstrap_servers)
        for internal in ("__consumer_offsets", "__transaction_state"):
            before = end_offset(client, internal)
            response = client.request(0, 8, produce_body(internal, record_batch([b"x"])))
            code = response.responses[0].partition_responses[0].error_code
            assert code == ErrorCode.invalid_topic_exception
            assert end_offset(client, internal) == before
            deleted = client.request(
                20,
                3,
                DeleteTopicsRequest(
                    topic_names=(TopicName(internal),),
                    timeout=i32Timedelta.parse(timedelta(seconds=5)),
                ),
            )
            assert deleted.responses[0].error_code == ErrorCode.invalid_topic_exception
            md = client.request(
                3,
                8,
                MetadataRequest(
                    topics=(MetadataRequestTopic(name=TopicName(internal)),),
                    allow_auto_topic_creation=False,
                    include_cluster_authorized_operations=False,
                    include_topic_authorized_operations=False,
                ),
            )
            assert md.topics[0].error_code == ErrorCode.none and md.topics[0].is_internal
        client.close()

    await in_thread(scenario)


async def test_transaction_timeout_above_the_broker_maximum_is_refused(tmp_path: Any) -> None:
    from kio.schema.init_producer_id.v0.request import InitProducerIdRequest

    from headrace.log_broker import Broker

    async with Broker(tmp_path / "data", transaction_max_timeout_ms=2000) as running:

        def scenario() -> None:
            client = RawClient(running.bootstrap_servers)
            too_long = client.request(
                22,
                0,
                InitProducerIdRequest(
                    transactional_id=TransactionalId("payments"),
                    transaction_timeout=i32Timedelta.parse(timedelta(seconds=5)),
                ),
            )
            assert too_long.error_code == ErrorCode.invalid_transaction_timeout
            fine = client.request(
                22,
                0,
                InitProducerIdRequest(
                    transactional_id=TransactionalId("payments"),
                    transaction_timeout=i32Timedelta.parse(timedelta(seconds=1)),
                ),
            )
            assert fine.error_code == ErrorCode.none and fine.producer_id >= 0
            client.close()

        await in_thread(scenario)
