"""Structure-aware fuzzing of record batches: well-framed batches (valid length and
CRC) with malformed content. Whatever the mutation, a batch is either refused with a
record error and leaves the log as it was, or stored and then decodes completely,
record for record, with contiguous offsets."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from batch_crafting import (
    ATTRIBUTES_AT,
    COUNT_AT,
    LAST_OFFSET_DELTA_AT,
    reseal,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from headrace.log_broker import _record_walk, _records
from headrace.log_broker._batch_validation import BatchRules, validate_batches
from headrace.log_broker.storage import PartitionLog, StorageError, TopicConfig
from headrace.log_broker.storage._compression import compress, decompress

RECORD_ERRORS = {2, 10, 87}  # CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD
# Header fields by (offset, struct format); the CRC and batchLength are fixed by reseal.
FIELDS = [(12, ">i"), (ATTRIBUTES_AT, ">h"), (LAST_OFFSET_DELTA_AT, ">i"), (27, ">q"),
          (35, ">q"), (43, ">q"), (51, ">h"), (53, ">i"), (COUNT_AT, ">i")]  # fmt: skip
EDGES = [0, 1, -1, 2, 7, 0x10, 0x20, 0x40, 0x7F, 0x80, 0xFF, 2**15 - 1, -(2**15), 2**31 - 1,
         -(2**31), 2**63 - 1, -(2**63), 1_000_000]  # fmt: skip


@st.composite
def records(draw: st.DrawFn) -> list[_records.Record]:
    count = draw(st.integers(1, 6))
    blob = st.one_of(st.none(), st.binary(max_size=40))
    return [
        _records.Record(
            i, 1_000 + draw(st.integers(-5, 5)), draw(blob), draw(blob),
            tuple(draw(st.lists(st.tuples(st.text(max_size=5), blob), max_size=2))),
        )
        for i in range(count)
    ]  # fmt: skip


def _fits(fmt: str, value: int) -> int:
    bits = struct.calcsize(fmt) * 8
    return (value + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)


@st.composite
def mutated_batches(draw: st.DrawFn) -> bytes:
    codec = draw(st.sampled_from(list(_records.Compression)))
    batch = bytearray(_records.encode_batch(draw(records())))
    body = bytes(batch[_records.HEADER_SIZE :])
    for _ in range(draw(st.integers(0, 3))):  # mutate the record bytes
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "append"]))
        at = draw(st.integers(0, max(len(body) - 1, 0)))
        if kind == "flip" and body:
            body = body[:at] + bytes([draw(st.integers(0, 255))]) + body[at + 1 :]
        elif kind == "insert":
            body = body[:at] + draw(st.binary(min_size=1, max_size=12)) + body[at:]
        elif kind == "delete":
            body = body[:at] + body[at + draw(st.integers(1, 12)) :]
        elif kind == "truncate":
            body = body[:at]
        else:
            body += draw(st.binary(min_size=1, max_size=12))
    if codec is not _records.Compression.NONE:
        body = compress(codec, body)
        struct.pack_into(">h", batch, ATTRIBUTES_AT, int(codec))
        if draw(st.booleans()):  # damage the compressed stream itself
            at = draw(st.integers(0, len(body) - 1))
            body = body[:at] + bytes([draw(st.integers(0, 255))]) + body[at + 1 :]
    batch = batch[: _records.HEADER_SIZE] + body
    for _ in range(draw(st.integers(0, 3))):  # mutate header fields
        at, fmt = draw(st.sampled_from(FIELDS))
        value = draw(st.one_of(st.sampled_from(EDGES), st.integers(-300, 300)))
        struct.pack_into(fmt, batch, at, _fits(fmt, value))
    return reseal(batch)


def _check_stored(log: PartitionLog) -> None:
    """Every stored batch decodes whole, its records' offsets run on without a gap."""
    data = log.read(log.log_start_offset, 1 << 24)
    expected = log.log_start_offset
    for header in _records.scan_batches(data):
        found = _records.decode_records(data, header)
        assert len(found) == header.records_count == header.last_offset_delta + 1
        assert [r.offset for r in found] == list(range(expected, expected + len(found)))
        for record in found:
            for name, _value in record.headers:
                assert isinstance(name, str)
        expected += len(found)
    assert expected == log.log_end_offset


@pytest.mark.parametrize("policy", ["delete", "compact"])
def test_mutated_batches_are_refused_or_stored_whole(tmp_path: Path, policy: str) -> None:
    config = TopicConfig.from_overrides({"cleanup.policy": policy})
    log = PartitionLog.open(tmp_path / "t-0", "t", 0, config)
    outcome = {"stored": 0, "refused": 0}

    @settings(max_examples=5000, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(mutated_batches())
    def attack(batch: bytes) -> None:
        end = log.log_end_offset
        try:
            log.append(bytearray(batch), now_ms=1)
        except StorageError as exc:
            assert exc.error_code in RECORD_ERRORS, exc
            assert log.log_end_offset == end
            outcome["refused"] += 1
        else:
            outcome["stored"] += 1

    attack()
    _check_stored(log)
    log.close()
    # Both branches were exercised: the mutations are not all fatal, nor all harmless.
    assert outcome["stored"] > 100 and outcome["refused"] > 1000, outcome


def _high_record_attributes(batch: bytes) -> bool:
    """Whether a record's attributes byte has its top bit set, seen the Python way.

    aiokafka's decoder reads that byte as a varint, so for such records the two walkers
    part ways (the compiled one refuses nearly all of them; see ``_record_walk``)."""
    try:
        header = _records.parse_batches(batch)[0]
        body = batch[_records.HEADER_SIZE :]
        if header.compression:
            body = decompress(header.compression, body, 1 << 20)
        pos = 0
        for _ in range(max(header.records_count, 0)):
            length, pos = _records._read_varint(body, pos)
            if pos < len(body) and body[pos] >= 0x80:
                return True
            pos += max(length, 0)
    except (StorageError, IndexError):
        return False
    return False


def _verdict(batch: bytes, rules: BatchRules) -> int:
    try:
        validate_batches(batch, _records.parse_batches(batch), rules)
    except StorageError as exc:
        return exc.error_code
    return 0


@pytest.mark.parametrize("compact", [False, True], ids=["delete", "compact"])
def test_the_compiled_and_python_walkers_agree(
    monkeypatch: pytest.MonkeyPatch, compact: bool
) -> None:
    rules = BatchRules(max_message_bytes=1 << 20, require_keys=compact, inflate_limit=1 << 20)

    @settings(max_examples=2500, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(mutated_batches())
    def compare(batch: bytes) -> None:
        assume(not _high_record_attributes(batch))
        compiled = _verdict(batch, rules)
        with monkeypatch.context() as patch:
            patch.setattr(_record_walk, "_CDefaultRecordBatch", None)
            python = _verdict(batch, rules)
        assert compiled == python

    compare()
