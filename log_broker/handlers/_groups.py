"""What the group handlers share: milliseconds from kio's timedeltas, error codes."""

from __future__ import annotations

from datetime import timedelta

from kio.schema.errors import ErrorCode

from ..groups import GroupError

_MS = timedelta(milliseconds=1)


def millis(value: timedelta) -> int:
    return int(value / _MS)


def code_of(error: GroupError | None) -> ErrorCode:
    return ErrorCode.none if error is None else ErrorCode(error.error_code)
