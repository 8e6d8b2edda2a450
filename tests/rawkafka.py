"""A raw Kafka-protocol client for tests that must send exactly the bytes they choose."""

from __future__ import annotations

import io
import socket
import struct
from datetime import timedelta
from typing import Any

from kio.index import load_response_schema
from kio.schema.create_topics.v4.request import CreatableTopic, CreateTopicsRequest
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as HeaderV1
from kio.schema.request_header.v2.header import RequestHeader as HeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32, i32Timedelta


def encode(api_key: int, version: int, body: Any, correlation_id: int = 1) -> bytes:
    """Header plus body, without the size prefix."""
    header_cls = HeaderV2 if body.__flexible__ else HeaderV1
    buf = io.BytesIO()
    entity_writer(header_cls)(
        buf,
        header_cls(
            request_api_key=i16(api_key),
            request_api_version=i16(version),
            correlation_id=i32(correlation_id),
            client_id="test",
        ),
    )
    entity_writer(type(body))(buf, body)
    return buf.getvalue()


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def record_batch(values: list[bytes], key: bytes | None = b"k") -> bytes:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 24,
    )
    for i, value in enumerate(values):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=key, value=value, headers=[])
    return bytes(builder.build())


class RawClient:
    def __init__(self, bootstrap: str, timeout: float = 10) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._recv_exact(4))[0]
        return self._recv_exact(size)

    def _recv_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed by broker")
            data += chunk
        return data

    def request(self, api_key: int, version: int, body: Any) -> Any:
        self._correlation += 1
        self.send_raw(frame(encode(api_key, version, body, self._correlation)))
        return self.decode(api_key, version, self.recv_frame(), self._correlation)

    @staticmethod
    def decode(api_key: int, version: int, data: bytes, correlation_id: int) -> Any:
        schema = load_response_schema(api_key, version)
        header_cls: type[ResponseHeaderV0 | ResponseHeaderV1] = (
            ResponseHeaderV1 if schema.__flexible__ and api_key != 18 else ResponseHeaderV0
        )
        header, used = entity_reader(header_cls)(data, 0)
        assert header.correlation_id == correlation_id
        body, body_used = entity_reader(schema)(data, used)
        assert used + body_used == len(data)
        return body

    def is_closed_by_peer(self, timeout: float = 5) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


def create_topic(client: RawClient, topic: str, partitions: int = 1) -> None:
    got = client.request(
        19,  # CreateTopics
        4,
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=TopicName(topic),
                    num_partitions=i32(partitions),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=i32Timedelta.parse(timedelta(seconds=10)),
        ),
    )
    assert got.topics[0].error_code == ErrorCode.none
