from __future__ import annotations

from headrace import transactions
from headrace.transactions import _errors


def test_public_surface_is_pinned() -> None:
    assert sorted(transactions.__all__) == sorted(
        [
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
    )
    for name in transactions.__all__:
        assert getattr(transactions, name) is not None


def test_every_error_descends_from_the_root_and_carries_codes() -> None:
    # The root and two names shared with the group coordinator are headrace.base's;
    # every class defined here descends from that root.
    errors = [
        value
        for value in vars(_errors).values()
        if isinstance(value, type)
        and issubclass(value, Exception)
        and value.__module__ == _errors.__name__
    ]
    assert len(errors) == 16
    for error in [*errors, transactions.TransactionError]:
        assert getattr(transactions, error.__name__) is error
        assert issubclass(error, transactions.TransactionError)
        assert isinstance(error.retriable, bool)
        assert isinstance(error.error_code, int)
        assert error.__name__ in (_errors.__doc__ or "")
