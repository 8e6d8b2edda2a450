"""The one exception root of the spark_bridge package::

    SparkBridgeError                 root; ``retriable`` says whether a retry can succeed
    ├── OptionError                  a source option or command argument is invalid
    ├── MissingDependencyError       pyspark, pyarrow or deltalake is not installed
    ├── BrokerRequestError           the Kafka client failed (retriable: the broker may return);
    │   │                            also a headrace.base.BrokerError
    │   └── OffsetRangeError         a planned offset range is no longer readable
    ├── DecodeError                  a record's value is not in its declared format
    └── DeltaError                   the Delta table could not be read or committed
        └── UnsupportedTableError    the table uses a feature the file-level reader lacks

Errors from confluent-kafka and deltalake are translated into these where they enter.
"""

from __future__ import annotations

from headrace.base import BrokerError as BrokerError


class SparkBridgeError(Exception):
    """Root of every error raised by the spark_bridge package."""

    retriable: bool = False


class OptionError(SparkBridgeError):
    """A data source option or command argument is missing, unknown or malformed."""


class MissingDependencyError(SparkBridgeError):
    """An optional dependency (the ``spark`` extra) is not installed."""


class BrokerRequestError(SparkBridgeError, BrokerError):
    """The Kafka client could not list, locate or fetch what was asked."""

    retriable = True


class OffsetRangeError(BrokerRequestError):
    """Records of a planned range were deleted (retention) before they were read.

    Not retriable: reading again cannot bring deleted records back.
    """

    retriable = False


class DecodeError(SparkBridgeError):
    """A record's value is not in the format it was declared to have (``--value-format
    json`` on a value that is not a JSON object, or whose fields do not fit the columns).

    ``row`` is the value's index in the batch being decoded; the export job, which knows
    the batch's records, names the record's topic, partition and offset in the message.
    Not retriable: reading the record again gives the same bytes.
    """

    def __init__(self, message: str, *, row: int | None = None) -> None:
        super().__init__(message)
        self.row = row


class DeltaError(SparkBridgeError):
    """A Delta Lake table could not be read or a commit failed.

    A commit that lost a race with another writer is retriable; the rest are not.
    """

    def __init__(self, message: str, *, retriable: bool = False) -> None:
        super().__init__(message)
        self.retriable = retriable


class UnsupportedTableError(DeltaError):
    """The table needs a reader feature (deletion vectors, column mapping) that reading
    its Parquet files directly cannot honour."""
