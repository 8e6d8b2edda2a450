"""The transaction coordinator over a fake log, fake markers and a manual clock."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest

from headrace.transactions import (
    TXN_TRANSITIONS,
    ConcurrentTransactionsError,
    CoordinatorNotAvailableError,
    IllegalTransitionError,
    InvalidProducerIdMappingError,
    InvalidRequestError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    ManualClock,
    ProducerFencedError,
    ProducerIdAndEpoch,
    TopicPartition,
    TransactionalIdNotFoundError,
    TransactionCoordinator,
    TransactionMetadata,
    TxnMarkers,
    TxnState,
    decode_txn_log_key,
    decode_txn_log_value,
)

A0 = TopicPartition("a", 0)
B1 = TopicPartition("b", 1)


class FakeLog:
    def __init__(self) -> None:
        self.records: list[tuple[int, bytes, bytes | None]] = []
        self.durable: list[bool] = []  # per record: whether its write waited for the sync
        self.fail = False
        self.gate: asyncio.Event | None = None

    async def write(
        self, partition: int, key: bytes, value: bytes | None, *, durable: bool = True
    ) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise OSError("disk gone")
        self.records.append((partition, key, value))
        self.durable.append(durable)

    def states(self) -> list[tuple[str, TxnState | None]]:
        out: list[tuple[str, TxnState | None]] = []
        for _, key, value in self.records:
            tid = decode_txn_log_key(key)
            out.append((tid, None if value is None else decode_txn_log_value(tid, value).state))
        return out


class FakeMarkers:
    def __init__(self) -> None:
        self.written: list[TxnMarkers] = []
        self.fail = False

    async def write_markers(self, markers: TxnMarkers) -> None:
        if self.fail:
            raise OSError("partition offline")
        self.written.append(markers)


class Ids:
    def __init__(self) -> None:
        self.next = 100

    def allocate(self) -> int:
        self.next += 1
        return self.next - 1


class World:
    def __init__(self) -> None:
        self.log = FakeLog()
        self.markers = FakeMarkers()
        self.ids = Ids()
        self.clock = ManualClock(1_000_000)
        self.coordinator = self.make()

    def make(self) -> TransactionCoordinator:
        return TransactionCoordinator(
            self.log,
            self.markers,
            self.ids,
            self.clock,
            max_timeout_ms=60_000,
            id_expiration_ms=3_600_000,
        )

    def restart(self, lose_unsynced: bool = False) -> TransactionCoordinator:
        """A new coordinator from the log; ``lose_unsynced``: without the records
        whose sync nobody waited for (the worst a crash can do)."""
        self.coordinator = self.make()
        kept = [
            (key, value)
            for (_, key, value), durable in zip(self.log.records, self.log.durable, strict=True)
            if durable or not lose_unsynced
        ]
        self.coordinator.load(kept)
        return self.coordinator


@pytest.fixture
def world() -> World:
    return World()


async def test_transition_table_is_kafkas() -> None:
    assert TXN_TRANSITIONS[TxnState.PREPARE_COMMIT] == {TxnState.COMPLETE_COMMIT}
    assert TxnState.DEAD not in TXN_TRANSITIONS[TxnState.ONGOING]
    meta = TransactionMetadata("t", 1, 0, 10, TxnState.ONGOING)
    with pytest.raises(IllegalTransitionError):
        meta.transition(TxnState.COMPLETE_ABORT)


async def test_init_without_transactional_id_allocates_a_fresh_id(world: World) -> None:
    c = world.coordinator
    assert await c.init_producer_id(None, 0) == ProducerIdAndEpoch(100, 0)
    assert await c.init_producer_id(None, 0) == ProducerIdAndEpoch(101, 0)
    assert world.log.records == []


async def test_init_checks_the_timeout_and_the_id(world: World) -> None:
    c = world.coordinator
    with pytest.raises(InvalidTransactionTimeoutError) as caught:
        await c.init_producer_id("t", 60_001)
    assert caught.value.error_code == 50
    with pytest.raises(InvalidTransactionTimeoutError):
        await c.init_producer_id("t", 0)
    with pytest.raises(InvalidRequestError):
        await c.init_producer_id("", 1000)


async def test_commit_writes_prepare_markers_and_complete_in_that_order(world: World) -> None:
    c = world.coordinator
    pid, epoch = await c.init_producer_id("t", 30_000)
    assert (pid, epoch) == (100, 0)
    await c.add_partitions("t", pid, epoch, [A0])
    await c.add_partitions("t", pid, epoch, [A0])  # already in: nothing written
    await c.add_partitions("t", pid, epoch, [B1])
    await c.end_txn("t", pid, epoch, commit=True)
    assert world.log.states() == [
        ("t", TxnState.EMPTY),
        ("t", TxnState.ONGOING),
        ("t", TxnState.ONGOING),
        ("t", TxnState.PREPARE_COMMIT),
        ("t", TxnState.COMPLETE_COMMIT),
    ]
    assert world.markers.written == [TxnMarkers(pid, 0, 0, True, frozenset({A0, B1}))]
    # Every state is durable before it is answered but the completion, which a restart
    # that lost it redoes from the prepared state.
    assert world.log.durable == [True, True, True, True, False]
    assert c.describe("t").state is TxnState.COMPLETE_COMMIT
    assert c.describe("t").partitions == frozenset()
    # A retried commit succeeds again; an abort now is the wrong state.
    await c.end_txn("t", pid, epoch, commit=True)
    with pytest.raises(InvalidTxnStateError):
        await c.end_txn("t", pid, epoch, commit=False)
    assert len(world.markers.written) == 1


async def test_end_without_a_transaction_is_invalid(world: World) -> None:
    c = world.coordinator
    pid, epoch = await c.init_producer_id("t", 30_000)
    with pytest.raises(InvalidTxnStateError) as caught:
        await c.end_txn("t", pid, epoch, commit=False)
    assert caught.value.error_code == 48


async def test_wrong_producer_id_or_epoch(world: World) -> None:
    c = world.coordinator
    with pytest.raises(InvalidProducerIdMappingError):
        await c.add_partitions("unknown", 1, 0, [A0])
    pid, epoch = await c.init_producer_id("t", 30_000)
    with pytest.raises(InvalidProducerIdMappingError) as mapping:
        await c.add_partitions("t", pid + 1, epoch, [A0])
    assert mapping.value.error_code == 49
    with pytest.raises(ProducerFencedError) as fenced:
        await c.end_txn("t", pid, epoch + 1, commit=True)
    assert fenced.value.code_for(version_allows_fenced=True) == 90
    assert fenced.value.code_for(version_allows_fenced=False) == 47


async def test_a_second_producer_fences_the_first_and_aborts_its_transaction(world: World) -> None:
    c = world.coordinator
    old = await c.init_producer_id("t", 30_000)
    await c.add_partitions("t", *old, [A0])
    new = await c.init_producer_id("t", 30_000)
    assert new.producer_id == old.producer_id and new.epoch > old.epoch + 1
    assert world.markers.written == [
        TxnMarkers(old.producer_id, old.epoch + 1, 0, False, frozenset({A0}))
    ]
    with pytest.raises(ProducerFencedError):
        await c.end_txn("t", *old, commit=True)
    with pytest.raises(ProducerFencedError):
        await c.add_partitions("t", *old, [A0])
    # The zombie cannot take the id back by naming its old epoch either.
    with pytest.raises(ProducerFencedError):
        await c.init_producer_id("t", 30_000, expected=old)
    await c.add_partitions("t", *new, [A0])
    await c.end_txn("t", *new, commit=True)


async def test_a_producer_may_bump_its_own_epoch_and_retry_the_bump(world: World) -> None:
    c = world.coordinator
    first = await c.init_producer_id("t", 30_000)
    bumped = await c.init_producer_id("t", 30_000, expected=first)
    assert bumped == ProducerIdAndEpoch(first.producer_id, first.epoch + 1)
    # The response was lost: the same request again gets the same answer.
    assert await c.init_producer_id("t", 30_000, expected=first) == bumped
    with pytest.raises(ProducerFencedError):
        await c.init_producer_id("t", 30_000, expected=ProducerIdAndEpoch(999, 0))


async def test_a_bump_with_an_open_transaction_aborts_it_first(world: World) -> None:
    c = world.coordinator
    first = await c.init_producer_id("t", 30_000)
    await c.add_partitions("t", *first, [A0])
    bumped = await c.init_producer_id("t", 30_000, expected=first)
    assert [m.commit for m in world.markers.written] == [False]
    assert c.describe("t").state is TxnState.EMPTY
    assert bumped.epoch == first.epoch + 2


async def test_epochs_running_out_move_to_a_new_producer_id(world: World) -> None:
    c = world.coordinator
    c.load([])
    first = await c.init_producer_id("t", 30_000)
    meta = c.describe("t")
    c._txns["t"] = meta.transition(TxnState.EMPTY, producer_epoch=2**15 - 2)
    fresh = await c.init_producer_id(
        "t", 30_000, expected=ProducerIdAndEpoch(first.producer_id, 2**15 - 2)
    )
    assert fresh.epoch == 0 and fresh.producer_id != first.producer_id


async def test_an_expired_transaction_is_aborted_and_its_producer_fenced(world: World) -> None:
    c = world.coordinator
    pid, epoch = await c.init_producer_id("t", 10_000)
    await c.add_partitions("t", pid, epoch, [A0])
    world.clock.advance(10_000)
    assert await c.abort_expired() == []
    world.clock.advance(1)
    assert await c.abort_expired() == ["t"]
    assert world.markers.written == [TxnMarkers(pid, epoch + 1, 0, False, frozenset({A0}))]
    assert c.describe("t").state is TxnState.COMPLETE_ABORT
    with pytest.raises(ProducerFencedError):
        await c.end_txn("t", pid, epoch, commit=True)


async def test_the_timeout_counts_from_the_first_partition_added(world: World) -> None:
    c = world.coordinator
    pid, epoch = await c.init_producer_id("t", 10_000)
    world.clock.advance(60_000)  # idle before the transaction: no timeout
    await c.add_partitions("t", pid, epoch, [A0])
    world.clock.advance(5_000)
    await c.add_partitions("t", pid, epoch, [B1])  # later partitions do not restart it
    world.clock.advance(5_001)
    assert await c.abort_expired() == ["t"]


async def test_a_request_during_another_for_the_same_id_is_concurrent(world: World) -> None:
    c = world.coordinator
    pid, epoch = await c.init_producer_id("t", 30_000)
    world.log.gate = asyncio.Event()
    first = asyncio.ensure_future(c.add_partitions("t", pid, epoch, [A0]))
    await asyncio.sleep(0)
    with pytest.raises(ConcurrentTransactionsError) as caught:
        await c.end_txn("t", pid, epoch, commit=True)
    assert caught.value.retriable
    world.log.gate.set()
    await first
    await c.end_txn("t", pid, epoch, commit=True)


async def test_a_failed_log_write_changes_nothing(world: World) -> None:
    c = world.coordinator
    pid, epoch = await c.init_producer_id("t", 30_000)
    world.log.fail = True
    with pytest.raises(CoordinatorNotAvailableError):
        await c.add_partitions("t", pid, epoch, [A0])
    assert c.describe("t").state is TxnState.EMPTY


async def test_state_is_rebuilt_from_the_log(world: World) -> None:
    c = world.coordinator
    pid, epoch = await c.init_producer_id("t", 30_000)
    await c.add_partitions("t", pid, epoch, [A0, B1])
    other = await c.init_producer_id("u", 20_000)
    await c.add_partitions("u", *other, [A0])
    await c.end_txn("u", *other, commit=False)
    restarted = world.restart()
    assert restarted.describe("t") == TransactionMetadata(
        "t", pid, epoch, 30_000, TxnState.ONGOING, frozenset({A0, B1}), 1_000_000, 1_000_000
    )
    assert restarted.describe("u").state is TxnState.COMPLETE_ABORT
    await restarted.end_txn("t", pid, epoch, commit=True)
    assert world.markers.written[-1] == TxnMarkers(pid, epoch, 0, True, frozenset({A0, B1}))


async def test_a_completion_lost_in_a_crash_is_written_again(world: World) -> None:
    c = world.coordinator
    pid, epoch = await c.init_producer_id("t", 30_000)
    await c.add_partitions("t", pid, epoch, [A0, B1])
    await c.end_txn("t", pid, epoch, commit=True)
    restarted = world.restart(lose_unsynced=True)
    assert restarted.describe("t").state is TxnState.PREPARE_COMMIT
    assert await restarted.complete_prepared() == 1
    committed = TxnMarkers(pid, epoch, 0, True, frozenset({A0, B1}))
    assert world.markers.written == [committed, committed]  # the same outcome, twice
    assert restarted.describe("t").state is TxnState.COMPLETE_COMMIT
    await restarted.end_txn("t", pid, epoch, commit=True)  # the client's retry


async def test_a_prepared_commit_completes_after_a_crash(world: World) -> None:
    c = world.coordinator
    pid, epoch = await c.init_producer_id("t", 30_000)
    await c.add_partitions("t", pid, epoch, [A0])
    world.markers.fail = True
    await c.end_txn("t", pid, epoch, commit=True)  # decided, markers pending
    assert c.describe("t").state is TxnState.PREPARE_COMMIT
    with pytest.raises(ConcurrentTransactionsError):
        await c.add_partitions("t", pid, epoch, [B1])
    with pytest.raises(ConcurrentTransactionsError):
        await c.end_txn("t", pid, epoch, commit=True)
    restarted = world.restart()  # the "crash": only the log survives
    assert restarted.describe("t").state is TxnState.PREPARE_COMMIT
    world.markers.fail = False
    assert await restarted.complete_prepared() == 1
    assert world.markers.written == [TxnMarkers(pid, epoch, 0, True, frozenset({A0}))]
    assert restarted.describe("t").state is TxnState.COMPLETE_COMMIT
    await restarted.end_txn("t", pid, epoch, commit=True)  # the client's retry


async def test_idle_ids_expire_with_a_tombstone(world: World) -> None:
    c = world.coordinator
    await c.init_producer_id("t", 30_000)
    pid, epoch = await c.init_producer_id("busy", 30_000)
    await c.add_partitions("busy", pid, epoch, [A0])
    world.clock.advance(3_600_001)
    assert await c.expire_transactional_ids() == ["t"]
    assert world.log.states()[-1] == ("t", None)
    with pytest.raises(TransactionalIdNotFoundError) as caught:
        c.describe("t")
    assert caught.value.error_code == 105
    assert [m.transactional_id for m in world.restart().transactions()] == ["busy"]


async def test_records_go_to_the_id_s_partition(world: World) -> None:
    c = world.coordinator
    await c.init_producer_id("hello", 30_000)
    assert world.log.records[0][0] == 99162322 % 50 == c.partition_for("hello")


async def test_the_next_timeout_and_the_hook_told_of_each_transaction_begun(
    world: World,
) -> None:
    begun: list[int] = []
    c = TransactionCoordinator(
        world.log, world.markers, world.ids, world.clock, on_transaction_started=begun.append
    )
    assert c.next_timeout_ms() is None
    pid, epoch = await c.init_producer_id("t", 10_000)
    assert c.next_timeout_ms() is None  # no transaction open yet
    await c.add_partitions("t", pid, epoch, [A0])
    await c.add_partitions("t", pid, epoch, [B1])  # the same transaction: told once
    assert begun == [1_010_001] and c.next_timeout_ms() == 1_010_001
    world.clock.advance(10_000)
    assert await c.abort_expired() == []
    world.clock.advance(1)
    assert await c.abort_expired() == ["t"]
    assert c.next_timeout_ms() is None


class EndingMarkers(FakeMarkers):
    """Markers whose first write lets another request run to its end meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.meanwhile: list[Coroutine[Any, Any, None]] = []

    async def write_markers(self, markers: TxnMarkers) -> None:
        while self.meanwhile:
            await self.meanwhile.pop()
        await super().write_markers(markers)


async def test_a_transaction_ended_while_another_was_aborted_is_not_aborted(
    world: World,
) -> None:
    markers = EndingMarkers()
    c = TransactionCoordinator(world.log, markers, world.ids, world.clock)
    first = await c.init_producer_id("a", 1_000)
    await c.add_partitions("a", *first, [A0])
    second = await c.init_producer_id("b", 1_000)
    await c.add_partitions("b", *second, [B1])
    world.clock.advance(1_001)
    # While "a" is aborted, "b"'s producer commits in time as far as it knows.
    markers.meanwhile.append(c.end_txn("b", *second, commit=True))
    assert await c.abort_expired() == ["a"]
    assert c.describe("b").state is TxnState.COMPLETE_COMMIT
    assert [m.commit for m in markers.written] == [True, False]
