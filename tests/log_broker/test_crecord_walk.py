"""The C record walker reads exactly as Kafka's reading in Python, its specification.

Both walkers get the same bodies: well-formed ones, every varint at its limits, and
bodies corrupted systematically (every truncation, every bit flipped, every byte set to
an edge value) and at random (hypothesis). They must agree on every one: the same facts
for a body they read, the same message for one they refuse.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from headrace.log_broker.records import CorruptRecordError, _compiled_reader, _walk
from headrace.log_broker.records._kafka_reader import RecordFacts
from headrace.log_broker.records._kafka_reader import read_records as read_in_python

_loaded = _compiled_reader.load()
assert _loaded is not None, "the C record walker was not built (pip install -e . with gcc)"
read_in_c: _compiled_reader.ReadRecords = _loaded

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

Outcome = tuple[Any, ...]


def outcome(read: Callable[[Any, int], RecordFacts], data: Any, count: int) -> Outcome:
    try:
        facts = read(data, count)
    except CorruptRecordError as exc:
        return ("refused", str(exc))
    return ("read", facts.in_order, facts.keyless, facts.attributes_ok)


def agree(body: bytes, count: int) -> Outcome:
    """Both walkers' outcome for ``body``, asserted equal; the C one over each kind of
    buffer the broker hands it."""
    expected = outcome(read_in_python, body, count)
    for data in (body, bytearray(body), memoryview(b"\xff" + body + b"\xff")[1:-1]):
        assert outcome(read_in_c, data, count) == expected, (body.hex(), count)
    return expected


# ------------------------------------------------------------------------- encoding


def varint(value: int, padding: int = 0) -> bytes:
    """Zigzag ``value`` in the fewest bytes, then ``padding`` more that add nothing
    (continuation bits over zero groups): still one value, just a longer form."""
    raw = 2 * value if value >= 0 else -2 * value - 1
    out = bytearray()
    while raw >= 0x80:
        out.append(raw & 0x7F | 0x80)
        raw >>= 7
    out.append(raw)
    if padding:
        out[-1] |= 0x80
        out += b"\x80" * (padding - 1) + b"\x00"
    return bytes(out)


def blob(data: bytes | None, size_form: bytes | None = None) -> bytes:
    """A key, value or header value: its length (or -1 for null) and the bytes."""
    if size_form is not None:
        return size_form + (data or b"")
    return varint(-1) if data is None else varint(len(data)) + data


def record(
    offset_delta: int = 0,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    headers: tuple[tuple[bytes, bytes | None], ...] = (),
    *,
    attributes: int = 0,
    timestamp: bytes | None = None,
    offset_form: bytes | None = None,
    key_form: bytes | None = None,
    header_count_form: bytes | None = None,
    length_change: int = 0,
    length_padding: int = 0,
) -> bytes:
    """One record as Kafka writes it; the ``*_form`` arguments replace a field's varint."""
    fields = bytes([attributes])
    fields += timestamp if timestamp is not None else varint(7)
    fields += offset_form if offset_form is not None else varint(offset_delta)
    fields += blob(key, key_form) + blob(value)
    fields += header_count_form if header_count_form is not None else varint(len(headers))
    for name, header_value in headers:
        fields += varint(len(name)) + name + blob(header_value)
    return varint(len(fields) + length_change, length_padding) + fields


def body(*records: bytes) -> bytes:
    return b"".join(records)


SEEDS = {
    "one record": body(record()),
    "three records": body(record(0), record(1, None, b"x" * 70), record(2, b"", None)),
    "headers": body(record(0, headers=((b"trace", b"\x00\xff"), (b"h\xc3\xa9", None))), record(1)),
    "binary value": body(record(0, b"\x80" * 6, bytes(range(256)))),
    "padded varints": body(
        record(0, timestamp=varint(-3, 9), offset_form=varint(0, 4), length_padding=4),
        record(1, key_form=varint(1, 4), header_count_form=varint(0, 4)),
    ),
}


# ------------------------------------------------------------------------- well-formed


@pytest.mark.parametrize("name", list(SEEDS))
def test_well_formed_bodies_read_alike(name: str) -> None:
    data = SEEDS[name]
    count = sum(1 for _ in _record_starts(data))
    assert agree(data, count) == ("read", True, name == "three records", True)


def test_the_facts_are_reported() -> None:
    assert agree(body(record(1), record(0)), 2) == ("read", False, False, True)
    assert agree(body(record(0, None)), 1) == ("read", True, True, True)
    assert agree(body(record(0, attributes=0x80)), 1) == ("read", True, False, False)


