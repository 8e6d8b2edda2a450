"""How a transaction's state is named on the wire (DescribeTransactions,
ListTransactions): the names of Kafka's ``TransactionState``."""

from __future__ import annotations

from headrace.transactions._txn_metadata import TxnState

STATE_NAMES = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
}
KNOWN_NAMES = frozenset(STATE_NAMES.values()) | {"PrepareEpochFence"}
