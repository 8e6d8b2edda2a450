"""librdkafka (confluent-kafka) transactions and reads against a broker process, and the
batches of a partition read straight from its segment files, for end-to-end tests of
compacting transactional topics."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from brokerproc import BrokerProcess
from kafka_clients import Got, unique

from log_broker import _records


class TxnProducer:
    """One transactional confluent-kafka producer; every call blocks until done."""

    def __init__(self, bs: str) -> None:
        from confluent_kafka import Producer

        self.p = Producer({"bootstrap.servers": bs, "transactional.id": unique("tid"),
                           "linger.ms": 5, "transaction.timeout.ms": 120_000})
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

    def round(self, topic: str, pairs: Sequence[tuple[bytes, bytes]], *, commit: bool
              ) -> list[int]:
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

    c = Consumer({"bootstrap.servers": bs, "group.id": unique("g"),
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True})
    got: list[Got] = []
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        last = time.monotonic()
        while time.monotonic() - last < 5:
            for m in c.consume(1000, 0.3):
                if m.error() and m.error().code() == KafkaError._PARTITION_EOF:
                    return got
                if m.error():
                    raise RuntimeError(str(m.error()))
                got.append(Got(m.key(), m.value(), m.partition(), m.offset(), 0))
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
