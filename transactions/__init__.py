"""Idempotent-producer state and the transaction coordinator (broker side, no sockets).

Imports nothing from log_broker: the broker wires these in over small interfaces
(``TxnLogWriter``, ``MarkerWriter``, ``ProducerIdSource``, ``Clock``, and batch headers
read as ``BatchInfo``).

- ``ProducerStates``: one partition's producers (epochs, 5-batch dedupe window, open
  transactions, last stable offset), snapshotted with ``encode_snapshot``.
- ``AbortedTxnIndex``: one partition's aborted transactions, for read_committed fetch.
- ``TransactionCoordinator``: transactional ids and their transactions, kept in
  ``__transaction_state`` (record codec in ``encode_key``/``encode_value``...); its
  ``verify_append`` tells Produce whether a transactional batch belongs to an ongoing
  transaction that includes its partition (KIP-890).
- ``ProducerIdAllocator``: producer ids unique across restarts.

Errors are rooted at ``TransactionError`` (tree in ``_errors``).
"""

from headrace.base import Clock as Clock
from headrace.base import CoordinatorNotAvailableError as CoordinatorNotAvailableError
from headrace.base import IllegalTransitionError as IllegalTransitionError
from headrace.base import ManualClock as ManualClock
from headrace.base import SystemClock as SystemClock
from headrace.base import TransactionError as TransactionError

from ._aborted_index import AbortedTxn as AbortedTxn
from ._aborted_index import AbortedTxnIndex as AbortedTxnIndex
from ._coordinator import MarkerWriter as MarkerWriter
from ._coordinator import ProducerIdSource as ProducerIdSource
from ._coordinator import TransactionCoordinator as TransactionCoordinator
from ._coordinator import TxnLogWriter as TxnLogWriter
from ._coordinator import TxnMarkers as TxnMarkers
from ._errors import ConcurrentTransactionsError as ConcurrentTransactionsError
from ._errors import CoordinatorError as CoordinatorError
from ._errors import CorruptSnapshotError as CorruptSnapshotError
from ._errors import IllegalTxnTransitionError as IllegalTxnTransitionError
from ._errors import InvalidProducerEpochError as InvalidProducerEpochError
from ._errors import InvalidProducerIdMappingError as InvalidProducerIdMappingError
from ._errors import InvalidRequestError as InvalidRequestError
from ._errors import InvalidTransactionTimeoutError as InvalidTransactionTimeoutError
from ._errors import InvalidTxnStateError as InvalidTxnStateError
from ._errors import OutOfOrderSequenceError as OutOfOrderSequenceError
from ._errors import ProducerFencedError as ProducerFencedError
from ._errors import ProducerStateError as ProducerStateError
from ._errors import TransactionalIdNotFoundError as TransactionalIdNotFoundError
from ._errors import TxnCoordinatorFencedError as TxnCoordinatorFencedError
from ._errors import TxnCoordinatorNotAvailableError as TxnCoordinatorNotAvailableError
from ._errors import TxnLogRecordError as TxnLogRecordError
from ._producer_ids import ProducerIdAllocator as ProducerIdAllocator
from ._producer_state import AppendPlan as AppendPlan
from ._producer_state import BatchInfo as BatchInfo
from ._producer_state import CompletedTxn as CompletedTxn
from ._producer_state import Duplicate as Duplicate
from ._producer_state import ProducerEntry as ProducerEntry
from ._producer_state import ProducerStates as ProducerStates
from ._snapshot import decode_snapshot as decode_snapshot
from ._snapshot import encode_snapshot as encode_snapshot
from ._txn_log import TOPIC as TXN_LOG_TOPIC
from ._txn_log import decode_key as decode_txn_log_key
from ._txn_log import decode_value as decode_txn_log_value
from ._txn_log import encode_key as encode_txn_log_key
from ._txn_log import encode_value as encode_txn_log_value
from ._txn_log import partition_for as txn_log_partition_for
from ._txn_metadata import TRANSITIONS as TXN_TRANSITIONS
from ._txn_metadata import ProducerIdAndEpoch as ProducerIdAndEpoch
from ._txn_metadata import TopicPartition as TopicPartition
from ._txn_metadata import TransactionMetadata as TransactionMetadata
from ._txn_metadata import TxnState as TxnState

__all__ = [
    "TXN_LOG_TOPIC",
    "TXN_TRANSITIONS",
    "AbortedTxn",
    "AbortedTxnIndex",
    "AppendPlan",
    "BatchInfo",
    "Clock",
    "CompletedTxn",
    "ConcurrentTransactionsError",
    "CoordinatorError",
    "CoordinatorNotAvailableError",
    "CorruptSnapshotError",
    "Duplicate",
    "IllegalTransitionError",
    "IllegalTxnTransitionError",
    "InvalidProducerEpochError",
    "InvalidProducerIdMappingError",
    "InvalidRequestError",
    "InvalidTransactionTimeoutError",
    "InvalidTxnStateError",
    "ManualClock",
    "MarkerWriter",
    "OutOfOrderSequenceError",
    "ProducerEntry",
    "ProducerFencedError",
    "ProducerIdAllocator",
    "ProducerIdAndEpoch",
    "ProducerIdSource",
    "ProducerStateError",
    "ProducerStates",
    "SystemClock",
    "TopicPartition",
    "TransactionCoordinator",
    "TransactionError",
    "TransactionMetadata",
    "TransactionalIdNotFoundError",
    "TxnCoordinatorFencedError",
    "TxnCoordinatorNotAvailableError",
    "TxnLogRecordError",
    "TxnLogWriter",
    "TxnMarkers",
    "TxnState",
    "decode_snapshot",
    "decode_txn_log_key",
    "decode_txn_log_value",
    "encode_snapshot",
    "encode_txn_log_key",
    "encode_txn_log_value",
    "txn_log_partition_for",
]
