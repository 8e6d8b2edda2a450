"""The harness reads batch flags and markers off the wire itself; check it against batches
built by aiokafka (data) and by the broker's marker encoder (control)."""

from __future__ import annotations

import struct

from peers.harness import Batch, parse_batches

from headrace.log_broker.records._batches import encode_control_batch


def _data_batch(base_offset: int, values: list[bytes], producer_id: int) -> bytes:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=True,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=0,
        batch_size=1 << 20,
    )
    for i, value in enumerate(values):
        builder.append(i, timestamp=1_700_000_000_000, key=b"k", value=value, headers=[])
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)  # outside the CRC, as a broker assigns it
    return bytes(data)


def _marker(base_offset: int, commit: bool) -> bytes:
    return encode_control_batch(
        producer_id=7,
        producer_epoch=0,
        commit=commit,
        coordinator_epoch=0,
        timestamp_ms=1_700_000_000_000,
        base_offset=base_offset,
    )


def test_batches_flags_and_markers() -> None:
    data = (
        _data_batch(10, [b"a", b"b", b"c"], 7)
        + _marker(13, commit=True)
        + _data_batch(14, [b"d"], 7)
        + _marker(15, commit=False)
    )
    assert parse_batches(2, data) == [
        Batch(2, 10, 12, 3, 7, transactional=True, control=False, marker=None),
        Batch(2, 13, 13, 1, 7, transactional=True, control=True, marker="commit"),
        Batch(2, 14, 14, 1, 7, transactional=True, control=False, marker=None),
        Batch(2, 15, 15, 1, 7, transactional=True, control=True, marker="abort"),
    ]


def test_a_batch_cut_short_by_the_fetch_is_left_out() -> None:
    whole = _data_batch(0, [b"a"], 3)
    cut = _data_batch(1, [b"b" * 100], 3)[:-20]
    assert [b.base_offset for b in parse_batches(0, whole + cut)] == [0]
    assert parse_batches(0, cut[:30]) == []
