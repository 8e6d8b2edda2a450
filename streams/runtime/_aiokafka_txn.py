"""The transactional producer of exactly-once processing, on aiokafka.

It is the batch producer of ``_aiokafka.py`` with a ``transactional_id``: every batch
it sends belongs to the open transaction, which it begins on the first send of an
interval. While a transaction commits, what is sent is held (``hold``) and goes to the
next transaction when ``release`` begins it. :meth:`send_offsets` adds the consumed
offsets with the group id (AddOffsetsToTxn, then TxnOffsetCommit) and
:meth:`commit_transaction` ends the transaction (EndTxn). Once the group is known (the
first offsets sent), every later transaction asks for AddOffsetsToTxn as it begins
(``add_group_early``), so a commit is left with TxnOffsetCommit, sent beside the
output's flush (``_commit.py``), and EndTxn.

What aiokafka sends and what that means for fencing: TxnOffsetCommit version 0, which
carries the group id but neither the generation nor the member id (those came in
version 3, KIP-447). The broker therefore checks only the producer id and epoch, so a
producer is fenced by a newer instance with the same transactional id, not by a newer
group generation. The runtime closes the gap from its side: it commits a transaction
only while its consumer still holds a valid generation (``_commit.py``).

Beginning and ending are steps of their own that callers share (:meth:`_begin`,
:meth:`_end`). aiokafka's transaction state machine (``transaction_manager.py``)
asserts each move, and its ``begin_transaction`` awaits before it moves READY to
IN_TRANSACTION; several parts of the runtime may find no transaction open at once (the
processing loop's ``send``, a partition's sender, ``release``, the offsets of a commit
running beside processing). So:

- one begin at a time, awaited by every caller that asked for it meanwhile;
- a begin asked for while a commit or abort is under way waits for that end;
- a commit or abort waits for a begin under way, and an abort for an end under way;
- a transaction that failed in aiokafka's sender (ABORTABLE_ERROR) is aborted, and
  none begins before it is: beginning says so instead of tripping aiokafka's assertion.

aiokafka's errors are translated here: a fenced producer becomes :class:`FencedError`,
anything else that breaks a transaction :class:`TransactionError` (retriable: the
caller aborts and rewinds).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from aiokafka import TopicPartition as AioTP
from aiokafka.errors import (
    InvalidProducerEpoch,
    KafkaError,
    ProducerFenced,
    TransactionalIdAuthorizationFailed,
)

from .._record import ProducedRecord
from ._aiokafka import AiokafkaRecordProducer, translate
from ._aiokafka_internals import (
    add_group_early,
    drop_group_only,
    in_transaction,
    transaction_state,
)
from ._client import FlushMark, FlushResult, TopicPartition
from ._errors import FencedError, TransactionAbortedError, TransactionError
from ._settings import AppSettings

log = logging.getLogger("headrace.streams.runtime.transactions")

_FENCED = (ProducerFenced, InvalidProducerEpoch, TransactionalIdAuthorizationFailed)

# States of aiokafka's transaction state machine (``transaction_state``) acted on here:
# an abort ends an open or a failed transaction; nothing begins after a failure before
# the abort; after a fatal one the producer is replaced (the abort says so).
_ABORTABLE = ("IN_TRANSACTION", "ABORTABLE_ERROR")
_FAILED = ("ABORTABLE_ERROR", "FATAL_ERROR")
_FATAL = "FATAL_ERROR"


def txn_error(error: BaseException, doing: str) -> FencedError | TransactionError:
    """An aiokafka transaction error as this package's: fenced, or retriable after abort."""
    if isinstance(error, _FENCED):
        fenced = FencedError(f"{doing}: this instance was fenced by a newer one ({error!r})")
        fenced.__cause__ = error
        return fenced
    failed = TransactionAbortedError(f"{doing}: {error!r}")
    failed.__cause__ = error
    return failed


