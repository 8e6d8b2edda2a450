"""A one-shot answer that may come later: how the coordinator parks a request.

The coordinator is plain synchronous code with no event loop: a JoinGroup that must
wait for the other members returns a ``Reply`` that is resolved when the join phase
ends. The request handler bridges it to asyncio; tests simply look at it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from ._errors import GroupError

T = TypeVar("T")


class Reply(Generic[T]):
    __slots__ = ("_callbacks", "_done", "_error", "_value")

    def __init__(self) -> None:
        self._done = False
        self._value: T | None = None
        self._error: GroupError | None = None
        self._callbacks: list[Callable[[Reply[T]], None]] = []

    @classmethod
    def of(cls, value: T) -> Reply[T]:
        reply: Reply[T] = cls()
        reply.resolve(value)
        return reply

    @classmethod
    def failed(cls, error: GroupError) -> Reply[T]:
        reply: Reply[T] = cls()
        reply.fail(error)
        return reply

    @property
    def done(self) -> bool:
        return self._done

    def resolve(self, value: T) -> None:
        self._finish(value, None)

    def fail(self, error: GroupError) -> None:
        self._finish(None, error)

    def _finish(self, value: T | None, error: GroupError | None) -> None:
        # Answering a request twice is a coordinator bug, never a client's doing.
        if self._done:
            raise RuntimeError("reply answered twice")
        self._done, self._value, self._error = True, value, error
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def result(self) -> T:
        """The value, or raise the error; only once ``done``."""
        if not self._done:
            raise RuntimeError("reply not answered yet")
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def on_done(self, callback: Callable[[Reply[T]], None]) -> None:
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def __repr__(self) -> str:
        if not self._done:
            return "Reply(pending)"
        return f"Reply(error={self._error!r})" if self._error else f"Reply({self._value!r})"
