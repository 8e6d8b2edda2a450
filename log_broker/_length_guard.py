"""Every length in a request body checked against the bytes that follow it, before kio
decodes the body.

kio's native decoder takes an array's length on trust and reserves room for that many
items first: one request with a length of 2^31 made it ask for hundreds of gigabytes, and
the allocation failure aborts the whole process (Rust does not unwind out of it), so no
``except`` can catch it. This walk reads only the lengths the schema says are there
(arrays, strings, bytes, records, tagged fields), in both encodings (int16/int32 and
unsigned varints for flexible versions), and refuses a length larger than what is left
of the frame, and a null array where the schema has none (kio reads it as None, which
the handlers, written to the schema, would fail on). It allocates nothing and does no per-record work: records are skipped by
their length. The schema of each API version is compiled once into a list of steps.
"""

from __future__ import annotations

import dataclasses
import struct
import typing
from functools import cache
from typing import Any

# kafka_type -> bytes of a fixed-size field
_FIXED = {
    "int8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "float64": 8,
    "uuid": 16,
}
_LENGTHED = {"string": 2, "bytes": 4, "records": 4}  # legacy (non-flexible) length prefix size
_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


class RequestLengthError(ValueError):
    """A length in the request reaches past the end of the frame."""


Step = tuple[
    str, Any
]  # (kind, detail): "fixed" n, "lengthed" prefix, "[nullable ]entity" plan, "[nullable ]array" element


@cache
def _plan(cls: Any) -> tuple[tuple[Step, ...], bool]:
    """The steps that walk one entity of ``cls``, and whether it is flexible."""
    flexible = bool(cls.__flexible__)
    hints = typing.get_type_hints(cls)
    steps: list[Step] = []
    for field in dataclasses.fields(cls):
        if "tag" in field.metadata:
            continue  # tagged fields travel in the tagged section, skipped by length
        steps.append(_step(hints[field.name], field.metadata.get("kafka_type")))
    return tuple(steps), flexible


def _step(annotation: Any, kafka_type: str | None) -> Step:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin is tuple:
        return ("array", _step(args[0], kafka_type))
    if origin is not None and args and typing.get_origin(args[0]) is tuple:  # X | None
        return ("nullable array", _step(args[0], kafka_type)[1])
    entity = next((a for a in (annotation, *args) if dataclasses.is_dataclass(a)), None)
    if entity is not None and origin is not None:  # X | None: a nullable struct
        return ("nullable entity", entity)
    if entity is not None:
        return ("entity", entity)
    if kafka_type in _FIXED:
        return ("fixed", _FIXED[kafka_type])
    if kafka_type in _LENGTHED:
        return ("lengthed", _LENGTHED[kafka_type])
    raise TypeError(f"no length rule for {annotation!r} ({kafka_type})")


def check_body(schema: Any, data: bytes, position: int) -> int:
    """Walk a body of ``schema`` at ``position``; the position after it. Raises
    RequestLengthError when a length reaches past the end of ``data``."""
    try:
        return _entity(schema, data, position)
    except (IndexError, struct.error):
        raise RequestLengthError("the request ends inside a field") from None


def _entity(cls: Any, data: bytes, position: int) -> int:
    steps, flexible = _plan(cls)
    for step in steps:
        position = _walk(step, flexible, data, position)
    if flexible:
        position = _tagged(data, position)
    return position


def _walk(step: Step, flexible: bool, data: bytes, position: int) -> int:
    kind, detail = step
    if kind == "fixed":
        return _within(data, position + detail)
    if kind == "lengthed":
        if flexible:
            length, position = _uvarint(data, position)
            length -= 1  # 0 is null
        elif detail == 2:
            (length,) = _I16.unpack_from(data, position)
            position += 2
        else:
            (length,) = _I32.unpack_from(data, position)
            position += 4
        return _within(data, position + max(length, 0))
    if kind == "entity":
        return _entity(detail, data, position)
    if kind == "nullable entity":  # an int8 marker first: -1 for null (e.g. a cursor)
        present = data[position] != 0xFF
        return _entity(detail, data, position + 1) if present else position + 1
    # an array: its length, checked before any item is walked
    if flexible:
        count, position = _uvarint(data, position)
        count -= 1  # 0 is null
    else:
        (count,) = _I32.unpack_from(data, position)
        position += 4
    if count > len(data) - position:  # every item takes at least one byte
        raise RequestLengthError(f"an array of {count} items in {len(data) - position} bytes")
    if count < 0 and kind == "array":
        # kio reads it as None, which no handler expects where the schema has a list
        raise RequestLengthError("a null array where the schema allows none")
    for _ in range(max(count, 0)):
        position = _walk(detail, flexible, data, position)
    return position


def _tagged(data: bytes, position: int) -> int:
    count, position = _uvarint(data, position)
    if count > len(data) - position:
        raise RequestLengthError(f"{count} tagged fields in {len(data) - position} bytes")
    for _ in range(count):
        _tag, position = _uvarint(data, position)
        size, position = _uvarint(data, position)
        position = _within(data, position + size)
    return position


def _uvarint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7
        if shift > 28:
            raise RequestLengthError("a varint longer than five bytes")


def _within(data: bytes, position: int) -> int:
    if position > len(data):
        raise RequestLengthError(f"a field reaches byte {position} of a {len(data)}-byte request")
    return position
