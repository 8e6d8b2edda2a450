"""Batches and logs for storage tests, made with the project's own encoder."""

from __future__ import annotations

from pathlib import Path

from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import PartitionLog, TopicConfig


def batch(
    count: int = 10,
    *,
    timestamp: int = 1_000,
    value_size: int = 20,
    tag: int = 0,
    compression: _records.Compression = _records.Compression.NONE,
) -> bytearray:
    """A produce-style batch (base offset 0) of ``count`` records with timestamps
    ``timestamp``, ``timestamp + 1``, ...; ``tag`` makes values distinguishable."""
    records = [
        _records.Record(i, timestamp + i, f"k{i}".encode(), bytes([tag % 256]) * value_size)
        for i in range(count)
    ]
    return bytearray(_records.encode_batch(records, compression=compression))


def open_log(directory: Path, **overrides: object) -> PartitionLog:
    config = TopicConfig.from_overrides({k.replace("_", "."): str(v) for k, v in overrides.items()})
    return PartitionLog.open(directory / "t-0", "t", 0, config)


def offsets_in(data: bytes) -> list[tuple[int, int]]:
    """(base offset, last offset) of every batch in a read result."""
    return [(h.base_offset, h.last_offset) for h in _records.parse_batches(data)]


def all_records(log: PartitionLog) -> list[_records.Record]:
    """Every record from the log start to the end, read as a consumer would."""
    out: list[_records.Record] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        assert data, f"empty read at {offset}"
        for header in _records.parse_batches(data):
            out.extend(r for r in _records.decode_records(data, header) if r.offset >= offset)
            offset = header.last_offset + 1
    return out
