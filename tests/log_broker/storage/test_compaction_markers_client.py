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
from compaction_clients import TxnProducer, disk_batches, is_commit, read, until
from compaction_txn_helpers import snapshot_offsets, unneeded
from kafka_clients import Confluent, Got, unique

from log_broker import _records

pytestmark = pytest.mark.conformance

KEYS = 4
CLEANER = ("--log-cleaner-backoff-ms", "100")
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": "1024",
                "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100"}


def _filler(bs: str, topic: str) -> None:
    """Plain records enough to close the segments holding everything before them."""
    Confluent().produce(bs, topic, [(b"filler", bytes(200)) for _ in range(12)])


def _markers(partition_dir: Path) -> tuple[int, int, list[int]]:
    """COMMIT markers, ABORT markers, and the offsets of the COMMIT markers that nothing
    needs any more (the broker does not release aborted transactions from its index,
    so ABORT markers stay)."""
    found = disk_batches(partition_dir)
    commits = {h.base_offset for data, h in found if h.is_control and is_commit(data, h)}
    aborts = sum(h.is_control for _, h in found) - len(commits)
    left = unneeded([h for _, h in found], snapshot_offsets(partition_dir))
    return len(commits), aborts, [o for o in left if o in commits]


def _superseded_left(partition_dir: Path) -> str | None:
    left = [r.value for data, h in disk_batches(partition_dir) if not h.is_control
            for r in _records.decode_records(data, h) if (r.value or b"").startswith(b"txn ")]
    return f"{len(left)} superseded transactional records left" if left else None


def _seen(got: list[Got]) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(g.offset, g.key, g.value) for g in got if g.key != b"filler"]


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
        _filler(bs, topic)
        latest = {key: (offset, value) for offset, (key, value) in sorted(written.items())}

        def cleaned() -> str | None:
            commits, aborts, unneeded_commits = _markers(partition_dir)
            # Commit markers stay for the transactions with a record left: one per key
            # at most.
            if commits > KEYS or aborts != 16 or unneeded_commits:
                return f"{commits} commit and {aborts} abort markers on disk"
            return None

        until(cleaned, broker)
        committed = _seen(read(bs, topic, "read_committed"))
        assert committed == [(o, k, v) for k, (o, v) in sorted(latest.items(),
                                                                key=lambda kv: kv[1][0])]
        assert committed == _seen(read(bs, topic, "read_uncommitted"))
        batches_left = len(disk_batches(partition_dir))
        assert batches_left < 2 * 81 / 4  # 160 data batches and markers were written

        broker.stop()
        broker.start()
        assert _seen(read(bs, topic, "read_committed")) == committed
        offsets = producer.round(topic, [(b"k0", b"after the restart")], commit=True)
        again = _seen(read(bs, topic, "read_committed"))
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
            _filler(bs, topic)

            if round_ == 0:
                until(lambda: _superseded_left(partition_dir), broker)
                # The broker has written no snapshot since its start: after the kill it
                # rebuilds the producer from the one taken before all this, replaying
                # the cleaned log, where the producer's last data batch is now empty.
                assert sorted(p.name for p in partition_dir.glob("*.producer_snapshot")) == (
                    snapshots)
            else:
                time.sleep(rng.uniform(0.05, 0.6))  # the cleaner at work, or about to be
            broker.kill()
            broker.start()
            seen = read(bs, topic, "read_committed")
            values = {g.key: g.value for g in seen if g.key != b"filler"}
            assert values == expected, (round_, values)
            # Its next transaction goes on from its sequence (refused as out of order
            # if the cleaner had taken the batch holding it).
            offsets = producer.round(topic, [(b"p", f"after kill {round_}".encode())],
                                     commit=True)
            expected[b"p"] = f"after kill {round_}".encode()
            assert read(bs, topic, "read_committed")[-1].offset == offsets[0]

        def cleaned() -> str | None:
            commits, _, unneeded_commits = _markers(partition_dir)
            return f"{commits} commit markers on disk" if unneeded_commits else None

        until(cleaned, broker)  # a few markers stay for the producer-state snapshots
        assert _markers(partition_dir)[0] < 4 * 9 / 4
