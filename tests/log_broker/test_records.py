from __future__ import annotations

import struct

import cramjam
import pytest
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headrace.log_broker.records import CorruptRecordError, InvalidRecordError, RecordError
from headrace.log_broker.records import _batches as _records
from headrace.log_broker.records._batches import Compression, Record
from headrace.log_broker.records._compression import compress, decompress


def test_exports_are_pinned() -> None:
    assert sorted(_records.__all__) == sorted(
        [
            "HEADER_SIZE",
            "LOG_OVERHEAD",
            "BatchHeader",
            "BatchScan",
            "Compression",
            "ControlMarker",
            "ControlRecordType",
            "Record",
            "TimestampType",
            "decode_records",
            "encode_batch",
            "encode_control_batch",
            "parse_batches",
            "parse_control_record",
            "patch_base_offset",
            "read_header",
            "scan_batches",
            "set_log_append_time",
            "without_producer_ids",
        ]
    )


def _records_of(n: int, ts: int = 1_000) -> list[Record]:
    return [Record(i, ts + i, b"k%d" % i, b"value-%d" % i, (("h", b"x"),)) for i in range(n)]


def _two_batches() -> bytearray:
    return bytearray(_records.encode_batch(_records_of(3)) + _records.encode_batch(_records_of(2)))


# ------------------------------------------------------------------ header parsing


def test_parse_batches_reads_every_header() -> None:
    data = _two_batches()
    first, second = _records.parse_batches(data)
    assert (first.position, second.position) == (0, first.size)
    assert first.size + second.size == len(data)
    assert (first.records_count, first.last_offset_delta) == (3, 2)
    assert (second.records_count, second.last_offset) == (2, 1)
    assert first.base_timestamp == 1_000 and first.max_timestamp == 1_002
    assert first.magic == 2 and first.producer_id == -1
    assert first.compression is Compression.NONE and not first.is_control
    assert first.size == first.batch_length + _records.LOG_OVERHEAD


def test_parse_accepts_memoryview_and_bytes() -> None:
    data = _two_batches()
    assert _records.parse_batches(bytes(data)) == _records.parse_batches(memoryview(data))


def test_empty_payload_parses_to_nothing() -> None:
    assert _records.parse_batches(b"") == []


def test_bad_crc_is_corrupt() -> None:
    data = _two_batches()
    data[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC") as info:
        _records.parse_batches(data)
    assert info.value.retriable and isinstance(info.value, RecordError)


@pytest.mark.parametrize("cut", [1, 30, 61, 70])
def test_trailing_partial_batch_is_corrupt(cut: int) -> None:
    data = _two_batches()
    first_size = _records.parse_batches(data)[0].size
    with pytest.raises(CorruptRecordError):
        _records.parse_batches(data[: first_size + cut])


def test_wrong_magic_is_invalid() -> None:
    data = _two_batches()
    data[16] = 1
    with pytest.raises(InvalidRecordError, match="magic"):
        _records.parse_batches(data)
    assert not InvalidRecordError.retriable


def test_negative_records_count_is_invalid() -> None:
    data = bytearray(_records.encode_batch(_records_of(1)))
    struct.pack_into(">i", data, 57, -1)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    with pytest.raises(InvalidRecordError, match="records count"):
        _records.parse_batches(data)


def test_impossible_batch_length_is_corrupt() -> None:
    data = bytearray(_records.encode_batch(_records_of(1)))
    struct.pack_into(">i", data, 8, 10)
    with pytest.raises(CorruptRecordError, match="length"):
        _records.parse_batches(data)


def test_unknown_codec_is_invalid() -> None:
    data = bytearray(_records.encode_batch(_records_of(1)))
    struct.pack_into(">h", data, 21, 6)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    with pytest.raises(InvalidRecordError, match="codec"):
        _records.parse_batches(data)


# ------------------------------------------------------------------ scanning


def test_scan_stops_at_a_torn_batch_and_reports_where_data_ends() -> None:
    data = _two_batches()
    first = _records.parse_batches(data)[0]
    scan = _records.scan_batches(data[:-5])
    assert [h.position for h in scan] == [0]
    assert scan.end == first.size and scan.incomplete


def test_scan_stops_at_garbage_without_calling_it_incomplete() -> None:
    data = _two_batches() + b"\x00" * 200
    scan = _records.scan_batches(data)
    assert len(list(scan)) == 2
    assert scan.end == len(data) - 200 and not scan.incomplete


def test_scan_stops_at_bad_crc_unless_told_not_to_check() -> None:
    data = _two_batches()
    data[-1] ^= 0xFF
    assert len(list(_records.scan_batches(data))) == 1
    assert len(list(_records.scan_batches(data, verify_crc=False))) == 2


def test_scan_from_a_start_position() -> None:
    data = _two_batches()
    first = _records.parse_batches(data)[0]
    scan = _records.scan_batches(data, first.size)
    assert [h.position for h in scan] == [first.size] and scan.end == len(data)


# ------------------------------------------------------------------ patching


def test_patch_base_offset_keeps_crc_valid() -> None:
    data = _two_batches()
    second = _records.parse_batches(data)[1]
    _records.patch_base_offset(data, second.position, 1234)
    headers = _records.parse_batches(data)
    assert headers[1].base_offset == 1234 and headers[1].last_offset == 1235
    assert [r.offset for r in _records.decode_records(data, headers[1])] == [1234, 1235]


def test_set_log_append_time_recomputes_crc() -> None:
    data = _two_batches()
    _records.set_log_append_time(data, 0, 99_999)
    header = _records.parse_batches(data)[0]  # would raise on a stale CRC
    assert header.timestamp_type is _records.TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 99_999
    assert {r.timestamp for r in _records.decode_records(data, header)} == {99_999}


# ------------------------------------------------------------------ codecs


@pytest.mark.parametrize("codec", list(Compression))
def test_codecs_round_trip(codec: Compression) -> None:
    payload = b"".join(b"record %d " % i for i in range(20_000))  # > one xerial block
    assert decompress(codec, compress(codec, payload)) == payload


def test_snappy_reads_raw_blocks_as_librdkafka_writes_them() -> None:
    payload = b"abc" * 1000
    assert decompress(2, bytes(cramjam.snappy.compress_raw(payload))) == payload


def test_snappy_writes_xerial_framing() -> None:
    assert compress(2, b"hello").startswith(b"\x82SNAPPY\x00")


def test_damaged_compressed_data_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError):
        decompress(4, b"definitely not zstd")


