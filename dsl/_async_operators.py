"""The async processors behind ``KStream.*_async``.

Each is a :class:`~streams.AsyncProcessor` whose two halves work on record tuples
directly: ``start_call`` makes the user's coroutine from the key and value, and
``results`` turns its result into the records to forward (the same key, timestamp,
headers and source offset, as the synchronous operators of ``_operators.py`` keep them).
The stage that runs them (``streams/_async.py``) decides when, in what order and how
many at a time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from headrace.streams import AsyncOptions, AsyncProcessor, Rec

AsyncFn = Callable[..., Awaitable[Any]]


class _AsyncOperator(AsyncProcessor):
    def __init__(self, fn: AsyncFn, options: AsyncOptions, with_key: bool = True) -> None:
        self._fn = fn
        self.options = options
        self._with_key = with_key

    def start_call(self, rec: Rec) -> Any:
        if self._with_key:
            return self._fn(rec[0], rec[1])
        return self._fn(rec[1])


class AsyncMapValues(_AsyncOperator):
    def results(self, rec: Rec, result: Any) -> list[Rec]:
        return [(rec[0], result, rec[2], rec[3], rec[4])]


class AsyncMap(_AsyncOperator):
    def results(self, rec: Rec, result: tuple[Any, Any]) -> list[Rec]:
        return [(result[0], result[1], rec[2], rec[3], rec[4])]


class AsyncFlatMapValues(_AsyncOperator):
    def results(self, rec: Rec, result: Iterable[Any]) -> list[Rec]:
        k, _v, t, h, o = rec
        return [(k, v2, t, h, o) for v2 in result]


class AsyncFilter(_AsyncOperator):
    def results(self, rec: Rec, result: Any) -> list[Rec]:
        return [rec] if result else []


class AsyncForeach(_AsyncOperator):
    def results(self, rec: Rec, result: Any) -> list[Rec]:
        return []
