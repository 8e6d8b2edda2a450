"""Records read exactly as Kafka reads them, in C: the extension ``_crecord_walk``,
built from ``_crecord_walk.c`` when the package is installed where a C compiler is.

It reads as ``_kafka_record_reader.read_records`` does, byte for byte and message for
message (a differential test holds it to that), about a hundred times faster. It is
optional: ``load()`` returns None where it was not built, and the broker then reads
records in Python.
"""

from __future__ import annotations

from collections.abc import Callable

from ._errors import CorruptRecordError
from ._kafka_reader import RecordFacts

__all__ = ["ReadRecords", "load"]

ReadRecords = Callable[[bytes | bytearray | memoryview, int], RecordFacts]


def load() -> ReadRecords | None:
    """The compiled ``read_records``, or None where the extension was not built."""
    try:
        from ._crecord_walk import ATTRIBUTES_OK, IN_ORDER, KEYLESS, walk
    except ImportError:
        return None

    def read_records(data: bytes | bytearray | memoryview, count: int) -> RecordFacts:
        """Read ``count`` records filling ``data`` exactly, as Kafka does;
        ``CorruptRecordError`` at the first thing Kafka would refuse."""
        result = walk(data, count)
        if isinstance(result, str):  # the walk leaves raising to the owner of the class
            raise CorruptRecordError(result)
        return RecordFacts(
            in_order=bool(result & IN_ORDER),
            keyless=bool(result & KEYLESS),
            attributes_ok=bool(result & ATTRIBUTES_OK),
        )

    return read_records
