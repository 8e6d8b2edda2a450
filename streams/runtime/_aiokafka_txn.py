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

aiokafka's errors are translated here: a fenced producer becomes :class:`FencedError`,
anything else that breaks a transaction :class:`TransactionError` (retriable: the
caller aborts and rewinds).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from aiokafka import TopicPartition as AioTP
from aiokafka.errors import (
    InvalidProducerEpoch,
    KafkaError,
    ProducerFenced,
    TransactionalIdAuthorizationFailed,
)

from .._record import ProducedRecord
from ._aiokafka import AiokafkaRecordProducer, translate
from ._aiokafka_internals import add_group_early, drop_group_only, in_transaction
from ._client import FlushMark, FlushResult, TopicPartition
from ._errors import FencedError, TransactionAbortedError, TransactionError
from ._settings import AppSettings

log = logging.getLogger("headrace.streams.runtime.transactions")

_FENCED = (ProducerFenced, InvalidProducerEpoch, TransactionalIdAuthorizationFailed)


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
        return in_transaction(self._producer)

    async def _begin(self) -> None:
        if self.in_transaction:
            return
        try:
            await self._producer.begin_transaction()
        except KafkaError as error:
            raise txn_error(error, "beginning a transaction") from error
        if self._group_id is not None:
            add_group_early(self._producer, self._group_id)

    async def send(self, records: Sequence[ProducedRecord]) -> None:
        if records:
            if self._held is None:
                await self._begin()
            await super().send(records)

    async def _before_handing(self) -> None:
        # ``send`` began the transaction before it awaited (a topic's partition count,
        # the queue bound); a commit held and released meanwhile ended that
        # transaction, so what it placed after the release belongs to the next one.
        if not self.in_transaction:
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
        if not offsets and not self.in_transaction:
            return
        await self.send_offsets(offsets, group_id)
        await self._begin()
        drop_group_only(self._producer)  # a transaction with no offsets needs no group
        try:
            await self._producer.commit_transaction()
        except KafkaError as error:
            raise txn_error(error, "committing a transaction") from error

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
        if not self.in_transaction:
            return
        drop_group_only(self._producer)
        try:
            await self._producer.abort_transaction()
        except KafkaError as error:
            raise txn_error(error, "aborting a transaction") from error
