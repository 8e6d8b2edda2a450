"""Flushing up to a mark: what was sent before it is waited for, what came after is not."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from headrace.streams import ProducedRecord
from headrace.streams.runtime._send_ledger import SendLedger

TP = ("out", 0)


def _records(n: int) -> list[ProducedRecord]:
    return [("out", b"k", b"v", 0, (), 0) for _ in range(n)]


def _delivery(base_offset: int) -> asyncio.Future[SimpleNamespace]:
    future: asyncio.Future[SimpleNamespace] = asyncio.get_running_loop().create_future()
    future.set_result(SimpleNamespace(offset=base_offset))
    return future


async def test_a_flush_waits_for_records_before_its_mark_and_not_for_later_ones() -> None:
    ledger = SendLedger()
    ledger.queued(TP, 3)
    mark = ledger.mark()
    ledger.queued(TP, 2)  # sent after the mark
    settling = asyncio.ensure_future(ledger.settle(mark))
    await asyncio.sleep(0)
    assert not settling.done()  # nothing of the mark was handed to the client yet
    ledger.handed(TP, _records(3), _delivery(100))
    result = await asyncio.wait_for(settling, 1)
    assert result.next_offsets == {TP: 103}
    # The two later records are owed to the next flush, which waits for them.
    later = asyncio.ensure_future(ledger.settle(ledger.mark()))
    await asyncio.sleep(0)
    assert not later.done()
    ledger.handed(TP, _records(2), _delivery(103))
    assert (await asyncio.wait_for(later, 1)).next_offsets == {TP: 105}


async def test_a_failed_batch_is_reported_once_and_a_clear_releases_a_waiting_flush() -> None:
    ledger = SendLedger()
    ledger.queued(TP, 2)
    ledger.handed(TP, _records(2), error=RuntimeError("broker said no"))
    result = await ledger.settle(ledger.mark())
    assert [len(f.records) for f in result.failures] == [2]
    assert (await ledger.settle(ledger.mark())).failures == []
    ledger.queued(TP, 1)
    waiting = asyncio.ensure_future(ledger.settle(ledger.mark()))
    await asyncio.sleep(0)
    ledger.clear()  # an abort: nothing is owed any more
    assert (await asyncio.wait_for(waiting, 1)).next_offsets == {}
