"""Compatibility levels, as Confluent defines them.

A reader can read a writer's data when every value the writer may produce decodes
under the reader's schema. For a ``new`` schema and the subject's earlier versions:

* BACKWARD: ``new`` reads the latest version's data (consumers upgrade first)
* FORWARD: the latest version reads ``new``'s data (producers upgrade first)
* FULL: both
* the ``_TRANSITIVE`` forms: the same against every earlier version, not only the latest
* NONE: no check

Each schema type supplies ``can_read(reader, writer) -> list of problems``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._errors import InvalidCompatibilityLevel
from ._schema import AVRO, JSON, PROTOBUF, ParsedSchema

LEVELS = (
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
    "NONE",
)
DEFAULT_LEVEL = "BACKWARD"

Checker = Callable[[ParsedSchema, ParsedSchema], list[str]]


def check_level(level: object) -> str:
    if not isinstance(level, str) or level.upper() not in LEVELS:
        raise InvalidCompatibilityLevel(
            f"Invalid compatibility level. Valid values are {', '.join(LEVELS)}"
        )
    return level.upper()


def _checker(schema_type: str) -> Checker:
    if schema_type == AVRO:
        from ._avro_compat import can_read
    elif schema_type == JSON:
        from ._json_compat import can_read
    elif schema_type == PROTOBUF:
        from ._protobuf_compat import can_read
    else:  # pragma: no cover - parse_schema admits only the three
        raise ValueError(schema_type)
    return can_read


def problems(level: str, new: ParsedSchema, earlier: Sequence[ParsedSchema]) -> list[str]:
    """Why ``new`` may not follow ``earlier`` (oldest first) under ``level``; empty when
    it may."""
    if level == "NONE" or not earlier:
        return []
    against = earlier if level.endswith("_TRANSITIVE") else earlier[-1:]
    base = level.removesuffix("_TRANSITIVE")
    found: list[str] = []
    for old in reversed(against):
        if old.schema_type != new.schema_type:
            found.append(f"schema type changed from {old.schema_type} to {new.schema_type}")
            continue
        can_read = _checker(new.schema_type)
        if base in ("BACKWARD", "FULL"):
            found += [
                f"{p} (new schema cannot read data written with an earlier version)"
                for p in can_read(new, old)
            ]
        if base in ("FORWARD", "FULL"):
            found += [
                f"{p} (an earlier version cannot read data written with the new schema)"
                for p in can_read(old, new)
            ]
    return found
