"""A transactional batch is appended only inside a transaction the coordinator knows
(KIP-890's verification): its transactional id names this producer id and epoch, and
AddPartitionsToTxn put this partition in the ongoing transaction. Anything else is
refused with the code Kafka answers, appends nothing, and leaves the last stable offset
free, so read_committed readers are never stopped by a transaction nobody can end."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode
from raw_txn_requests import RawTxn, batch, produce_code, read_committed
from rawkafka import RawClient, create_topic

MADE_UP_PID = 987_654


def _after(client: RawClient, topic: str, refused: ErrorCode, expected: ErrorCode) -> None:
    """The refusal had ``expected``'s code, appended nothing, and a later plain record
    is readable read_committed: the last stable offset is not pinned."""
    assert refused == expected, f"got {refused.name}, want {expected.name}"
    assert read_committed(client, topic).high_watermark == 0  # nothing appended
    assert produce_code(client, topic, batch([b"later"])) == ErrorCode.none
    seen = read_committed(client, topic)
    assert seen.last_stable_offset == seen.high_watermark == 1
    assert seen.values == [b"later"]


def _made_up(values: list[bytes]) -> bytes:
    return batch(values, producer_id=MADE_UP_PID, epoch=0, sequence=0, transactional=True)


async def test_without_a_transactional_id(broker: Any) -> None:
    def scenario() -> None:
        with RawClient(broker.bootstrap_servers) as client:
            create_topic(client, "no-tid")
            refused = produce_code(client, "no-tid", _made_up([b"x"]))
            _after(client, "no-tid", refused, ErrorCode.transactional_id_authorization_failed)

    await asyncio.to_thread(scenario)


async def test_with_a_transactional_id_never_initialised(broker: Any) -> None:
    def scenario() -> None:
        with RawClient(broker.bootstrap_servers) as client:
            create_topic(client, "ghost-tid")
            refused = produce_code(client, "ghost-tid", _made_up([b"x"]), "never-initialised")
            _after(client, "ghost-tid", refused, ErrorCode.invalid_producer_id_mapping)

    await asyncio.to_thread(scenario)


async def test_real_transactional_id_with_a_made_up_producer_id(broker: Any) -> None:
    def scenario() -> None:
        with RawClient(broker.bootstrap_servers) as client:
            create_topic(client, "other-pid")
            txn = RawTxn(client, "real-tid-other-pid")
            assert txn.add_partition("other-pid") == ErrorCode.none
            refused = produce_code(client, "other-pid", _made_up([b"x"]), txn.tid)
            _after(client, "other-pid", refused, ErrorCode.invalid_producer_id_mapping)

    await asyncio.to_thread(scenario)


async def test_real_transaction_without_add_partitions(broker: Any) -> None:
    def scenario() -> None:
        with RawClient(broker.bootstrap_servers) as client:
            create_topic(client, "not-added", partitions=2)
            txn = RawTxn(client, "real-tid-not-added")
            # Before any AddPartitionsToTxn (Empty), then with only partition 1 added.
            before = produce_code(client, "not-added", txn.batch([b"x"]), txn.tid)
            assert before == ErrorCode.invalid_txn_state
            assert txn.add_partition("not-added", 1) == ErrorCode.none
            txn.sequence = 0
            refused = produce_code(client, "not-added", txn.batch([b"x"]), txn.tid)
            _after(client, "not-added", refused, ErrorCode.invalid_txn_state)
            assert txn.end(commit=False) == ErrorCode.none

    await asyncio.to_thread(scenario)


async def test_stale_epoch_is_an_invalid_producer_epoch(broker: Any) -> None:
    def scenario() -> None:
        with RawClient(broker.bootstrap_servers) as client:
            create_topic(client, "stale")
            RawTxn(client, "bumped")
            txn = RawTxn(client, "bumped")  # the second InitProducerId bumps the epoch
            assert txn.add_partition("stale") == ErrorCode.none
            old = txn.batch([b"x"], epoch=txn.epoch - 1)
            refused = produce_code(client, "stale", old, txn.tid)
            _after(client, "stale", refused, ErrorCode.invalid_producer_epoch)
            assert txn.end(commit=False) == ErrorCode.none

    await asyncio.to_thread(scenario)


async def test_after_add_partitions_the_batch_is_appended_and_committed(broker: Any) -> None:
    """The positive control: the same requests a client sends, in its order."""

    def scenario() -> None:
        with RawClient(broker.bootstrap_servers) as client:
            create_topic(client, "added")
            txn = RawTxn(client, "real-tid-added")
            assert txn.add_partition("added") == ErrorCode.none
            assert produce_code(client, "added", txn.batch([b"a", b"b"]), txn.tid) == ErrorCode.none
            open_txn = read_committed(client, "added")
            assert open_txn.last_stable_offset == 0 and open_txn.high_watermark == 2
            assert txn.end(commit=True) == ErrorCode.none
            # The transaction is over: another batch needs another AddPartitionsToTxn.
            late = produce_code(client, "added", txn.batch([b"late"]), txn.tid)
            assert late == ErrorCode.invalid_txn_state
            seen = read_committed(client, "added")
            assert seen.values == [b"a", b"b"] and seen.last_stable_offset == 3

    await asyncio.to_thread(scenario)


async def test_idempotent_batches_need_no_transaction(broker: Any) -> None:
    def scenario() -> None:
        with RawClient(broker.bootstrap_servers) as client:
            create_topic(client, "idempotent")
            plain = batch([b"i"], producer_id=MADE_UP_PID, epoch=0, sequence=0)
            assert produce_code(client, "idempotent", plain) == ErrorCode.none
            # A transactional id on the request changes nothing for them (as in Kafka).
            more = batch([b"j"], producer_id=MADE_UP_PID, epoch=0, sequence=1)
            assert produce_code(client, "idempotent", more, "never-initialised") == ErrorCode.none
            seen = read_committed(client, "idempotent")
            assert seen.values == [b"i", b"j"] and seen.last_stable_offset == 2

    await asyncio.to_thread(scenario)
