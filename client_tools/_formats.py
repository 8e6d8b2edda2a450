"""Key and value formats of ``produce`` and ``consume``: a table of named encoders and
decoders.

An encoder turns a line's text into record bytes; a decoder turns record bytes into a
value (a str, an int, a dict...) and ``text`` shows that value in a template. Each entry
builds its functions from a ``Target`` (the topic, key or value, the parsed options),
so a format that needs more than the bytes (a schema format looks up the topic's
subject) is one more entry here. Formats that only decode (``windowed``) have no
encoder.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Encode = Callable[[str], bytes]
Decode = Callable[[bytes], Any]

_LONG = struct.Struct(">q")


class FormatError(ValueError):
    """Text that does not encode, or bytes that do not decode, in the chosen format."""


@dataclass(frozen=True)
class Target:
    topic: str
    is_key: bool
    args: argparse.Namespace


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@dataclass(frozen=True)
class Format:
    name: str
    help: str
    encoder: Callable[[Target], Encode] | None
    decoder: Callable[[Target], Decode]
    text: Callable[[Any], str] = _text
    for_keys: bool = True


def _string_encode(text: str) -> bytes:
    return text.encode()


def _string_decode(data: bytes) -> str:
    return data.decode(errors="replace")


def _json_encode(text: str) -> bytes:
    try:
        json.loads(text)
    except ValueError as exc:
        raise FormatError(f"not valid JSON ({exc})") from None
    return text.encode()  # as written: the check must not reorder or reformat it


def _json_decode(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise FormatError(f"not valid JSON ({exc})") from None


def _long_encode(text: str) -> bytes:
    try:
        return _LONG.pack(int(text))
    except (ValueError, struct.error):
        raise FormatError(f"not a 64-bit integer: {text!r}") from None


def _long_decode(data: bytes) -> int:
    if len(data) != 8:
        raise FormatError(f"a long is 8 bytes, got {len(data)}")
    value: int = _LONG.unpack(data)[0]
    return value


def _base64_encode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise FormatError(f"not base64 ({exc})") from None


def _base64_decode(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _windowed_decode(data: bytes) -> dict[str, Any]:
    # Kafka Streams' TimeWindowedSerializer: inner key bytes, then the start (8 bytes).
    if len(data) < 8:
        raise FormatError(f"a windowed key is at least 8 bytes, got {len(data)}")
    return {"key": _string_decode(data[:-8]), "start": _LONG.unpack(data[-8:])[0]}


def _session_decode(data: bytes) -> dict[str, Any]:
    # SessionWindowedSerializer: inner key bytes, then the end and the start (8 bytes each).
    if len(data) < 16:
        raise FormatError(f"a session-windowed key is at least 16 bytes, got {len(data)}")
    end, start = struct.unpack(">qq", data[-16:])
    return {"key": _string_decode(data[:-16]), "start": start, "end": end}


def _windowed_text(value: dict[str, Any]) -> str:
    end = f"/{value['end']}" if "end" in value else ""
    return f"[{value['key']}@{value['start']}{end}]"


def _fixed(function: Any) -> Callable[[Target], Any]:
    return lambda _target: function


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("string", "UTF-8 text", _fixed(_string_encode), _fixed(_string_decode)),
        Format(
            "json",
            "JSON text (checked when produced, parsed when consumed)",
            _fixed(_json_encode),
            _fixed(_json_decode),
        ),
        Format(
            "long",
            "8-byte big-endian integer (Kafka's LongSerializer)",
            _fixed(_long_encode),
            _fixed(_long_decode),
        ),
        Format(
            "base64",
            "raw bytes, written as base64 text",
            _fixed(_base64_encode),
            _fixed(_base64_decode),
        ),
        Format(
            "windowed",
            "Kafka Streams time-windowed string key (consume only)",
            None,
            _fixed(_windowed_decode),
            _windowed_text,
        ),
        Format(
            "session-windowed",
            "Kafka Streams session-windowed string key (consume only)",
            None,
            _fixed(_session_decode),
            _windowed_text,
        ),
    )
}


def encoder(name: str, target: Target) -> Encode:
    """The encoder of format ``name`` for ``target``."""
    make = FORMATS[name].encoder
    if make is None:
        raise FormatError(f"{name} is a format records can be read in, not written")
    return make(target)


def decoder(name: str, target: Target) -> Decode:
    return FORMATS[name].decoder(target)


def add_format(format_: Format) -> None:
    """Offer ``format_`` too: for packages above this one (the schema registry's
    formats), added before the commands' parsers are built."""
    FORMATS[format_.name] = format_


def encodable(*, keys: bool) -> list[str]:
    return [n for n, f in FORMATS.items() if f.encoder is not None and (f.for_keys or not keys)]


def decodable(*, keys: bool) -> list[str]:
    return [n for n, f in FORMATS.items() if f.for_keys or not keys]


def formats_help(names: list[str]) -> str:
    return "; ".join(f"{n}: {FORMATS[n].help}" for n in names)
