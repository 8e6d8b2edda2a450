"""Hand-written codecs for the requests and responses a busy broker handles most: no I/O.

kio's generic reader and writer walk each entity's fields and check every value's type
on the way; for a one-partition produce that costs more than the append itself
(librdkafka sends one produce request per partition, so at 1,000 partitions every
request is one small batch). The codecs here read and write the same things with a few
``struct`` calls per partition; ``tests/log_broker/test_hot_codecs.py`` holds them to
kio: the same bytes out, the same entities in, and the same inputs refused (a null
(-1) topic or partition list, which the schema does not allow, included: the generic
path's length guard refuses it too).

Served: Produce v3-v8 requests and responses, Fetch v4-v11 responses (none of them
flexible: request header v1, response header v0).
Reading checks every length against what is left of the frame before taking it, so
nothing is allocated beyond the frame's own size; anything that does not parse, or
leaves bytes over, raises ``ValueError``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from kio.index import load_payload_module
from kio.static.constants import EntityType

PRODUCE_KEY = 0
PRODUCE_VERSIONS = range(3, 9)
FETCH_KEY = 1
FETCH_VERSIONS = range(4, 12)

_HEADER_AND_COUNT = struct.Struct(">iii")  # size, correlation id, topic count
_COUNT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_V3_PARTITION = struct.Struct(">ihqq")  # index, error, base offset, append time
_V5_PARTITION = struct.Struct(">ihqqq")  # ... log start offset
_FETCH_PARTITION = struct.Struct(">ihqq")  # index, error, high watermark, last stable
_LONG = struct.Struct(">q")
_ABORTED = struct.Struct(">qq")  # producer id, first offset
_V7_FETCH_TOP = struct.Struct(">ihi")  # throttle time, error, session id
_REQUEST_HEADER = struct.Struct(">hhih")  # api key, version, correlation id, client id size
_ACKS_AND_TIMEOUT = struct.Struct(">hi")


def _string(value: str | None) -> bytes:
    """A legacy (int16-length) string; -1 for null."""
    if value is None:
        return b"\xff\xff"
    data = value.encode()
    if len(data) > 0x7FFF:
        raise ValueError(f"string of {len(data)} bytes is too long for an int16 length")
    return _SHORT.pack(len(data)) + data


def _millis(moment: datetime | None) -> int:
    return -1 if moment is None else round(moment.timestamp() * 1000)


def _produce_partition(version: int, p: Any) -> bytes:
    if version < 5:
        return _V3_PARTITION.pack(p.index, p.error_code, p.base_offset, _millis(p.log_append_time))
    head = _V5_PARTITION.pack(
        p.index, p.error_code, p.base_offset, _millis(p.log_append_time), p.log_start_offset
    )
    if version < 8:
        return head
    errors = [_COUNT.pack(len(p.record_errors))]
    for e in p.record_errors:
        errors += (_COUNT.pack(e.batch_index), _string(e.batch_index_error_message))
    return b"".join((head, *errors, _string(p.error_message)))


def encode_produce_response(version: int, correlation_id: int, body: Any) -> bytes:
    """A ProduceResponse frame (size prefix, header v0, body) of ``version`` 3-8."""
    parts = [b""]
    for topic in body.responses:
        partitions = topic.partition_responses
        parts += (_string(topic.name), _COUNT.pack(len(partitions)))
        parts += [_produce_partition(version, p) for p in partitions]
    throttle_ms = round(body.throttle_time.total_seconds() * 1000)
    parts.append(_COUNT.pack(throttle_ms))
    size = 8 + sum(len(part) for part in parts)  # correlation id and topic count included
    parts[0] = _HEADER_AND_COUNT.pack(size, correlation_id, len(body.responses))
    return b"".join(parts)


def _fetch_partition(version: int, p: Any) -> list[bytes]:
    parts = [
        _FETCH_PARTITION.pack(
            p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset
        )
    ]
    if version >= 5:
        parts.append(_LONG.pack(p.log_start_offset))
    aborted = p.aborted_transactions
    if aborted is None:
        parts.append(b"\xff\xff\xff\xff")
    else:
        parts.append(_COUNT.pack(len(aborted)))
        parts += [_ABORTED.pack(a.producer_id, a.first_offset) for a in aborted]
    if version >= 11:
        parts.append(_COUNT.pack(p.preferred_read_replica))
    records = p.records
    if records is None:
        parts.append(b"\xff\xff\xff\xff")
    else:
        parts += (_COUNT.pack(len(records)), records)
    return parts


def encode_fetch_response(version: int, correlation_id: int, body: Any) -> bytes:
    """A FetchResponse frame (size prefix, header v0, body) of ``version`` 4-11."""
    return b"".join(fetch_response_parts(version, correlation_id, body))


def fetch_response_parts(version: int, correlation_id: int, body: Any) -> list[bytes]:
    """The frame of :func:`encode_fetch_response` as its parts, the records uncopied."""
    throttle_ms = round(body.throttle_time.total_seconds() * 1000)
    if version >= 7:
        parts = [b"", _V7_FETCH_TOP.pack(throttle_ms, body.error_code, body.session_id)]
    else:
        parts = [b"", _COUNT.pack(throttle_ms)]
    parts.append(_COUNT.pack(len(body.responses)))
    for topic in body.responses:
        partitions = topic.partitions
        parts += (_string(topic.topic), _COUNT.pack(len(partitions)))
        for p in partitions:
            parts += _fetch_partition(version, p)
    size = 4 + sum(len(part) for part in parts)  # the correlation id included
    parts[0] = _COUNT.pack(size) + _COUNT.pack(correlation_id)
    return parts


Encoder = Callable[[int, int, Any], bytes]
Decoder = Callable[[bytes], tuple[int, str | None, Any]]


class _Reader:
    """A position in a frame; every read checks that the bytes are there."""

    __slots__ = ("data", "position")

    def __init__(self, data: bytes, position: int) -> None:
        self.data, self.position = data, position

    def take(self, size: int) -> bytes:
        end = self.position + size
        if size < 0 or end > len(self.data):
            raise ValueError(f"a field of {size} bytes at byte {self.position} of {len(self.data)}")
        chunk = self.data[self.position : end]
        self.position = end
        return chunk

    def unpack(self, form: struct.Struct) -> tuple[Any, ...]:
        if self.position + form.size > len(self.data):
            raise ValueError(f"the request ends inside a field at byte {self.position}")
        values = form.unpack_from(self.data, self.position)
        self.position += form.size
        return values

    def count(self) -> int:
        (count,) = self.unpack(_COUNT)
        if count < 0 or count > len(self.data) - self.position:
            raise ValueError(f"an array of {count} items in {len(self.data) - self.position} bytes")
        return int(count)

    def string(self, nullable: bool = False) -> str | None:
        (size,) = self.unpack(_SHORT)
        if size == -1 and nullable:
            return None
        return self.take(size).decode()

    def nullable_bytes(self) -> bytes | None:
        (size,) = self.unpack(_COUNT)
        return None if size == -1 else self.take(size)


@cache
def _request_module(api_key: int, api_version: int) -> Any:
    return load_payload_module(api_key, api_version, EntityType.request)


def decode_produce_request(frame: bytes) -> tuple[int, str | None, Any]:
    """(correlation id, client id, ProduceRequest) of a v3-v8 request frame."""
    _key, version, correlation_id, _ = _REQUEST_HEADER.unpack_from(frame, 0)
    reader = _Reader(frame, _REQUEST_HEADER.size - 2)
    client_id = reader.string(nullable=True)
    m = _request_module(PRODUCE_KEY, version)
    transactional_id = reader.string(nullable=True)
    acks, timeout_ms = reader.unpack(_ACKS_AND_TIMEOUT)
    topics = []
    for _ in range(reader.count()):
        name = reader.string()
        partitions = []
        for _ in range(reader.count()):
            (index,) = reader.unpack(_COUNT)
            records = reader.nullable_bytes()
            partitions.append(m.PartitionProduceData(index=index, records=records))
        topics.append(m.TopicProduceData(name=name, partition_data=tuple(partitions)))
    if reader.position != len(frame):
        raise ValueError(f"{len(frame) - reader.position} trailing bytes after the request")
    body = m.ProduceRequest(
        transactional_id=transactional_id,
        acks=acks,
        timeout=timedelta(milliseconds=timeout_ms),
        topic_data=tuple(topics),
    )
    return correlation_id, client_id, body


def hot_decoder(api_key: int, api_version: int) -> Decoder | None:
    """The hand-written decoder for this request, or None to use kio's."""
    if api_key == PRODUCE_KEY and api_version in PRODUCE_VERSIONS:
        return decode_produce_request
    return None


def hot_encoder(api_key: int, api_version: int) -> Encoder | None:
    """The hand-written encoder for this response, or None to use kio's."""
    if api_key == PRODUCE_KEY and api_version in PRODUCE_VERSIONS:
        return encode_produce_response
    if api_key == FETCH_KEY and api_version in FETCH_VERSIONS:
        return encode_fetch_response
    return None
