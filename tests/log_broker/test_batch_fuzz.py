"""Structure-aware fuzzing of record batches: well-framed batches (valid length and
CRC) with malformed content. Whatever the mutation, a batch is either refused with a
record error and leaves the log as it was, or stored and then decodes completely,
record for record, with contiguous offsets."""

from __future__ import annotations

from pathlib import Path

import pytest
from batch_crafting import mutated_batches
from hypothesis import HealthCheck, given, settings

from headrace.log_broker.records import RecordError, _walk
from headrace.log_broker.records import _batches as _records
from headrace.log_broker.records._compression import decompress
from headrace.log_broker.records._validation import BatchRules, validate_batches
from headrace.log_broker.storage import PartitionLog, TopicConfig

RECORD_ERRORS = {2, 10, 87}  # CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD


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

    @settings(
        max_examples=3000, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(mutated_batches())
    def attack(batch: bytes) -> None:
        end = log.log_end_offset
        try:
            log.append(bytearray(batch), now_ms=1)
        except RecordError as exc:
            assert exc.error_code in RECORD_ERRORS, exc
            assert log.log_end_offset == end
            outcome["refused"] += 1
        else:
            outcome["stored"] += 1

    attack()
    _check_stored(log)
    log.close()
    # Both branches were exercised: the mutations are not all fatal, nor all harmless.
    assert outcome["stored"] > 60 and outcome["refused"] > 600, outcome


def _high_record_attributes(batch: bytes) -> bool:
    """Whether a record's attributes byte has its top bit set, seen the Python way.

    aiokafka's decoder reads that byte as a varint, so for such records the aiokafka
    walker and Kafka's reading part ways (see ``records._aiokafka_walk``)."""
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
    except (RecordError, IndexError):
        return False
    return False


def _verdict(batch: bytes, rules: BatchRules) -> tuple[int, str]:
    try:
        validate_batches(batch, _records.parse_batches(batch), rules)
    except RecordError as exc:
        return exc.error_code, str(exc)
    return 0, ""


@pytest.mark.parametrize("compact", [False, True], ids=["delete", "compact"])
def test_the_record_walkers_agree(monkeypatch: pytest.MonkeyPatch, compact: bool) -> None:
    rules = BatchRules(max_message_bytes=1 << 20, require_keys=compact, inflate_limit=1 << 20)
    walkers = (_walk.COMPILED, _walk.AIOKAFKA, _walk.PYTHON)
    for name in walkers:
        with monkeypatch.context() as patch:
            patch.setattr(_walk, "_walker", name)
            assert _walk.record_walker() == name, f"the {name} record walker is missing"

    @settings(
        max_examples=1500, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(mutated_batches())
    def compare(batch: bytes) -> None:
        verdicts = {}
        for name in walkers:
            with monkeypatch.context() as patch:
                patch.setattr(_walk, "_walker", name)
                verdicts[name] = _verdict(batch, rules)
        # The compiled walker translates the Python one: the same verdict, in the same words.
        assert verdicts[_walk.COMPILED] == verdicts[_walk.PYTHON]
        # aiokafka's decoder words its refusals its own way, and reads high attributes bytes
        # otherwise; everywhere else it earns the same error code.
        if not _high_record_attributes(batch):
            assert verdicts[_walk.AIOKAFKA][0] == verdicts[_walk.PYTHON][0]

    compare()
