"""Records of the internal topic ``__transaction_state``, in Kafka's format.

Key (version 0), the transactional id the record is about::

    version i16 (0) | transactional_id string (i16 length, UTF-8)

Value (version 0), the id's state after a transition; a null value (tombstone) means the
id expired and is forgotten::

    version i16 (0) | producer_id i64 | producer_epoch i16 | transaction_timeout_ms i32 |
    transaction_status i8 | transaction_partitions: i32 count (-1: null) of
        (topic string | partition_ids: i32 count of i32) |
    transaction_last_update_timestamp_ms i64 | transaction_start_timestamp_ms i64

The status numbers are ``TxnState``'s values (Empty 0 ... Dead 6). A transactional id's
records live in partition ``abs(java_hash(id)) % partitions``, as in Kafka, so the
topic reads like Kafka's with its tooling. The topic is compacted: the last record per
key is the id's state.
"""

from __future__ import annotations

import struct

from ._errors import TxnLogRecordError
from ._txn_metadata import TopicPartition, TransactionMetadata, TxnState

TOPIC = "__transaction_state"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_VALUE_HEAD = struct.Struct(">hqhib")
_TIMES = struct.Struct(">qq")


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def partition_for(transactional_id: str, partitions: int) -> int:
    return (java_string_hash(transactional_id) & 0x7FFFFFFF) % partitions


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return _I16.pack(len(raw)) + raw


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self.pos = 0

    def unpack(self, fmt: struct.Struct) -> tuple[int, ...]:
        try:
            values = fmt.unpack_from(self._data, self.pos)
        except struct.error as exc:
            raise TxnLogRecordError(f"record cut short at byte {self.pos}") from exc
        self.pos += fmt.size
        return tuple(values)

    def string(self) -> str:
        (length,) = self.unpack(_I16)
        if length < 0 or self.pos + length > len(self._data):
            raise TxnLogRecordError(f"bad string length {length} at byte {self.pos}")
        raw = self._data[self.pos : self.pos + length]
        self.pos += length
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TxnLogRecordError("string is not UTF-8") from exc

    def done(self) -> None:
        if self.pos != len(self._data):
            raise TxnLogRecordError(f"{len(self._data) - self.pos} unread bytes in record")


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(0) + _string(transactional_id)


def decode_key(data: bytes) -> str:
    reader = _Reader(data)
    (version,) = reader.unpack(_I16)
    if version != 0:
        raise TxnLogRecordError(f"unknown transaction log key version {version}")
    transactional_id = reader.string()
    reader.done()
    return transactional_id


def encode_value(meta: TransactionMetadata) -> bytes:
    out = bytearray(
        _VALUE_HEAD.pack(
            0, meta.producer_id, meta.producer_epoch, meta.timeout_ms, meta.state.value
        )
    )
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(meta.partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out += _I32.pack(len(by_topic))
    for topic, partitions in by_topic.items():
        out += _string(topic)
        out += _I32.pack(len(partitions))
        out += b"".join(_I32.pack(p) for p in partitions)
    out += _TIMES.pack(meta.last_update_ms, meta.start_ms)
    return bytes(out)


def decode_value(transactional_id: str, data: bytes) -> TransactionMetadata:
    reader = _Reader(data)
    version, producer_id, epoch, timeout_ms, status = reader.unpack(_VALUE_HEAD)
    if version != 0:
        raise TxnLogRecordError(f"unknown transaction log value version {version}")
    try:
        state = TxnState(status)
    except ValueError as exc:
        raise TxnLogRecordError(f"unknown transaction status {status}") from exc
    partitions: set[TopicPartition] = set()
    (topics,) = reader.unpack(_I32)
    for _ in range(max(topics, 0)):
        topic = reader.string()
        (count,) = reader.unpack(_I32)
        for _ in range(max(count, 0)):
            (partition,) = reader.unpack(_I32)
            partitions.add(TopicPartition(topic, partition))
    last_update_ms, start_ms = reader.unpack(_TIMES)
    reader.done()
    return TransactionMetadata(
        transactional_id,
        producer_id,
        epoch,
        timeout_ms,
        state,
        frozenset(partitions),
        start_ms,
        last_update_ms,
    )
