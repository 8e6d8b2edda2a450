"""Turning record bytes into text a page can show, in the format the user picked."""

from __future__ import annotations

import base64
import json
import struct

FORMATS = ("string", "json", "long", "base64", "hex")


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
        return data.decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return f"hex:{data.hex()}"
