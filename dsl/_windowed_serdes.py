"""Serdes for windowed keys, byte-compatible with Kafka Streams.

* time windows (and sliding windows): inner key bytes, then the window start as 8
  bytes big-endian (``TimeWindowedSerializer``); the end is start plus the window size,
  which the deserializer must be told;
* session windows: inner key bytes, then the session end and the session start, 8
  bytes big-endian each (``SessionWindowedSerializer``).
"""

from __future__ import annotations

from typing import Any

from headrace.state import Window, Windowed

from ._binding import Decode, Encode, decoder, encoder
from ._errors import DeserializationError, SerializerError


class _WindowedSerde:
    suffix = 8

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def serialize(self, topic: str, obj: Windowed[Any] | None) -> bytes | None:
        data: bytes | None = self.serializer_for(topic)(obj)
        return data

    def deserialize(self, topic: str, data: bytes | None) -> Windowed[Any] | None:
        windowed: Windowed[Any] | None = self.deserializer_for(topic)(data)
        return windowed

    def serializer_for(self, topic: str) -> Encode:
        inner = encoder(self.inner, topic)
        tail = self._tail

        def encode(obj: Any) -> bytes | None:
            if obj is None:
                return None
            if not isinstance(obj, Windowed):
                raise SerializerError(f"a windowed serde got a {type(obj).__name__}")
            key = inner(obj.key)
            if key is None:
                raise SerializerError("a windowed key's inner key serialized to None")
            data: bytes = key + tail(obj.window)
            return data

        return encode

    def deserializer_for(self, topic: str) -> Decode:
        inner = decoder(self.inner, topic)
        window = self._window
        n = self.suffix

        def decode(data: bytes | None) -> Any:
            if data is None:
                return None
            if len(data) < n:
                raise DeserializationError(f"windowed key of {len(data)} bytes is too short")
            return Windowed(inner(data[:-n]), window(data[-n:]))

        return decode

    def _tail(self, window: Window) -> bytes:
        raise NotImplementedError

    def _window(self, tail: bytes) -> Window:
        raise NotImplementedError


class TimeWindowedSerde(_WindowedSerde):
    def __init__(self, inner: Any, window_size: int) -> None:
        super().__init__(inner)
        self.window_size = window_size

    def serializer_for(self, topic: str) -> Encode:
        # The per-record path of every windowed output topic: kept to one frame.
        inner = encoder(self.inner, topic)

        def encode(obj: Any) -> bytes | None:
            if obj is None:
                return None
            try:
                key = inner(obj.key)
                start: int = obj.window.start
            except AttributeError as exc:
                raise SerializerError(f"a windowed serde got a {type(obj).__name__}") from exc
            if key is None:
                raise SerializerError("a windowed key's inner key serialized to None")
            data: bytes = key + start.to_bytes(8, "big")
            return data

        return encode

    def _tail(self, window: Window) -> bytes:
        return window.start.to_bytes(8, "big")

    def _window(self, tail: bytes) -> Window:
        start = int.from_bytes(tail, "big")
        return Window(start, start + self.window_size)

    def __repr__(self) -> str:
        return f"TimeWindowedSerde({self.inner!r}, {self.window_size})"


class SessionWindowedSerde(_WindowedSerde):
    suffix = 16

    def _tail(self, window: Window) -> bytes:
        return window.end.to_bytes(8, "big") + window.start.to_bytes(8, "big")

    def _window(self, tail: bytes) -> Window:
        return Window(int.from_bytes(tail[8:], "big"), int.from_bytes(tail[:8], "big"))

    def __repr__(self) -> str:
        return f"SessionWindowedSerde({self.inner!r})"


class WindowedSerdes:
    """Factories, named as Kafka Streams' ``WindowedSerdes``."""

    @staticmethod
    def time_windowed(inner: Any, window_size: int) -> TimeWindowedSerde:
        return TimeWindowedSerde(inner, window_size)

    @staticmethod
    def session_windowed(inner: Any) -> SessionWindowedSerde:
        return SessionWindowedSerde(inner)