class AiokafkaTransactionalProducer(AiokafkaRecordProducer):
    """One transactional producer per instance (EOS v2): outputs, changelogs and
    offsets of a commit interval commit or abort together."""

    def __init__(self, settings: AppSettings, transactional_id: str) -> None:
        super().__init__(
            settings,
            transactional_id=transactional_id,
            transaction_timeout_ms=settings.transaction_timeout,
        )
        self.transactional_id = transactional_id
        # The group whose offsets every transaction commits, once the first told it.
        self._group_id: str | None = None
        # The begin under way, which every caller meanwhile awaits (``_begin``), and the
        # commit or abort under way (``_end``); ``None`` when there is none.
        self._beginning: asyncio.Future[None] | None = None
        self._ending: asyncio.Future[None] | None = None

    async def start(self) -> None:
        # aiokafka's start waits for InitProducerId: the broker aborts whatever
        # transaction the previous holder of this id left open and bumps the epoch.
        try:
            await self._producer.start()
        except _FENCED as error:
            raise txn_error(error, "starting the transactional producer") from error
        except KafkaError as error:
            raise translate(error, "starting the transactional producer") from error

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open and not ending."""
        return self._ending is None and in_transaction(self._producer)

    async def _begin(self) -> None:
        """Have a transaction open: begin one unless one is, as one step all callers share.

        1. A commit or abort under way: wait for it to end (aiokafka cannot begin
           before), whatever its outcome, which is its caller's to hear.
        2. A transaction open: done.
        3. Else await the begin under way, or start one as a task of its own (a caller
           cancelled meanwhile leaves it to the others), and go back to 1: what ended
           meanwhile is begun again, and a failed begin raises to every caller.
        """
        while True:
            ending = self._ending
            if ending is not None:
                await asyncio.wait({ending})
                continue
            if in_transaction(self._producer):
                return
            beginning = self._beginning
            if beginning is None:
                beginning = self._beginning = asyncio.ensure_future(self._begin_one())
                beginning.add_done_callback(self._begun)
            await asyncio.shield(beginning)

    async def _begin_one(self) -> None:
        state = transaction_state(self._producer)
        if state in _FAILED:
            raise TransactionAbortedError(
                f"beginning a transaction: the one before failed ({state}) and is not aborted yet"
            )
        try:
            await self._producer.begin_transaction()
        except KafkaError as error:
            raise txn_error(error, "beginning a transaction") from error
        if self._group_id is not None:
            add_group_early(self._producer, self._group_id)

    def _begun(self, beginning: asyncio.Future[None]) -> None:
        if self._beginning is beginning:
            self._beginning = None
        if not beginning.cancelled():
            beginning.exception()  # raised to the callers; taken so asyncio does not report it

    async def _end(self, end: Callable[[], Awaitable[None]], doing: str) -> None:
        """Commit or abort (``end``, aiokafka's) as a task of its own that a begin asked
        for meanwhile waits for; a cancelled caller leaves it running, as aiokafka does."""
        ending = self._ending = asyncio.ensure_future(end())
        ending.add_done_callback(self._ended)
        try:
            await asyncio.shield(ending)
        except KafkaError as error:
            raise txn_error(error, doing) from error

    def _ended(self, ending: asyncio.Future[None]) -> None:
        if self._ending is ending:
            self._ending = None
        if not ending.cancelled():
            ending.exception()  # raised to the caller; taken so asyncio does not report it

    async def send(self, records: Sequence[ProducedRecord]) -> None:
        if records:
            if self._held is None:
                await self._begin()
            await super().send(records)

    async def _before_handing(self) -> None:
        # ``send`` began the transaction before it awaited (a topic's partition count,
        # the queue bound); a commit held and released meanwhile ended that
        # transaction, so what it placed after the release belongs to the next one.
        await self._begin()

    async def release(self) -> None:
        """Begin the next transaction and hand it what was sent while held."""
        if self._held:
            await self._begin()
        self._release_held()

    async def flush(self, upto: FlushMark | None = None) -> FlushResult:
        result = await super().flush(upto)
        # Inside a transaction a failed batch dooms the whole transaction: report it as
        # such instead of handing single records to the production handler.
        if result.failures:
            first = result.failures[0]
            if isinstance(first.error, _FENCED):
                raise txn_error(first.error, f"producing to {first.topic}-{first.partition}")
            raise TransactionAbortedError(
                f"producing to {first.topic}-{first.partition} failed inside a transaction: "
                f"{first.error!r}"
            ) from first.error
        return result

    async def commit_transaction(
        self, offsets: Mapping[TopicPartition, int], group_id: str
    ) -> None:
        """Add ``offsets`` for ``group_id`` to the transaction and commit it."""
        if not offsets and not self.in_transaction and self._beginning is None:
            return
        await self.send_offsets(offsets, group_id)
        await self._begin()
        drop_group_only(self._producer)  # a transaction with no offsets needs no group
        await self._end(self._producer.commit_transaction, "committing a transaction")

    async def send_offsets(self, offsets: Mapping[TopicPartition, int], group_id: str) -> None:
        """Add ``offsets`` for ``group_id`` to the transaction (begun if need be)."""
        if not offsets:
            return
        self._group_id = group_id
        await self._begin()
        try:
            await self._producer.send_offsets_to_transaction(
                {AioTP(t, p): o for (t, p), o in offsets.items()}, group_id
            )
        except KafkaError as error:
            raise txn_error(error, "adding offsets to a transaction") from error

    async def abort_transaction(self) -> None:
        """Abort the open transaction, if any; raise when the abort itself fails."""
        # Records still queued belong to the transaction being given up, and records
        # held for the next one were processed after the offsets it would have committed.
        self.discard_pending()
        # aiokafka aborts only an open or failed transaction: a begin or an end under
        # way finishes first (a commit that then succeeded leaves nothing to abort).
        while (pending := self._beginning or self._ending) is not None:
            await asyncio.wait({pending})
        state = transaction_state(self._producer)
        if state == _FATAL:
            raise TransactionAbortedError(
                "aborting a transaction: the producer failed for good (FATAL_ERROR) and "
                "must be replaced"
            )
        if state not in _ABORTABLE:
            return
        drop_group_only(self._producer)
        await self._end(self._producer.abort_transaction, "aborting a transaction")