def _record_starts(data: bytes) -> Iterator[int]:
    pos = 0
    while pos < len(data):
        yield pos
        raw = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            raw |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        pos += raw >> 1


# ------------------------------------------------------------------------- varint limits


def _int32_refusal(value: int) -> str:
    if len(varint(value)) > 5:
        return "varint longer than 5 bytes"
    return f"varint {value} is outside the int32 range"


def _limit_cases() -> Iterator[tuple[str, bytes, str]]:
    """(name, body, "read" or the start of the refusal) for every varint field at the
    edges of its length (5 bytes for an int32, 10 for an int64) and of its range."""
    for padding in (3, 4, 5):  # a one-byte value in 4, 5 and 6 bytes
        verdict = "read" if padding < 5 else "varint longer than 5 bytes"
        size = f"in {1 + padding} bytes"
        yield f"length {size}", body(record(length_padding=padding)), verdict
        yield f"offsetDelta {size}", body(record(offset_form=varint(0, padding))), verdict
        yield f"key size {size}", body(record(key_form=varint(1, padding))), verdict
        yield f"header count {size}", body(record(header_count_form=varint(0, padding))), verdict
    for padding in (8, 9, 10):
        yield (
            f"timestampDelta in {1 + padding} bytes",
            body(record(timestamp=varint(0, padding))),
            "read" if padding < 10 else "varint longer than 10 bytes",
        )
    for value in (*INT64, INT64[0] - 1, INT64[1] + 1, 2**69 - 1, 2**69):
        # Kafka keeps whatever a tenth byte holds: only the form of a varlong counts.
        form = varint(value)
        verdict = "read" if len(form) <= 10 else "varint longer than 10 bytes"
        yield f"timestampDelta {value}", body(record(timestamp=form)), verdict
    for value in (*INT32, INT32[0] - 1, INT32[1] + 1, 2**34 - 1, -(2**34), 2**34):
        inside = INT32[0] <= value <= INT32[1]
        refused = _int32_refusal(value)
        yield (
            f"offsetDelta {value}",
            body(record(offset_form=varint(value))),
            "read" if inside else refused,
        )
        # A negative size is a null key; the largest positive one runs past the end.
        key = "read" if value < 0 else "a record runs past the end of the batch"
        yield (
            f"key size {value}",
            body(record(key=None, key_form=varint(value))),
            key if inside else refused,
        )
        # The header count ends the record: a positive one runs past the end.
        count = "negative record header count" if value < 0 else "a record runs past"
        yield (
            f"header count {value}",
            body(record(header_count_form=varint(value))),
            count if inside else refused,
        )


LIMITS = {name: (data, verdict) for name, data, verdict in _limit_cases()}


@pytest.mark.parametrize("name", list(LIMITS))
def test_every_varint_at_its_limits(name: str) -> None:
    data, verdict = LIMITS[name]
    seen = agree(data, 1)
    if verdict == "read":
        assert seen[0] == "read", seen
    else:
        assert seen[0] == "refused" and seen[1].startswith(verdict), seen


# ------------------------------------------------------------------------- corruption


def _corruptions(data: bytes) -> Iterator[bytes]:
    """Every truncation, every single bit flipped, every byte set to an edge value, and
    every byte dropped or doubled."""
    for cut in range(len(data)):
        yield data[:cut]
    for at in range(len(data)):
        for bit in range(8):
            yield data[:at] + bytes([data[at] ^ (1 << bit)]) + data[at + 1 :]
        for edge in (0x00, 0x01, 0x7F, 0x80, 0xFF):
            yield data[:at] + bytes([edge]) + data[at + 1 :]
        yield data[:at] + data[at + 1 :]
        yield data[: at + 1] + data[at:]


@pytest.mark.parametrize("name", list(SEEDS))
def test_systematic_corruptions_read_alike(name: str) -> None:
    data = SEEDS[name]
    count = sum(1 for _ in _record_starts(data))
    verdicts: set[str] = set()
    for corrupted in _corruptions(data):
        for claimed in (count, count - 1, count + 1):
            seen = agree(corrupted, claimed)
            verdicts.add("read" if seen[0] == "read" else re.sub(r"-?\d+", "N", seen[1]))
    # The corruptions reach far into both walks: bodies read, and refused for many reasons.
    assert (
        len(verdicts) >= 7
        and {
            "read",
            "a record runs past the end of the batch",
            "record length runs past the end of the batch",
            "N bytes left after the last record",
        }
        <= verdicts
    ), sorted(verdicts)


