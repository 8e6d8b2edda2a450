"""Binary layouts of windowed and session keys.

Both put the record key first and big-endian times after it, so all entries of a
key sort together in time order and a fetch by key and time range is one ordered
range scan (the layouts of Kafka Streams' WindowKeySchema and SessionKeySchema):

    window:  key | window start (8 bytes) | sequence number (4 bytes)
    session: key | session end (8 bytes) | session start (8 bytes)

Keys are not length-prefixed, so a scan range can also cover keys that merely share
bytes with the bounds; callers filter every entry with ``matches``. A range over
several keys can miss a key that is a proper prefix of ``key_to`` whose stored times
sort above the remaining bytes of ``key_to`` (the same limit as Kafka Streams).
Times must be non-negative.
"""

from __future__ import annotations

from typing import Protocol

_MAX_TIME = (1 << 64) - 1
_TIME = 8
_SEQ = 4


def _be(value: int) -> bytes:
    return value.to_bytes(_TIME, "big")


class KeySchema(Protocol):
    """How a segmented store reads its binary keys."""

    suffix_len: int

    @property
    def time_slice(self) -> slice:
        """Where the big-endian segment time sits in a binary key."""
        ...

    def segment_time(self, binary: bytes) -> int:
        """The time that decides a key's segment and its expiry."""
        ...

    def bounds(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> tuple[bytes | None, bytes | None]:
        """``[lo, hi)`` covering every key in ``[key_from, key_to]`` with segment time
        in ``[time_from, time_to]`` (modulo the prefix limit in the module docstring)."""
        ...

    def matches(
        self,
        binary: bytes,
        key_from: bytes | None,
        key_to: bytes | None,
        time_from: int,
        time_to: int,
    ) -> bool: ...


class _TimeSuffixSchema:
    """Bounds and filtering for layouts that end in ``suffix_len`` bytes beginning with
    the big-endian segment time; ``_time`` is where that time sits."""

    suffix_len: int
    _time: slice

    @property
    def time_slice(self) -> slice:
        return self._time

    def bounds(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> tuple[bytes | None, bytes | None]:
        time_from = max(time_from, 0)
        # For one key the times narrow the range at both ends. Otherwise a bare key_from
        # sorts before every binary key of key_from and of any key above it.
        single = key_from is not None and key_from == key_to
        lo = key_from + _be(time_from) if single and key_from is not None else key_from
        hi = None if key_to is None else key_to + _be(min(time_to + 1, _MAX_TIME))
        return lo, hi

    def matches(
        self,
        binary: bytes,
        key_from: bytes | None,
        key_to: bytes | None,
        time_from: int,
        time_to: int,
    ) -> bool:
        key = binary[: -self.suffix_len]
        if key_from is not None and key < key_from:
            return False
        if key_to is not None and key > key_to:
            return False
        return time_from <= int.from_bytes(binary[self._time], "big") <= time_to


class WindowKeySchema(_TimeSuffixSchema):
    suffix_len = _TIME + _SEQ
    _time = slice(-12, -4)

    @staticmethod
    def encode(key: bytes, window_start: int, seqnum: int = 0) -> bytes:
        return key + window_start.to_bytes(_TIME, "big") + seqnum.to_bytes(_SEQ, "big")

    @staticmethod
    def decode(binary: bytes) -> tuple[bytes, int, int]:
        """``(key, window start, sequence number)``"""
        return (
            binary[:-12],
            int.from_bytes(binary[-12:-4], "big"),
            int.from_bytes(binary[-4:], "big"),
        )

    def segment_time(self, binary: bytes) -> int:
        # Literal slices rather than ``_time``: this runs for every write.
        return int.from_bytes(binary[-12:-4], "big")


class SessionKeySchema(_TimeSuffixSchema):
    """Times in ``bounds`` and ``matches`` are session ends; starts are filtered by the caller."""

    suffix_len = _TIME + _TIME
    _time = slice(-16, -8)

    @staticmethod
    def encode(key: bytes, start: int, end: int) -> bytes:
        return key + end.to_bytes(_TIME, "big") + start.to_bytes(_TIME, "big")

    @staticmethod
    def decode(binary: bytes) -> tuple[bytes, int, int]:
        """``(key, session start, session end)``"""
        return (
            binary[:-16],
            int.from_bytes(binary[-8:], "big"),
            int.from_bytes(binary[-16:-8], "big"),
        )

    def segment_time(self, binary: bytes) -> int:
        return int.from_bytes(binary[-16:-8], "big")
