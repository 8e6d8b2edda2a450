"""Errors of idempotent-producer checks and the transaction coordinator.

Each error carries ``retriable`` (may the client simply try again?) and ``error_code``
(the Kafka protocol error code a handler answers with), like the broker's storage and
group errors, so a handler translates any of them without a table of its own.

TransactionError                          root (headrace.base's); never raised itself
+-- ProducerStateError                    a batch refused by a partition's producer state
|   +-- OutOfOrderSequenceError           a gap in the producer's sequence        (45)
|   +-- InvalidProducerEpochError         an epoch older than the partition's     (47)
|   +-- TxnCoordinatorFencedError         a marker from an older coordinator      (52)
|   +-- CorruptSnapshotError              a producer-state snapshot that does not read
+-- InvalidTxnStateError                  the request does not fit the transaction (48)
+-- CoordinatorError                      refused by the transaction coordinator
|   +-- ProducerFencedError               a newer producer holds the id           (90, or 47)
|   +-- ConcurrentTransactionsError       an earlier step is still completing     (51, retriable)
|   +-- InvalidProducerIdMappingError     id and transactional id do not match    (49)
|   +-- InvalidTransactionTimeoutError    timeout outside 1..max                  (50)
|   +-- TransactionalIdNotFoundError      no such transactional id                (105)
|   +-- TxnCoordinatorNotAvailableError   its log could not be written            (15, retriable)
|       (a headrace.base.CoordinatorNotAvailableError)
|   +-- InvalidRequestError               e.g. an empty transactional id          (42)
+-- IllegalTxnTransitionError            a lifecycle step the table forbids: a bug (-1)
|   (a headrace.base.IllegalTransitionError)
+-- TxnLogRecordError                     a __transaction_state record that does not read
"""

from __future__ import annotations

from headrace.base import CoordinatorNotAvailableError, IllegalTransitionError, TransactionError

INVALID_PRODUCER_EPOCH = 47
PRODUCER_FENCED = 90


class ProducerStateError(TransactionError):
    """A batch (or marker) the partition's producer state refuses; nothing is appended."""


class OutOfOrderSequenceError(ProducerStateError):
    error_code = 45


class InvalidProducerEpochError(ProducerStateError):
    error_code = INVALID_PRODUCER_EPOCH


class TxnCoordinatorFencedError(ProducerStateError):
    error_code = 52


class CorruptSnapshotError(ProducerStateError):
    pass


class CoordinatorError(TransactionError):
    """A transaction coordinator request refused; the coordinator's state is unchanged."""


class ProducerFencedError(CoordinatorError):
    """A newer producer (or a timeout) bumped the epoch past the caller's.

    PRODUCER_FENCED exists only from certain request versions on (KIP-588); older
    clients get INVALID_PRODUCER_EPOCH, which ``code_for`` picks.
    """

    error_code = PRODUCER_FENCED

    @staticmethod
    def code_for(version_allows_fenced: bool) -> int:
        return PRODUCER_FENCED if version_allows_fenced else INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(TransactionError):
    """Raised by the coordinator (e.g. commit of an aborted transaction) and by a
    partition (a non-transactional batch from a producer with an open transaction)."""

    error_code = 48


class ConcurrentTransactionsError(CoordinatorError):
    retriable = True
    error_code = 51


class InvalidProducerIdMappingError(CoordinatorError):
    error_code = 49


class InvalidTransactionTimeoutError(CoordinatorError):
    error_code = 50


class TransactionalIdNotFoundError(CoordinatorError):
    error_code = 105


class TxnCoordinatorNotAvailableError(CoordinatorError, CoordinatorNotAvailableError):
    retriable = True
    error_code = CoordinatorNotAvailableError.error_code


class InvalidRequestError(CoordinatorError):
    error_code = 42


class IllegalTxnTransitionError(TransactionError, IllegalTransitionError):
    """A transaction's lifecycle step its table forbids: a coordinator bug."""


class TxnLogRecordError(TransactionError):
    pass
