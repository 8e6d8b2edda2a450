"""librdkafka (confluent-kafka) transactions and reads against a broker process, a raw
read_committed Fetch, and the batches of a partition read straight from its segment
files, for end-to-end tests of compacting transactional topics."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from brokerproc import BrokerProcess
from compaction_txn_helpers import snapshot_offsets, unneeded
from kafka_clients import Confluent, Got, present, unique
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v11 import request as fetch
from kio.schema.types import TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64
from rawkafka import RawClient

from headrace.log_broker.records import _batches as _records

Seen = tuple[int, bytes | None, bytes | None]  # offset, key, value

# A broker whose cleaner looks for work ten times a second, and a compacted topic whose
# small segments close soon, whose every dirty byte is worth a pass, and whose markers
# and tombstones may go a tenth of a second after a pass first finds them unneeded.
CLEANER = ("--log-cleaner-backoff-ms", "100")
TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": "1024",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "100",
}


class TxnProducer:
    """One transactional confluent-kafka producer; every call blocks until done."""

    def __init__(self, bs: str) -> None:
        from confluent_kafka import Producer

        self.p = Producer(
            {
                "bootstrap.servers": bs,
                "transactional.id": unique("tid"),
                "linger.ms": 5,
                "transaction.timeout.ms": 120_000,
            }
        )
        self.p.init_transactions(20)

    def send(self, topic: str, pairs: Sequence[tuple[bytes, bytes]]) -> list[int]:
        """Begin a transaction and write ``pairs`` in it; their offsets, in order."""
        offsets: list[int] = []
        errors: list[Any] = []

        def delivered(err: Any, msg: Any) -> None:
            if err:
                errors.append(err)
            else:
                offsets.append(msg.offset())

        self.p.begin_transaction()
        for key, value in pairs:
            self.p.produce(topic, value, key, on_delivery=delivered)
        assert self.p.flush(20) == 0 and not errors, errors
        return sorted(offsets)

    def round(self, topic: str, pairs: Sequence[tuple[bytes, bytes]], *, commit: bool) -> list[int]:
        """One whole transaction: its offsets."""
        offsets = self.send(topic, pairs)
        if commit:
            self.p.commit_transaction(20)
        else:
            self.p.abort_transaction(20)
        return offsets


def read(bs: str, topic: str, isolation: str) -> list[Got]:
    """Partition 0 of ``topic`` from its start to its end (for read_committed, to the
    last stable offset)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": unique("g"),
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    got: list[Got] = []
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        last = time.monotonic()
        while time.monotonic() - last < 5:
            for m in c.consume(1000, 0.3):
                error = m.error()
                if error and error.code() == KafkaError._PARTITION_EOF:
                    return got
                if error:
                    raise RuntimeError(str(error))
                got.append(Got(m.key(), m.value(), present(m.partition()), present(m.offset()), 0))
                last = time.monotonic()
    finally:
        c.close()
    return got


def until(check: Callable[[], str | None], broker: BrokerProcess, within: float = 40) -> None:
    """Poll ``check`` (None when satisfied, else why not) until it holds."""
    deadline = time.monotonic() + within
    why: str | None = "never checked"
    while time.monotonic() < deadline:
        why = check()
        if why is None:
            return
        time.sleep(0.3)
    raise AssertionError(f"{why}\n{broker.log()}")


def disk_batches(partition_dir: Path) -> list[tuple[bytes, _records.BatchHeader]]:
    """Every whole batch in the partition's segment files, in offset order, read while
    the broker runs: a read that met a segment being swapped is read again."""
    for _ in range(50):
        found: list[tuple[bytes, _records.BatchHeader]] = []
        try:
            for path in sorted(partition_dir.glob("*.log")):
                data = path.read_bytes()
                found += [(data, h) for h in _records.scan_batches(data, verify_crc=False)]
        except FileNotFoundError:
            continue
        offsets = [h.base_offset for _, h in found]
        if offsets == sorted(set(offsets)):
            return found
        time.sleep(0.05)
    raise AssertionError(f"no consistent read of {partition_dir}")


def is_commit(data: bytes, header: _records.BatchHeader) -> bool:
    """Whether the control batch ``header`` holds a COMMIT marker."""
    return _records.parse_control_record(_records.decode_records(data, header)[0]).commit


def filler(bs: str, topic: str) -> None:
    """Plain records enough to close the segments holding everything before them."""
    Confluent().produce(bs, topic, [(b"filler", bytes(200)) for _ in range(12)])


def seen(got: list[Got]) -> list[Seen]:
    """What a reader got, but for the fillers."""
    return [(g.offset, g.key, g.value) for g in got if g.key != b"filler"]


@dataclass(frozen=True)
class Markers:
    """The markers in a partition's segment files, by offset."""

    commits: set[int]
    aborts: set[int]
    unneeded: list[int]  # of either kind, that nothing needs any more (``unneeded``)


def markers(partition_dir: Path) -> Markers:
    found = disk_batches(partition_dir)
    control = [(data, h) for data, h in found if h.is_control]
    return Markers(
        {h.base_offset for data, h in control if is_commit(data, h)},
        {h.base_offset for data, h in control if not is_commit(data, h)},
        unneeded([h for _, h in found], snapshot_offsets(partition_dir)),
    )


def fetch_committed(bs: str, topic: str) -> tuple[bytes, list[tuple[int, int]]]:
    """One read_committed Fetch (v11) of partition 0 from offset 0 over a raw socket,
    with room for the whole log: the record bytes, and the aborted transactions
    (producer id, first offset) the broker lists for them."""
    body = fetch.FetchRequest(
        max_wait=i32Timedelta.parse(timedelta(0)),
        min_bytes=i32(0),
        max_bytes=i32(1 << 26),
        isolation_level=i8(1),
        forgotten_topics_data=(),
        topics=(
            fetch.FetchTopic(
                topic=TopicName(topic),
                partitions=(
                    fetch.FetchPartition(
                        partition=i32(0), fetch_offset=i64(0), partition_max_bytes=i32(1 << 26)
                    ),
                ),
            ),
        ),
    )
    client = RawClient(bs)
    try:
        response = client.request(1, 11, body)
    finally:
        client.close()
    partition = response.responses[0].partitions[0]
    assert partition.error_code == ErrorCode.none, partition.error_code
    listed = [(a.producer_id, a.first_offset) for a in partition.aborted_transactions or ()]
    return partition.records or b"", listed


def stale_aborts(records: bytes, aborted: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The listed aborted transactions that a read_committed reader of ``records`` would
    end at no ABORT marker: the first marker of their producer from their first offset
    on is a COMMIT, or there is none. Such a reader skips the producer's transactional
    batches from there to its next abort marker, committed ones too."""
    headers = list(_records.scan_batches(records, verify_crc=False))
    stale = []
    for producer_id, first_offset in aborted:
        ending = next(
            (
                h
                for h in headers
                if h.is_control and h.producer_id == producer_id and h.base_offset >= first_offset
            ),
            None,
        )
        if ending is None or is_commit(records, ending):
            stale.append((producer_id, first_offset))
    return stale
