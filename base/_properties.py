"""Java ``.properties`` files, as Kafka's server.properties and client configs are written,
read with jproperties, which follows ``java.util.Properties.load`` (separators, comments,
continuation lines, escapes, and the trailing spaces a value keeps);
tests/base/test_properties_like_java.py holds it to Java's own reading.
"""

from __future__ import annotations

from pathlib import Path

import jproperties


class PropertiesError(ValueError):
    """Text that ``java.util.Properties`` would refuse (a malformed ``\\uXXXX`` escape)."""


def parse_properties(text: str, source: str = "<text>") -> dict[str, str]:
    """The properties ``text`` holds, the last of a repeated key winning, as in Java."""
    found = jproperties.Properties()
    try:
        found.load(text.encode("utf-8"), "utf-8")
    except jproperties.PropertyError as exc:
        raise PropertiesError(f"{source} is not a valid properties file: {exc}") from None
    return {key: value.data for key, value in found.items()}


def read_properties(path: str | Path) -> dict[str, str]:
    """The properties in ``path``; a missing file raises FileNotFoundError naming it."""
    return parse_properties(Path(path).read_text(encoding="utf-8"), str(path))
