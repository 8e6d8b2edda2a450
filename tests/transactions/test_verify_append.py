"""``verify_append``: the coordinator's answer to "may this transactional batch be
appended to this partition now?", through a transaction's whole life, over a log whose
writes the test holds back."""

from __future__ import annotations

import asyncio

import pytest

from headrace.transactions import (
    ConcurrentTransactionsError,
    InvalidProducerIdMappingError,
    InvalidRequestError,
    InvalidTxnStateError,
    ManualClock,
    ProducerFencedError,
    TopicPartition,
    TransactionCoordinator,
    TxnMarkers,
)

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)


class HeldLog:
    """A ``__transaction_state`` whose writes wait for ``gate`` while it is set."""

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None

    async def write(
        self, partition: int, key: bytes, value: bytes | None, *, durable: bool = True
    ) -> None:
        if self.gate is not None:
            await self.gate.wait()


class HeldMarkers:
    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None

    async def write_markers(self, markers: TxnMarkers) -> None:
        if self.gate is not None:
            await self.gate.wait()


class Ids:
    def allocate(self) -> int:
        return 7


async def test_a_batch_is_verified_only_inside_its_ongoing_transaction() -> None:
    log, markers = HeldLog(), HeldMarkers()
    c = TransactionCoordinator(log, markers, Ids(), ManualClock(1_000))
    with pytest.raises(InvalidProducerIdMappingError):
        c.verify_append("t", 7, 0, A0)  # never initialised
    with pytest.raises(InvalidRequestError):
        c.verify_append("", 7, 0, A0)
    pid, epoch = await c.init_producer_id("t", 10_000)
    with pytest.raises(InvalidTxnStateError):
        c.verify_append("t", pid, epoch, A0)  # Empty: no transaction yet

    # The partition is in the transaction only once AddPartitionsToTxn's state is
    # written and current, which is before AddPartitionsToTxn is answered.
    log.gate = asyncio.Event()
    adding = asyncio.ensure_future(c.add_partitions("t", pid, epoch, [A0]))
    await asyncio.sleep(0)
    with pytest.raises(InvalidTxnStateError):
        c.verify_append("t", pid, epoch, A0)
    log.gate.set()
    await adding
    c.verify_append("t", pid, epoch, A0)
    with pytest.raises(InvalidTxnStateError):
        c.verify_append("t", pid, epoch, A1)
    with pytest.raises(InvalidProducerIdMappingError):
        c.verify_append("t", pid + 1, epoch, A0)
    with pytest.raises(ProducerFencedError):
        c.verify_append("t", pid, epoch + 1, A0)

    # While the commit's markers are written: completing, retriable.
    log.gate, markers.gate = None, asyncio.Event()
    ending = asyncio.ensure_future(c.end_txn("t", pid, epoch, commit=True))
    await asyncio.sleep(0)
    with pytest.raises(ConcurrentTransactionsError):
        c.verify_append("t", pid, epoch, A0)
    markers.gate.set()
    await ending
    with pytest.raises(InvalidTxnStateError):
        c.verify_append("t", pid, epoch, A0)  # CompleteCommit: the next needs its own add
