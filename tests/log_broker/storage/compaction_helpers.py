"""Keyed batches and a brute-force model of what compaction keeps, for compaction tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from storage_batches import all_records

from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import PartitionLog, TopicConfig

Pair = tuple[bytes | None, bytes | None]


def keyed(
    pairs: Sequence[Pair],
    *,
    timestamp: int = 1_000,
    compression: _records.Compression = _records.Compression.NONE,
    producer_id: int = -1,
    transactional: bool = False,
) -> bytearray:
    """A produce-style batch of (key, value) records, timestamps from ``timestamp``."""
    records = [_records.Record(i, timestamp + i, k, v) for i, (k, v) in enumerate(pairs)]
    return bytearray(
        _records.encode_batch(
            records,
            compression=compression,
            producer_id=producer_id,
            producer_epoch=0 if producer_id >= 0 else -1,
            base_sequence=0 if producer_id >= 0 else -1,
            is_transactional=transactional,
        )
    )


def compacted_log(directory: Path, **overrides: object) -> PartitionLog:
    settings = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}
    settings.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
    return PartitionLog.open(directory / "t-0", "t", 0, TopicConfig.from_overrides(settings))


def snapshot(log: PartitionLog) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [(r.offset, r.timestamp, r.key, r.value) for r in all_records(log)]


def expected_after_clean(
    records: Sequence[tuple[int, int, bytes | None, bytes | None]], clean_end: int
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Brute force: below ``clean_end`` only each key's last record stays (tombstones
    too, on a first pass); from ``clean_end`` on everything stays."""
    last: dict[bytes, int] = {}
    for offset, _ts, key, _value in records:
        if key is not None and offset < clean_end:
            last[key] = offset
    return [
        r for r in records if r[0] >= clean_end or (r[2] is not None and last.get(r[2]) == r[0])
    ]
