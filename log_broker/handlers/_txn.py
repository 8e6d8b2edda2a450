"""What the transaction handlers share: one error code for any transactions error."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from headrace.transactions import ProducerFencedError, TransactionError


def txn_error_code(exc: TransactionError, *, fenced_allowed: bool) -> ErrorCode:
    """The code to answer with; PRODUCER_FENCED only where the request version has it
    (KIP-588), INVALID_PRODUCER_EPOCH before."""
    if isinstance(exc, ProducerFencedError):
        return ErrorCode(exc.code_for(fenced_allowed))
    return ErrorCode(exc.error_code)