# ------------------------------------------------------------------ records

_header_names = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)
_maybe_bytes = st.one_of(st.none(), st.binary(max_size=64))
_record_bodies = st.tuples(
    st.integers(-1, 2**42),  # -1 is Kafka's 'no timestamp'
    _maybe_bytes,
    _maybe_bytes,
    st.lists(st.tuples(_header_names, _maybe_bytes), max_size=3),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bodies=st.lists(_record_bodies, min_size=1, max_size=12),
    gaps=st.lists(st.integers(1, 5), min_size=12, max_size=12),
    base=st.integers(0, 2**40),
    codec=st.sampled_from(list(Compression)),
)
def test_encode_decode_round_trip(
    bodies: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    gaps: list[int],
    base: int,
    codec: Compression,
) -> None:
    offset = base
    records = []
    for (timestamp, key, value, headers), gap in zip(bodies, gaps, strict=False):
        records.append(Record(offset, timestamp, key, value, tuple(headers)))
        offset += gap
    data = _records.encode_batch(records, compression=codec)
    (header,) = _records.parse_batches(data)
    assert header.compression is codec
    assert header.base_offset == base and header.last_offset == records[-1].offset
    assert header.max_timestamp == max(r.timestamp for r in records)
    assert _records.decode_records(data, header) == records


def test_compacted_batch_keeps_its_last_offset_delta() -> None:
    data = _records.encode_batch([Record(10, 5, b"k", b"v")], base_offset=7, last_offset_delta=9)
    (header,) = _records.parse_batches(data)
    assert (header.base_offset, header.last_offset, header.records_count) == (7, 16, 1)


def test_encode_rejects_offsets_that_do_not_increase() -> None:
    with pytest.raises(ValueError, match="increase"):
        _records.encode_batch([Record(1, 0, None, b""), Record(1, 0, None, b"")])


# ------------------------------------------------------------------ a real client as oracle


def _aiokafka_batch(codec: int, records: list[Record]) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for r in records:
        builder.append(
            r.offset, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers)
        )
    return bytes(builder.build())


def test_uncompressed_encoding_is_byte_identical_to_aiokafka() -> None:
    records = _records_of(5)
    assert _records.encode_batch(records) == _aiokafka_batch(0, records)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_aiokafka_reads_ours_and_we_read_aiokafkas(codec: int) -> None:
    records = _records_of(50)
    theirs = _aiokafka_batch(codec, records)
    (header,) = _records.parse_batches(theirs)
    assert _records.decode_records(theirs, header) == records

    ours = _records.encode_batch(records, compression=Compression(codec))
    batch = DefaultRecordBatch(ours)
    assert batch.validate_crc() and batch.compression_type == codec
    assert [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for r in records
    ]


# ------------------------------------------------------------------ transaction markers


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch_round_trip(commit: bool) -> None:
    data = _records.encode_control_batch(
        producer_id=42,
        producer_epoch=3,
        commit=commit,
        coordinator_epoch=7,
        timestamp_ms=5_000,
        base_offset=100,
    )
    (header,) = _records.parse_batches(data)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_offset) == (42, 3, 100)
    (record,) = _records.decode_records(data, header)
    assert _records.parse_control_record(record) == _records.ControlMarker(commit, 7)
    assert record.key == struct.pack(">hh", 0, 1 if commit else 0)

    batch = DefaultRecordBatch(data)  # a real client recognises the marker
    assert batch.is_control_batch and batch.is_transactional and batch.validate_crc()


def test_unknown_control_type_is_invalid() -> None:
    with pytest.raises(InvalidRecordError, match="control record type"):
        _records.parse_control_record(Record(0, 0, struct.pack(">hh", 0, 9), b"\x00" * 6))


def test_batches_without_producer_ids_are_told_from_the_headers() -> None:
    plain = _records.encode_batch(_records_of(3))
    idempotent = _records.encode_batch(_records_of(2), producer_id=7, producer_epoch=0)
    assert _records.without_producer_ids(b"")
    assert _records.without_producer_ids(plain)
    assert _records.without_producer_ids(plain + plain)
    assert not _records.without_producer_ids(idempotent)
    assert not _records.without_producer_ids(plain + idempotent)
    # unsure: a batch cut short, or bytes that are not a whole batch
    assert not _records.without_producer_ids(plain + plain[:-1])
    assert not _records.without_producer_ids(plain[:40])
    assert not _records.without_producer_ids(plain + b"\0" * 12)
