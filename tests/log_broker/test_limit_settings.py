"""The limits are settings: each one, changed in server.properties (``headrace broker
--config FILE``, Kafka's key names), takes effect over a real socket."""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from batch_crafting import good, produce_body
from brokerproc import BrokerProcess, free_port
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.fetch.v11 import request as fetch
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta, i64
from rawkafka import RawClient, encode, frame

from headrace.log_broker._server_properties import broker_settings

SETTINGS = {
    "fetch.max.bytes": "100000",
    "socket.request.max.bytes": "500000",
    "max.connections.per.ip": "4",
    "connections.max.idle.ms": "700",
    "socket.request.read.timeout.ms": "700",
    "max.partitions.per.request": "40",
    "message.max.bytes": "3000",
    "offset.metadata.max.bytes": "10",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    tmp = tmp_path_factory.mktemp("settings")
    port = free_port()
    config = tmp / "server.properties"
    lines = [f"listeners=PLAINTEXT://127.0.0.1:{port}", f"log.dirs={tmp / 'data'}"]
    config.write_text("\n".join(lines + [f"{k}={v}" for k, v in SETTINGS.items()]) + "\n")
    with BrokerProcess(tmp / "data", port=port, config=config) as process:
        yield process


def api_versions(client: RawClient) -> int:
    body = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    return int(client.request(18, 3, body).error_code)


def produce(client: RawClient, topic: str, value: bytes) -> int:
    answer = client.request(0, 8, produce_body(topic, good([value])))
    return int(answer.responses[0].partition_responses[0].error_code)


def fetch_body(topic: str, partitions: int, max_bytes: int) -> fetch.FetchRequest:
    return fetch.FetchRequest(
        max_wait=i32Timedelta.parse(timedelta(0)),
        min_bytes=i32(0),
        max_bytes=i32(max_bytes),
        forgotten_topics_data=(),
        topics=(
            fetch.FetchTopic(
                topic=TopicName(topic),
                partitions=tuple(
                    fetch.FetchPartition(
                        partition=i32(p), fetch_offset=i64(0), partition_max_bytes=i32(max_bytes)
                    )
                    for p in range(partitions)
                ),
            ),
        ),
    )


def test_message_max_bytes_is_the_default_of_every_topic(broker: BrokerProcess) -> None:
    with RawClient(broker.bootstrap) as client:
        assert produce(client, "small", b"x" * 2000) == 0
        assert produce(client, "small", b"x" * 4000) == 10  # MESSAGE_TOO_LARGE


def test_fetch_max_bytes_caps_what_a_client_asks_for(broker: BrokerProcess) -> None:
    with RawClient(broker.bootstrap) as client:
        for _ in range(100):
            assert produce(client, "fetched", b"y" * 2500) == 0
        answer = client.request(1, 11, fetch_body("fetched", 1, 2**31 - 1))
        records = answer.responses[0].partitions[0].records
        assert 50_000 < len(records) <= 100_000 + 3_000  # the cap, plus at most one batch


def test_socket_request_max_bytes_closes_a_larger_frame(broker: BrokerProcess) -> None:
    # A well-formed Produce of 400 kB is answered (MESSAGE_TOO_LARGE for its topic);
    # one of 600 kB, past the setting, only closes the connection.
    with RawClient(broker.bootstrap) as client:
        assert produce(client, "small", b"z" * 400_000) == 10
        client.send_raw(frame(encode(0, 8, produce_body("small", good([b"z" * 600_000])))))
        assert client.is_closed_by_peer()


def test_max_connections_per_ip(broker: BrokerProcess) -> None:
    time.sleep(1)  # let connections of earlier tests be closed and counted out
    clients = [RawClient(broker.bootstrap) for _ in range(4)]
    assert all(api_versions(c) == 0 for c in clients)
    refused = RawClient(broker.bootstrap)
    assert refused.is_closed_by_peer()
    for client in [*clients, refused]:
        client.close()


def test_idle_and_half_received_deadlines(broker: BrokerProcess) -> None:
    idle = RawClient(broker.bootstrap)
    half = RawClient(broker.bootstrap)
    half.send_raw(struct.pack(">i", 100) + b"0123456789")
    started = time.monotonic()
    assert idle.is_closed_by_peer(timeout=10)
    assert half.is_closed_by_peer(timeout=10)
    assert time.monotonic() - started < 5  # the defaults are 10 minutes and 30 s
    idle.close()
    half.close()


def test_max_partitions_per_request(broker: BrokerProcess) -> None:
    with RawClient(broker.bootstrap) as fine:
        fine.send_raw(frame(encode(1, 11, fetch_body("t", 30, 1))))
        assert len(fine.recv_frame()) > 0
    with RawClient(broker.bootstrap) as broad:
        broad.send_raw(frame(encode(1, 11, fetch_body("t", 45, 1))))
        assert broad.is_closed_by_peer()


def test_offset_metadata_max_bytes(broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "meta"})
    try:
        consumer.commit(
            offsets=[TopicPartition("small", 0, 1, metadata="short")], asynchronous=False
        )
        with pytest.raises(KafkaException, match="OFFSET_METADATA_TOO_LARGE"):
            consumer.commit(
                offsets=[TopicPartition("small", 0, 1, metadata="far too long")],
                asynchronous=False,
            )
    finally:
        consumer.close()


def test_topic_defaults_are_read_by_their_broker_names_and_hours_become_ms() -> None:
    settings = broker_settings({**SETTINGS, "log.retention.hours": "2"})
    assert settings["fetch_max_bytes"] == 100_000
    assert settings["max_partitions_per_request"] == 40
    assert dict(settings["topic_defaults"]) == {
        "max.message.bytes": "3000",
        "retention.ms": str(2 * 3_600_000),
    }
