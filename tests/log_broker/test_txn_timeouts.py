"""The running broker aborts a transaction when its timeout runs out: the deadline
timer sleeps until the first one due, wakes for one that begins later but times out
sooner, and retries one it could not abort yet without spinning."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from headrace.log_broker import Broker
from headrace.transactions import TopicPartition, TransactionCoordinator, TxnState

T0 = TopicPartition("t", 0)


async def _aborted_within(coordinator: TransactionCoordinator, tid: str, seconds: float) -> float:
    """Seconds until ``tid``'s transaction is aborted; fails after ``seconds``."""
    begun = time.monotonic()
    for _ in range(int(seconds / 0.01)):
        if coordinator.describe(tid).state is TxnState.COMPLETE_ABORT:
            return time.monotonic() - begun
        await asyncio.sleep(0.01)
    raise AssertionError(f"{tid!r} still {coordinator.describe(tid).state.name}")


async def test_a_sooner_timeout_begun_later_is_aborted_on_time(tmp_path: Path) -> None:
    async with Broker(tmp_path / "data") as broker:
        await asyncio.to_thread(broker.state.logs.create_topic, "t", 1)
        coordinator = broker.state.txn.coordinator
        long_pid, long_epoch = await coordinator.init_producer_id("long", 60_000)
        await coordinator.add_partitions("long", long_pid, long_epoch, [T0])
        await asyncio.sleep(0.1)  # the timer now sleeps until the minute is up
        pid, epoch = await coordinator.init_producer_id("short", 300)
        await coordinator.add_partitions("short", pid, epoch, [T0])
        took = await _aborted_within(coordinator, "short", 10)
        assert 0.25 <= took < 2.0
        assert coordinator.describe("short").producer_epoch == epoch + 1  # fenced
        assert coordinator.describe("long").state is TxnState.ONGOING


async def test_a_transaction_busy_at_its_timeout_is_retried_without_spinning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Broker(tmp_path / "data") as broker:
        await asyncio.to_thread(broker.state.logs.create_topic, "t", 1)
        coordinator = broker.state.txn.coordinator
        passes: list[float] = []
        abort_expired = coordinator.abort_expired

        async def counted() -> list[str]:
            passes.append(time.monotonic())
            return await abort_expired()

        monkeypatch.setattr(coordinator, "abort_expired", counted)
        pid, epoch = await coordinator.init_producer_id("held", 100)
        await coordinator.add_partitions("held", pid, epoch, [T0])
        # A request holds the id across its deadline (as a slow AddPartitionsToTxn would).
        with coordinator._exclusive("held"):
            await asyncio.sleep(1.2)
            assert coordinator.describe("held").state is TxnState.ONGOING
        took = await _aborted_within(coordinator, "held", 10)
        assert took < 1.5
        # Due at 0.1 s, then a retry every half second: a handful of passes, not a loop.
        assert 2 <= len(passes) <= 6
