"""Errors that packages on both sides name alike, defined once so each name is one class.

Two packages that cannot import each other (the broker and the application side, or
the coordinators' packages) each used to define a class of these names. Now the name is
this one class, re-exported where it was; a package raises a subclass that derives from
its own root as well, so ``except`` on either the shared name or the package's root
catches it::

    TransactionError               a transaction cannot go on
    │                              (transactions: the coordinator's root;
    │                              streams.runtime: TransactionAbortedError)
    BrokerError                    a broker could not serve a request
    │                              (log_broker: the server's root;
    │                              spark_bridge: BrokerRequestError)
    CoordinatorNotAvailableError   a coordinator cannot answer now (15, retriable)
                                   (TxnCoordinatorNotAvailableError,
                                   GroupCoordinatorNotAvailableError)

``IllegalTransitionError`` (in :mod:`headrace.base._lifecycle`) follows the same rule;
``StateStoreError`` and ``SerializationError`` live in ``headrace.state``, the lowest
package that needs them.

Each carries ``retriable`` (may the same request succeed later?) and ``error_code`` (the
Kafka protocol error code a broker answers with; -1 is UNKNOWN_SERVER_ERROR).
"""

from __future__ import annotations

COORDINATOR_NOT_AVAILABLE = 15


class TransactionError(Exception):
    """A transaction cannot go on as asked."""

    retriable: bool = False
    error_code: int = -1


class BrokerError(Exception):
    """A broker could not serve a request, seen from either end of the connection."""

    retriable: bool = False
    error_code: int = -1


class CoordinatorNotAvailableError(Exception):
    """A group or transaction coordinator cannot answer now (its log could not be
    written, or the group is being deleted); the client finds the coordinator again and
    retries."""

    retriable: bool = True
    error_code: int = COORDINATOR_NOT_AVAILABLE
