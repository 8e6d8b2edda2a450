"""librdkafka (confluent-kafka), unchanged, runs many small transactions on a compacted
topic of a broker process: the cleaner removes the COMMIT markers of transactions whose
records were all compacted away, the log shrinks, and read_committed readers read
exactly the records they read before; after SIGKILLs while the cleaner runs, the log
reads the same and the same transactional producer goes on where its sequence left
off, even when the broker rebuilt its state from a snapshot older than the cleaning."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from brokerproc import BrokerProcess
from compaction_clients import (
    CLEANER,
    TOPIC_CONFIG,
    TxnProducer,
    disk_batches,
    filler,
    markers,
    read,
    seen,
    until,
)
from kafka_clients import Confluent, unique

from headrace.log_broker.records import _batches as _records

pytestmark = [pytest.mark.conformance, pytest.mark.slow]

KEYS = 4


def _unneeded_commits(partition_dir: Path) -> tuple[int, list[int]]:
    """COMMIT markers on disk, and those of them that nothing needs any more."""
    found = markers(partition_dir)
    return len(found.commits), [o for o in found.unneeded if o in found.commits]


def _superseded_left(partition_dir: Path) -> str | None:
    left = [
        r.value
        for data, h in disk_batches(partition_dir)
        if not h.is_control
        for r in _records.decode_records(data, h)
        if (r.value or b"").startswith(b"txn ")
    ]
    return f"{len(left)} superseded transactional records left" if left else None


def test_commit_markers_go_and_read_committed_reads_the_same(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data", *CLEANER) as broker:
        bs, topic = broker.bootstrap, unique("markers")
        Confluent().create_topic(bs, topic, 1, TOPIC_CONFIG)
        partition_dir = tmp_path / "data" / f"{topic}-0"
        producer = TxnProducer(bs)
        written: dict[int, tuple[bytes, bytes]] = {}  # committed records by offset
        for i in range(80):  # every fifth transaction aborted
            pairs = [(f"k{i % KEYS}".encode(), f"v{i}".encode())]
            offsets = producer.round(topic, pairs, commit=i % 5 != 4)
            if i % 5 != 4:
                written.update(zip(offsets, pairs, strict=True))
        filler(bs, topic)
        latest = {key: (offset, value) for offset, (key, value) in sorted(written.items())}

        def cleaned() -> str | None:
            commits, unneeded_commits = _unneeded_commits(partition_dir)
            # Commit markers stay for the transactions with a record left: one per key
            # at most. (Abort markers go too, but later: test_compaction_abort_markers.)
            if commits > KEYS or unneeded_commits:
                return f"{commits} commit markers on disk"
            return None

        until(cleaned, broker)
        committed = seen(read(bs, topic, "read_committed"))
        assert committed == [
            (o, k, v) for k, (o, v) in sorted(latest.items(), key=lambda kv: kv[1][0])
        ]
        assert committed == seen(read(bs, topic, "read_uncommitted"))
        batches_left = len(disk_batches(partition_dir))
        assert batches_left < 2 * 81 / 4  # 160 data batches and markers were written

        broker.stop()
        broker.start()
        assert seen(read(bs, topic, "read_committed")) == committed
        offsets = producer.round(topic, [(b"k0", b"after the restart")], commit=True)
        again = seen(read(bs, topic, "read_committed"))
        assert again[-1] == (offsets[0], b"k0", b"after the restart")


def test_sigkills_while_cleaning_leave_what_readers_saw_and_the_producer_goes_on(
    tmp_path: Path,
) -> None:
    rng = random.Random(7)
    with BrokerProcess(tmp_path / "data", *CLEANER) as broker:
        bs, topic = broker.bootstrap, unique("killed")
        Confluent().create_topic(bs, topic, 1, TOPIC_CONFIG)
        partition_dir = tmp_path / "data" / f"{topic}-0"
        producer, plain = TxnProducer(bs), Confluent()
        producer.round(topic, [(b"p", b"first")], commit=True)
        broker.stop()  # a snapshot of the producer's state at the log end
        broker.start()
        snapshots = sorted(p.name for p in partition_dir.glob("*.producer_snapshot"))
        expected: dict[bytes, bytes] = {b"p": b"first"}
        for round_ in range(4):
            for i in range(12):  # records that the plain writes below supersede
                pairs = [(f"k{i % KEYS}".encode(), f"txn {round_}.{i}".encode())]
                producer.round(topic, pairs, commit=i % 4 != 3)
            plain_pairs = [(f"k{i}".encode(), f"plain {round_}".encode()) for i in range(KEYS)]
            plain.produce(bs, topic, plain_pairs)
            expected.update(plain_pairs)
            filler(bs, topic)

            if round_ == 0:
                until(lambda: _superseded_left(partition_dir), broker)
                # The broker has written no snapshot since its start: after the kill it
                # rebuilds the producer from the one taken before all this, replaying
                # the cleaned log, where the producer's last data batch is now empty.
                assert sorted(p.name for p in partition_dir.glob("*.producer_snapshot")) == (
                    snapshots
                )
            else:
                time.sleep(rng.uniform(0.05, 0.6))  # the cleaner at work, or about to be
            broker.kill()
            broker.start()
            got = read(bs, topic, "read_committed")
            values = {g.key: g.value for g in got if g.key != b"filler"}
            assert values == expected, (round_, values)
            # Its next transaction goes on from its sequence (refused as out of order
            # if the cleaner had taken the batch holding it).
            offsets = producer.round(topic, [(b"p", f"after kill {round_}".encode())], commit=True)
            expected[b"p"] = f"after kill {round_}".encode()
            assert read(bs, topic, "read_committed")[-1].offset == offsets[0]

        def cleaned() -> str | None:
            commits, unneeded_commits = _unneeded_commits(partition_dir)
            return f"{commits} commit markers on disk" if unneeded_commits else None

        until(cleaned, broker)  # a few markers stay for the producer-state snapshots
        assert _unneeded_commits(partition_dir)[0] < 4 * 9 / 4
