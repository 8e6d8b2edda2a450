"""Walk every record of an uncompressed batch body with the fastest exact walker here.

Three walkers read records as Kafka does (``_kafka_record_reader`` is the
specification). Which one runs is settled when this module is imported, and
``record_walker()`` names it (the broker logs it at start-up):

- ``compiled``: our C extension (``_compiled_reader``) reads every body exactly
  as Kafka does, a few nanoseconds a record. It is built when the package is installed
  where a C compiler is, and optional, so an install without one still works.
- ``aiokafka``: without it, aiokafka's compiled decoder (``_aiokafka_walk``)
  walks the bodies a screen proves it reads as Kafka does, and the Python reading
  (about 0.9 us a record) reads the others: random or compressed-looking values.
- ``python``: the Python reading alone, where aiokafka lacks its extensions too.

Every walker refuses a record attributes byte with its top bit set (INVALID_RECORD):
Kafka defines no record attribute and no client writes one, and stored it would stop
every aiokafka consumer, ours included, at that offset.
"""

from __future__ import annotations

import struct

from . import _aiokafka_walk, _compiled_reader
from ._errors import InvalidRecordError
from ._kafka_reader import RecordFacts, read_records

__all__ = ["AIOKAFKA", "COMPILED", "PYTHON", "check_records", "record_walker"]

COMPILED = "compiled"
AIOKAFKA = "aiokafka"
PYTHON = "python"

_read_compiled = _compiled_reader.load()
# Settled once, here (tests set it to run a case with each walker).
_walker = COMPILED if _read_compiled is not None else AIOKAFKA

_COUNT_AT = 57
_COUNT = struct.Struct(">i")

OUT_OF_ORDER = "record offset deltas are not 0, 1, 2, ... up to lastOffsetDelta"
KEYLESS = "Compacted topic cannot accept message without key"
ATTRIBUTES = "a record attributes byte has its top bit set (Kafka defines no record attribute)"


def record_walker() -> str:
    """The walker that reads produced records (module docstring). For ``aiokafka`` its
    decoder is loaded here, so that no produce pays for loading it."""
    if _walker == COMPILED and _read_compiled is not None:
        return COMPILED
    if _walker != PYTHON and _aiokafka_walk.loaded():
        return AIOKAFKA
    return PYTHON


def check_records(
    header: bytes | bytearray | memoryview,
    body: bytes | bytearray | memoryview,
    *,
    require_keys: bool,
) -> None:
    """Decode every record of ``body`` (uncompressed, as many as the 61-byte ``header``
    counts; its baseOffset must be 0, so offsets come out as deltas).

    ``CorruptRecordError`` when a record's length disagrees with its fields, a field
    runs past the end, a varint is longer or larger than Kafka reads, a header name is
    not UTF-8, there are fewer records than counted or bytes are left over;
    ``InvalidRecordError`` when the offset deltas are not 0, 1, 2, ... in order, a
    record's attributes byte has its top bit set, or (``require_keys``) a record has
    no key.
    """
    count = _COUNT.unpack_from(header, _COUNT_AT)[0]
    if _walker == COMPILED and _read_compiled is not None:
        facts = _read_compiled(body, count)
    elif (
        _walker != PYTHON and _aiokafka_walk.loaded() and _aiokafka_walk.reads_as_kafka(body, count)
    ):
        facts = _aiokafka_walk.read_records(header, body, need_keys=require_keys)
    else:
        facts = read_records(bytes(body), count)
    _raise_for(facts, require_keys=require_keys)


def _raise_for(facts: RecordFacts, *, require_keys: bool) -> None:
    if not facts.in_order:
        raise InvalidRecordError(OUT_OF_ORDER)
    if not facts.attributes_ok:
        raise InvalidRecordError(ATTRIBUTES)
    if require_keys and facts.keyless:
        raise InvalidRecordError(KEYLESS)
