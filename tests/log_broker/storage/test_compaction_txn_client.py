"""librdkafka (confluent-kafka), unchanged, writes transactions to a compacted topic and
reads it back after the broker's cleaner ran: committed records compacted, aborted ones
gone, an open transaction and everything after it left alone until it commits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from brokerproc import BrokerProcess
from compaction_clients import TxnProducer, read, until
from kafka_clients import Confluent, unique

pytestmark = pytest.mark.conformance

KEYS = 8
SEGMENT_BYTES = 2048


def _pairs(round_: int) -> list[tuple[bytes, bytes]]:
    return [(f"key-{i}".encode(), f"round {round_} of key {i} ".encode() * 4) for i in range(KEYS)]


def test_transactions_on_a_compacted_topic_compact_to_the_latest_committed_values(
    tmp_path: Path,
) -> None:
    with BrokerProcess(tmp_path / "data", "--log-cleaner-backoff-ms", "200") as broker:
        bs = broker.bootstrap
        topic = unique("txn-compacted")
        Confluent().create_topic(
            bs,
            topic,
            1,
            {
                "cleanup.policy": "compact",
                "segment.bytes": str(SEGMENT_BYTES),
                "min.cleanable.dirty.ratio": "0.01",
                "delete.retention.ms": "100",
            },
        )
        writer, other = TxnProducer(bs), TxnProducer(bs)
        value_at: dict[int, tuple[bytes, bytes]] = {}
        aborted_values: set[bytes] = set()
        for round_ in range(10):
            commit = round_ % 3 != 1
            offsets = writer.round(topic, _pairs(round_), commit=commit)
            value_at.update(zip(offsets, _pairs(round_), strict=True))
            if not commit:
                aborted_values.update(v for _, v in _pairs(round_))
        # A transaction left open by another producer: nothing from here on may be
        # compacted, and read_committed readers stop here, until it commits.
        [open_offset] = other.send(topic, [(b"key-0", b"open")])
        for round_ in range(10, 13):
            offsets = writer.round(topic, _pairs(round_), commit=True)
            value_at.update(zip(offsets, _pairs(round_), strict=True))
        filler = [(b"filler", os.urandom(200)) for _ in range(3 * SEGMENT_BYTES // 200)]
        writer.round(topic, filler, commit=True)  # pushes everything above into closed segments

        def below_open_compacted() -> str | None:
            seen = read(bs, topic, "read_uncommitted")
            below = [g for g in seen if g.offset < open_offset]
            if len(below) != KEYS:
                return f"{len(below)} records below the open transaction, want {KEYS}"
            # The open transaction and everything after it: intact.
            later = [
                (g.offset, g.value) for g in seen if g.offset >= open_offset and g.key != b"filler"
            ]
            assert later == [(open_offset, b"open")] + [
                (o, value_at[o][1]) for o in sorted(value_at) if o > open_offset
            ]
            return None

        until(below_open_compacted, broker)
        committed = read(bs, topic, "read_committed")
        assert (
            [(g.key, g.value) for g in committed]
            == [  # stops at the open transaction
                value_at[o] for o in sorted(o for o in value_at if o < open_offset)[-KEYS:]
            ]
        )
        assert not aborted_values & {g.value for g in committed}

        other.p.commit_transaction(20)
        expected = {key: (offset, value) for offset, (key, value) in sorted(value_at.items())}

        def all_compacted() -> str | None:
            seen = [g for g in read(bs, topic, "read_committed") if g.key != b"filler"]
            got = {g.key: (g.offset, g.value) for g in seen}
            if len(seen) != KEYS or got != expected:
                return f"read_committed saw {len(seen)} keyed records: {sorted(got.items())}"
            return None

        until(all_compacted, broker)
        everything = read(bs, topic, "read_uncommitted")
        assert not aborted_values & {g.value for g in everything}  # aborted data removed
        assert b"open" not in {g.value for g in everything}  # committed, then superseded

        broker.stop()
        broker.start()
        assert all_compacted() is None  # the same after a restart
