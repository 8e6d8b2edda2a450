"""librdkafka (confluent-kafka), unchanged, runs many small transactions on a compacted
topic of a broker process, a good share of them aborted, and each producer commits
right after aborting: the cleaner removes the ABORT markers once the partition's
aborted-transaction index has released their transactions, the log shrinks, and a
read_committed reader reads exactly the committed records, before, after, and after a
restart; no read_committed Fetch ever names an aborted transaction whose marker is
gone (a reader told of one would skip the producer's later committed records); and
SIGKILLs while the markers are being removed leave a log that reads the same."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from brokerproc import BrokerProcess
from compaction_clients import (
    CLEANER,
    TOPIC_CONFIG,
    Seen,
    TxnProducer,
    disk_batches,
    fetch_committed,
    filler,
    is_commit,
    markers,
    read,
    seen,
    stale_aborts,
    until,
)
from kafka_clients import Confluent, present, unique

from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage._retain import delete_horizon

pytestmark = [pytest.mark.conformance, pytest.mark.slow]

KEYS = 4
# A running broker writes the released index every 10 s, and the cleaner retries a
# marker held back for it 30 s later (``HELD_BACK_RETRY_MS``).
RELEASED_WITHIN = 90.0


def _round(
    producers: Sequence[TxnProducer], topic: str, count: int, tag: str
) -> dict[int, tuple[bytes, bytes]]:
    """``count`` one-record transactions over ``producers`` in turn, every third
    aborted; then each producer aborts one more and at once commits a record under a
    key of its own, which nothing supersedes. The committed records, by offset."""
    committed: dict[int, tuple[bytes, bytes]] = {}
    for i in range(count):
        pairs = [(f"k{i % KEYS}".encode(), f"{tag}.{i}".encode())]
        commit = i % 3 != 0
        offsets = producers[i % len(producers)].round(topic, pairs, commit=commit)
        if commit:
            committed.update(zip(offsets, pairs, strict=True))
    for j, producer in enumerate(producers):
        producer.round(topic, [(b"k0", f"aborted {tag}.{j}".encode())], commit=False)
        pairs = [(f"last {j}".encode(), f"{tag} after an abort".encode())]
        committed.update(zip(producer.round(topic, pairs, commit=True), pairs, strict=True))
    return committed


def _latest(committed: dict[int, tuple[bytes, bytes]]) -> list[Seen]:
    """What a read_committed reader of the compacted log reads: each key's last
    committed record, in offset order."""
    last = {key: (offset, value) for offset, (key, value) in sorted(committed.items())}
    return sorted((offset, key, value) for key, (offset, value) in last.items())


def _unstale_fetch(bs: str, topic: str) -> list[tuple[int, int]]:
    """The aborted transactions a read_committed Fetch lists, each checked to end at an
    ABORT marker in the records it returned."""
    records, listed = fetch_committed(bs, topic)
    assert stale_aborts(records, listed) == [], listed
    return listed


def _cleaned(bs: str, topic: str, partition_dir: Path, most_aborts: int) -> str | None:
    """None once no marker is left that nothing needs and at most ``most_aborts`` abort
    markers stay (those a producer-state snapshot's replay may need); every
    read_committed Fetch on the way is checked."""
    _unstale_fetch(bs, topic)
    found = markers(partition_dir)
    if found.unneeded or len(found.aborts) > most_aborts:
        return f"{len(found.aborts)} abort markers, {len(found.unneeded)} unneeded markers"
    return None


def _stamped(partition_dir: Path) -> str | None:
    """None once the aborted records are gone and every abort marker has a delete
    horizon: the pass that stamped them asked the index to release them."""
    batches = disk_batches(partition_dir)
    aborted = [
        r
        for data, h in batches
        if not h.is_control and h.is_transactional
        for r in _records.decode_records(data, h)
        if (r.value or b"").startswith(b"aborted")
    ]
    unstamped = [
        h.base_offset
        for data, h in batches
        if h.is_control and not is_commit(data, h) and delete_horizon(h) is None
    ]
    if aborted or unstamped:
        return f"{len(aborted)} aborted records, {len(unstamped)} unstamped abort markers"
    return None


def test_abort_markers_go_and_read_committed_reads_the_same(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data", *CLEANER) as broker:
        bs, topic = broker.bootstrap, unique("aborts")
        Confluent().create_topic(bs, topic, 1, TOPIC_CONFIG)
        partition_dir = tmp_path / "data" / f"{topic}-0"
        producers = [TxnProducer(bs), TxnProducer(bs)]
        committed = _round(producers, topic, 90, "a")
        filler(bs, topic)
        expected = _latest(committed)

        # Before (or while) the cleaner removes them: only committed records, each at
        # its offset, and every key's last one.
        before = seen(read(bs, topic, "read_committed"))
        assert {(o, k, v) for o, k, v in before} <= {(o, k, v) for o, (k, v) in committed.items()}
        assert set(expected) <= set(before)

        until(lambda: _cleaned(bs, topic, partition_dir, 2 * 2), broker, RELEASED_WITHIN)
        after = seen(read(bs, topic, "read_committed"))
        assert after == expected
        assert seen(read(bs, topic, "read_uncommitted")) == expected
        assert _unstale_fetch(bs, topic) == []  # no aborted transaction has a record left
        assert len(markers(partition_dir).aborts) <= 4  # of the 32 written
        # 94 data batches and as many markers were written (the cleaner works all the
        # while, so no earlier look at the disk sees them all).
        assert len(disk_batches(partition_dir)) < 2 * 94 / 6

        broker.stop()
        broker.start()
        assert seen(read(bs, topic, "read_committed")) == expected
        assert _unstale_fetch(bs, topic) == []
        # Each producer goes on: an abort and a commit right after it, read as before.
        more = _round(producers, topic, 6, "b")
        assert seen(read(bs, topic, "read_committed"))[-2:] == sorted(
            (o, k, v) for o, (k, v) in more.items() if k.startswith(b"last")
        )
        _unstale_fetch(bs, topic)


def test_sigkills_while_abort_markers_go_leave_a_log_that_reads_the_same(
    tmp_path: Path,
) -> None:
    rng = random.Random(11)
    with BrokerProcess(tmp_path / "data", *CLEANER) as broker:
        bs, topic = broker.bootstrap, unique("aborts-killed")
        Confluent().create_topic(bs, topic, 1, TOPIC_CONFIG)
        partition_dir = tmp_path / "data" / f"{topic}-0"
        producers = [TxnProducer(bs), TxnProducer(bs)]
        expected: dict[bytes, bytes] = {}
        for round_ in range(4):
            committed = _round(producers, topic, 18, f"r{round_}")
            expected.update((present(k), present(v)) for _, k, v in _latest(committed))
            filler(bs, topic)
            until(lambda: _stamped(partition_dir), broker)
            # A clean stop writes the index without the transactions the stamping pass
            # asked to release: after the start the next pass may remove their markers.
            broker.stop()
            broker.start()
            assert {k: v for _, k, v in seen(read(bs, topic, "read_committed"))} == expected
            aborts = len(markers(partition_dir).aborts)
            filler(bs, topic)  # something dirty: a pass now
            if round_ % 2 == 0:  # kill as soon as a pass has swapped markers out
                deadline = time.monotonic() + 20
                while len(markers(partition_dir).aborts) == aborts:
                    assert time.monotonic() < deadline, broker.log()
                    time.sleep(0.01)
            else:
                time.sleep(rng.uniform(0.0, 0.4))  # the cleaner at work, or about to be
            broker.kill()
            broker.start()

            got = seen(read(bs, topic, "read_committed"))
            assert {k: v for _, k, v in got} == expected, round_
            _unstale_fetch(bs, topic)
            # The producers go on; their commits right after an abort are read.
            for j, producer in enumerate(producers):
                producer.round(topic, [(b"k1", b"aborted after the kill")], commit=False)
                pairs = [(f"last {j}".encode(), f"after kill {round_}".encode())]
                producer.round(topic, pairs, commit=True)
                expected.update(pairs)
            got = seen(read(bs, topic, "read_committed"))
            assert {k: v for _, k, v in got} == expected, round_
            _unstale_fetch(bs, topic)

        filler(bs, topic)
        until(lambda: _stamped(partition_dir), broker)
        broker.stop()
        broker.start()
        read(bs, topic, "read_committed")  # loads the partition's transaction state
        filler(bs, topic)
        until(lambda: _cleaned(bs, topic, partition_dir, 2 * 2), broker)
        assert {k: v for _, k, v in seen(read(bs, topic, "read_committed"))} == expected
