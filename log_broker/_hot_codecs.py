"""Hand-written encoders for the responses a busy broker sends most: no I/O.

kio's generic writer walks each entity's fields and checks every value's type on the
way; for a one-partition produce answer that costs more than the append it reports
(librdkafka sends one produce request per partition, so at 1,000 partitions every
request is one small answer). The encoders here write the same bytes with one
``struct`` call per partition; ``tests/log_broker/test_hot_codecs.py`` holds them to
kio's output, byte for byte, for every version they serve.

Served: Produce v3-v8 (never flexible, response header v0).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from datetime import datetime
from typing import Any

PRODUCE_KEY = 0
PRODUCE_VERSIONS = range(3, 9)

_HEADER_AND_COUNT = struct.Struct(">iii")  # size, correlation id, topic count
_COUNT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_V3_PARTITION = struct.Struct(">ihqq")  # index, error, base offset, append time
_V5_PARTITION = struct.Struct(">ihqqq")  # ... log start offset


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


Encoder = Callable[[int, int, Any], bytes]


def hot_encoder(api_key: int, api_version: int) -> Encoder | None:
    """The hand-written encoder for this response, or None to use kio's."""
    if api_key == PRODUCE_KEY and api_version in PRODUCE_VERSIONS:
        return encode_produce_response
    return None
