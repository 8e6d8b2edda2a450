"""A transactional id's state: who owns it, and where its transaction stands.

The lifecycle is a named state machine; ``TRANSITIONS`` lists, for every state, the
states it may move to. A transaction starts ``Empty`` (after InitProducerId), becomes
``Ongoing`` with its first AddPartitionsToTxn, ``PrepareCommit`` or ``PrepareAbort`` at
EndTxn (or a timeout: abort), and ``CompleteCommit``/``CompleteAbort`` once every
marker is written; from a complete state the next transaction begins. ``Dead`` is an
expired transactional id, about to be forgotten.

Each state carries the number Kafka's ``__transaction_state`` records use for it.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import NamedTuple

from headrace.base import TransitionTable, check_transition, transition_table

from ._errors import IllegalTxnTransitionError

NO_PRODUCER_ID = -1
NO_EPOCH = -1
MAX_EPOCH = 2**15 - 1  # producer epochs are int16


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class ProducerIdAndEpoch(NamedTuple):
    producer_id: int
    epoch: int


class TxnState(enum.Enum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6

    @property
    def is_prepared(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def is_idle(self) -> bool:
        """No transaction open: a new one may begin, the id may expire."""
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


_S = TxnState
TRANSITIONS: TransitionTable[TxnState] = transition_table(
    {
        _S.EMPTY: {_S.EMPTY, _S.ONGOING, _S.DEAD},
        _S.ONGOING: {_S.ONGOING, _S.PREPARE_COMMIT, _S.PREPARE_ABORT},
        _S.PREPARE_COMMIT: {_S.COMPLETE_COMMIT},
        _S.PREPARE_ABORT: {_S.COMPLETE_ABORT},
        _S.COMPLETE_COMMIT: {_S.EMPTY, _S.ONGOING, _S.DEAD},
        _S.COMPLETE_ABORT: {_S.EMPTY, _S.ONGOING, _S.DEAD},
        _S.DEAD: set(),
    }
)


@dataclass(frozen=True, slots=True)
class TransactionMetadata:
    """One transactional id's state; changed only through ``transition``.

    ``last_producer_id``/``last_epoch`` remember what a client-requested epoch bump
    replaced, so a retried InitProducerId is answered with the current epoch rather
    than seen as a zombie. They are kept in memory only: after a restart such a retry
    is fenced, which the client handles by starting over.
    """

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition] = frozenset()
    start_ms: int = -1
    last_update_ms: int = -1
    last_producer_id: int = NO_PRODUCER_ID
    last_epoch: int = NO_EPOCH

    def transition(self, state: TxnState, **changes: object) -> TransactionMetadata:
        owner = f"transaction {self.transactional_id!r}"
        check_transition(TRANSITIONS, self.state, state, owner, IllegalTxnTransitionError)
        return dataclasses.replace(self, state=state, **changes)  # type: ignore[arg-type]

    @property
    def producer(self) -> ProducerIdAndEpoch:
        return ProducerIdAndEpoch(self.producer_id, self.producer_epoch)