def test_header_names_are_decoded_as_python_does() -> None:
    for name in (b"\xff", b"\xc3", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"a\xe9"):
        data = body(record(headers=((name, b"x"),)))
        seen = agree(data, 1)
        assert seen[0] == "refused" and "is not UTF-8" in seen[1], seen
    for name in (b"", "\u00e9".encode(), "\U0001f600".encode(), b"\x7f"):
        assert agree(body(record(headers=((name, b"x"),))), 1)[0] == "read"


def test_counts_without_records() -> None:
    for count in (0, -1, INT32[0], INT32[1]):
        agree(b"", count)
        agree(SEEDS["one record"], count)


# ------------------------------------------------------------------------- generated


@st.composite
def varint_form(draw: st.DrawFn, low: int, high: int, longest: int, *, odd: bool) -> bytes:
    """A value in ``[low, high]`` in its shortest form or padded up to ``longest`` bytes;
    if ``odd``, sometimes far outside the range or padded past ``longest``."""
    wide = odd and draw(st.booleans())
    value = draw(st.integers(-(2**36), 2**36) if wide else st.integers(low, high))
    room = longest - len(varint(value))
    paddings = [0, 0, 0, 1, room, room + 1] if odd else [0, 0, 0, 1, room]
    return varint(value, max(0, draw(st.sampled_from(paddings))))


names = st.one_of(st.text(max_size=4).map(str.encode), st.binary(max_size=4))
values = st.one_of(st.none(), st.binary(max_size=20))


@st.composite
def one_record(draw: st.DrawFn, index: int) -> bytes:
    """A record as Kafka could write it (in_order or not, any flags, varints in any form
    Kafka reads); one in four also has fields that are wrong or in forms Kafka refuses."""
    odd = draw(st.integers(0, 3)) == 0
    key = draw(values)
    key_form = None
    if odd and draw(st.booleans()):
        key_form = draw(varint_form(-2, 40, 5, odd=True))
    elif key is not None:
        key_form = draw(varint_form(len(key), len(key), 5, odd=False))
    name = names if odd else st.text(max_size=4).map(str.encode)
    headers = tuple(draw(st.lists(st.tuples(name, values), max_size=3)))
    return record(
        draw(st.sampled_from([index, index, index, index + 1, 0])),
        key,
        draw(values),
        headers,
        attributes=draw(st.sampled_from([0, 0, 0, 1, 0x7F, 0x80, 0xFF])),
        timestamp=draw(varint_form(-(2**63), 2**63 - 1, 10, odd=odd)),
        offset_form=draw(varint_form(index, index, 5, odd=odd)) if odd else None,
        key_form=key_form,
        header_count_form=draw(varint_form(-2, 4, 5, odd=True)) if odd else None,
        length_change=draw(st.sampled_from([0, -1, 1, -3])) if odd else 0,
        length_padding=draw(st.sampled_from([0, 0, 0, 1, 4, 5] if odd else [0, 0, 0, 1, 4])),
    )


@st.composite
def generated_body(draw: st.DrawFn) -> tuple[bytes, int]:
    """A few records, then (more often than not) a few random mutations."""
    count = draw(st.integers(0, 5))
    data = body(*(draw(one_record(index)) for index in range(count)))
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2, 3]))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["flip", "set", "cut", "insert"]))
        if kind == "flip" and at < len(data):
            data = data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1 :]
        elif kind == "set" and at < len(data):
            data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
        elif kind == "cut":
            data = data[:at]
        elif kind == "insert":
            data = data[:at] + draw(st.binary(min_size=1, max_size=6)) + data[at:]
    claimed = draw(st.sampled_from([count, count, count, count - 1, count + 1, -1]))
    return data, claimed


@settings(max_examples=2500, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(generated_body())
def test_generated_bodies_read_alike(case: tuple[bytes, int]) -> None:
    seen = agree(*case)
    event("read" if seen[0] == "read" else re.sub(r"-?\d+", "N", seen[1])[:40])


# ------------------------------------------------------------------------- choice


def test_the_compiled_walker_is_the_one_in_use() -> None:
    assert _walk.record_walker() == _walk.COMPILED


def test_without_the_extension_the_broker_walks_records_otherwise() -> None:
    """An install without a C compiler has no extension; the broker still starts and
    checks records, with aiokafka's decoder and Kafka's reading in Python."""
    program = (
        "import sys\n"
        "sys.modules['headrace.log_broker.records._crecord_walk'] = None  # as if never built\n"
        "from headrace.log_broker.records import _compiled_reader, _walk\n"
        "assert _compiled_reader.load() is None\n"
        "print(_walk.record_walker())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == _walk.AIOKAFKA
