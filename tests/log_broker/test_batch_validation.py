"""Every produced batch is checked down to its records; a bad one is never stored."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest
from batch_crafting import good, malformed

from headrace.log_broker.records import RecordError, _walk
from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import PartitionLog, TopicConfig

CASES = malformed()


@pytest.fixture(params=[_walk.COMPILED, _walk.AIOKAFKA, _walk.PYTHON])
def walker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run each case with every record walker the broker may use (``records._walk``)."""
    name = str(request.param)
    monkeypatch.setattr(_walk, "_walker", name)
    assert _walk.record_walker() == name, f"the {name} record walker is missing"
    return name


def open_log(tmp_path: Path, compact: bool = False) -> PartitionLog:
    settings = {"cleanup.policy": "compact"} if compact else {}
    return PartitionLog.open(tmp_path / "t-0", "t", 0, TopicConfig.from_overrides(settings))


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("compact", [False, True], ids=["delete", "compact"])
def test_malformed_batch_is_refused_and_stores_nothing(
    tmp_path: Path, walker: str, name: str, compact: bool
) -> None:
    batch, code = CASES[name]
    log = open_log(tmp_path, compact)
    log.append(bytearray(good()), now_ms=1)
    with pytest.raises(RecordError) as refused:
        log.append(bytearray(batch), now_ms=2)
    assert refused.value.error_code == code, str(refused.value)
    assert log.log_end_offset == 2
    log.append(bytearray(good()), now_ms=3)
    assert [r.value for r in _all(log)] == [b"v0", b"v1", b"v0", b"v1"]
    log.close()


@pytest.mark.parametrize(
    "compression", [c for c in _records.Compression if c is not _records.Compression.NONE]
)
def test_well_formed_batches_of_every_codec_pass(
    tmp_path: Path, walker: str, compression: _records.Compression
) -> None:
    log = open_log(tmp_path, compact=True)
    log.append(bytearray(good([b"a" * 1000, b"b"], compression=compression)), now_ms=1)
    assert [r.value for r in _all(log)] == [b"a" * 1000, b"b"]
    log.close()


def test_keyless_record_on_a_compacted_topic(tmp_path: Path, walker: str) -> None:
    log = open_log(tmp_path, compact=True)
    with pytest.raises(RecordError) as refused:
        log.append(bytearray(good(key=None)), now_ms=1)
    assert refused.value.error_code == 87
    log.close()


def test_a_decompression_bomb_costs_bounded_memory_and_time(tmp_path: Path) -> None:
    # Finding: a 64 KiB zstd batch inflating to GiBs took 4.1 GiB and stalled 8.7 s.
    batch, _code = CASES["zstd bomb"]
    assert len(batch) < 64 * 1024
    log = open_log(tmp_path, compact=True)
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    with pytest.raises(RecordError):
        log.append(bytearray(batch), now_ms=1)
    assert time.monotonic() - started < 2.0
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    assert grown_kib < 400 * 1024
    log.close()


def _all(log: PartitionLog) -> list[_records.Record]:
    data = log.read(log.log_start_offset, 1 << 24)
    return [r for h in _records.scan_batches(data) for r in _records.decode_records(data, h)]


def test_binary_values_and_headers_are_read_exactly_and_pass(tmp_path: Path, walker: str) -> None:
    # Random bytes hold runs of high bytes, so the aiokafka walker leaves these to
    # Kafka's reading in Python (_kafka_record_reader); the compiled one reads them all.
    values = [bytes((i * 131 + j * 17) % 256 for j in range(300)) for i in range(50)]
    records = [
        _records.Record(i, 1_000 + i, b"k", v, (("h\u00e9", b"\xff" * 9), ("n", None)))
        for i, v in enumerate(values)
    ]
    log = open_log(tmp_path, compact=True)
    log.append(bytearray(_records.encode_batch(records)), now_ms=1)
    assert [r.value for r in _all(log)] == values
    log.close()
