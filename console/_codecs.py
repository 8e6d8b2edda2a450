"""Turning record bytes into text a page can show, in the format the user picked.

``auto`` (the default) shows a value in the schema registry's wire format decoded with
the registry when the console knows one, and anything else as a string;
``schema-registry`` insists on the registry. A value that does not fit its format is
shown as hex, marked so, and the reason is kept for the page to say once.
"""

from __future__ import annotations

import base64
import json
import struct

from ._registry_values import RegistryValues, framed

FORMATS = ("auto", "string", "json", "long", "base64", "hex", "schema-registry")
REGISTRY_FORMATS = ("auto", "schema-registry")


def decode(data: bytes | None, fmt: str) -> str | None:
    """``data`` shown as ``fmt``; bytes that do not fit it are shown as hex, marked so.

    >>> decode(b'{"a": 1}', "json")
    '{\\n  "a": 1\\n}'
    >>> decode(struct.pack(">q", -5), "long")
    '-5'
    >>> decode(b"\\xff\\x00", "string")
    'hex:ff00'
    """
    if data is None:
        return None
    try:
        return _plain(data, fmt)
    except (ValueError, UnicodeDecodeError):
        return f"hex:{data.hex()}"


def _plain(data: bytes, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(json.loads(data), indent=2, ensure_ascii=False)
    if fmt == "long":
        if len(data) != 8:
            raise ValueError("a long is 8 bytes")
        return str(struct.unpack(">q", data)[0])
    if fmt == "base64":
        return base64.b64encode(data).decode()
    if fmt == "hex":
        return data.hex()
    if fmt == "schema-registry":
        raise ValueError("no schema registry: start the console with --schema-registry URL")
    return data.decode("utf-8")


class Decoder:
    """The formats of one console: the plain ones, and the registry's when it has one.

    >>> Decoder(None).decode(b"plain", "auto")
    'plain'
    """

    def __init__(self, registry: RegistryValues | None) -> None:
        self.registry = registry
        self.problem: str | None = None  # the first value that did not decode, and why

    def needs_registry(self, *formats: str) -> bool:
        """Whether decoding ``formats`` may ask the registry (so: not on an event loop)."""
        return self.registry is not None and any(f in REGISTRY_FORMATS for f in formats)

    def decode(self, data: bytes | None, fmt: str) -> str | None:
        if data is None:
            return None
        if self.registry is not None and (
            fmt == "schema-registry" or (fmt == "auto" and framed(data))
        ):
            try:
                return self.registry.show(data)
            except ValueError as error:
                self._note(error)
                return f"hex:{data.hex()}"
        try:
            return _plain(data, "string" if fmt == "auto" else fmt)
        except ValueError as error:  # UnicodeDecodeError is one
            if fmt not in ("auto", "string"):  # the user asked for this format
                self._note(error)
            return f"hex:{data.hex()}"

    def _note(self, error: ValueError) -> None:
        if self.problem is None:
            self.problem = str(error) or type(error).__name__
