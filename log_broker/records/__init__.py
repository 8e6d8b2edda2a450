"""Kafka record batches, the layer below the broker's storage: their frame and codecs
(``_batches``), compression (``_compression``), the checks a produce payload must pass
(``_validation``) and the walkers that read each record as Kafka does (``_walk``: in C
where the extension ``_crecord_walk`` was built, else aiokafka's decoder or Python).

It imports nothing of storage or the server: storage appends what it validates, and the
server and its tools read batches through it.
"""

from ._errors import CorruptRecordError as CorruptRecordError
from ._errors import InvalidRecordError as InvalidRecordError
from ._errors import RecordError as RecordError
from ._errors import RecordTooLargeError as RecordTooLargeError

__all__ = ["CorruptRecordError", "InvalidRecordError", "RecordError", "RecordTooLargeError"]
