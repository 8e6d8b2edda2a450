"""A fetched partition's records, and the raw fetch response they hold, are freed by
reference counting as soon as the fetcher drops them, without waiting for the cyclic
garbage collector: a streaming loop runs full collections rarely (``_gc.py``), and a
reference cycle there kept every fetch response alive until one ran, which grew the
application's heap by hundreds of MiB a minute under load (``memory_soak.py``)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka.consumer import fetcher
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.structs import TopicPartition

from headrace.streams.runtime import _aiokafka_internals as internals

RECORDS = 1_000


def _raw_batch() -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for i in range(RECORDS):
        builder.append(i, timestamp=1_000 + i, key=b"k%d" % i, value=b"v" * 100, headers=[])
    return bytes(builder.build())


@pytest.fixture
def no_cyclic_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _partition_records() -> Any:
    assert internals.install_tuple_fetch()
    return fetcher.PartitionRecords(
        TopicPartition("t", 0),
        MemoryRecords(_raw_batch()),
        None,
        0,
        internals.AS_TUPLES,
        None,
        False,
        0,  # read_uncommitted: the tuple path
    )


@pytest.mark.usefixtures("no_cyclic_gc")
@pytest.mark.parametrize("taken", [0, RECORDS // 2, RECORDS])
def test_partition_records_are_freed_without_the_cyclic_collector(taken: int) -> None:
    records = _partition_records()
    assert records._tuple_mode
    got = records.take(taken) if taken else []
    assert [r[2] for r in got] == list(range(taken))
    gone = weakref.ref(records)
    del records, got
    assert gone() is None, "the fetched records (and their fetch response) are in a cycle"


@pytest.mark.usefixtures("no_cyclic_gc")
def test_records_taken_one_at_a_time_still_come_in_order() -> None:
    records = _partition_records()
    offsets = [r[2] for r in records]
    assert offsets == list(range(RECORDS))
    gone = weakref.ref(records)
    del records
    assert gone() is None
