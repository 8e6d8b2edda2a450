"""The batch processors behind the stateless operators.

Each operator is one list comprehension over the batch, so a chain of operators costs
one pass per operator per batch and no method call per record beyond the user's own
function. Records are ``(key, value, timestamp, headers, source_offset)`` tuples; an
operator that keeps a record unchanged passes the same tuple on (no copy), one that
changes it builds one new tuple.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TextIO

from headrace.streams import BatchProcessor, ProcessorContext, Rec

BatchFn = Callable[[list[Rec]], list[Rec]]


class Transform(BatchProcessor):
    """Applies one batch function and forwards its (non-empty) result to every child."""

    def __init__(self, fn: BatchFn) -> None:
        self._fn = fn

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._forward = context.forward_batch

    def process_batch(self, batch: list[Rec]) -> None:
        out = self._fn(batch)
        if out:
            self._forward(out)


def filter_fn(predicate: Callable[[Any, Any], bool], keep: bool) -> BatchFn:
    if keep:
        return lambda b: [r for r in b if predicate(r[0], r[1])]
    return lambda b: [r for r in b if not predicate(r[0], r[1])]


def map_fn(mapper: Callable[[Any, Any], tuple[Any, Any]]) -> BatchFn:
    return lambda b: [(kv[0], kv[1], t, h, o) for k, v, t, h, o in b for kv in (mapper(k, v),)]


def map_values_fn(mapper: Callable[..., Any], with_key: bool) -> BatchFn:
    if with_key:
        return lambda b: [(k, mapper(k, v), t, h, o) for k, v, t, h, o in b]
    return lambda b: [(k, mapper(v), t, h, o) for k, v, t, h, o in b]


def flat_map_fn(mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]]) -> BatchFn:
    return lambda b: [(k2, v2, t, h, o) for k, v, t, h, o in b for k2, v2 in mapper(k, v)]


def flat_map_values_fn(mapper: Callable[..., Iterable[Any]], with_key: bool) -> BatchFn:
    if with_key:
        return lambda b: [(k, v2, t, h, o) for k, v, t, h, o in b for v2 in mapper(k, v)]
    return lambda b: [(k, v2, t, h, o) for k, v, t, h, o in b for v2 in mapper(v)]


def select_key_fn(mapper: Callable[[Any, Any], Any]) -> BatchFn:
    return lambda b: [(mapper(k, v), v, t, h, o) for k, v, t, h, o in b]


def peek_fn(action: Callable[[Any, Any], object]) -> BatchFn:
    def peek(b: list[Rec]) -> list[Rec]:
        for r in b:
            action(r[0], r[1])
        return b

    return peek


def pass_through(b: list[Rec]) -> list[Rec]:
    return b


def drop_null_keys(b: list[Rec]) -> list[Rec]:
    return [r for r in b if r[0] is not None]


def print_fn(label: str, file: TextIO | None, mapper: Callable[[Any, Any], str] | None) -> BatchFn:
    """Write ``[label]: key, value`` per record (or ``[label]: mapper(key, value)``)."""

    def show(b: list[Rec]) -> list[Rec]:
        out = file if file is not None else sys.stdout
        if mapper is None:
            lines = [f"[{label}]: {r[0]}, {r[1]}\n" for r in b]
        else:
            lines = [f"[{label}]: {mapper(r[0], r[1])}\n" for r in b]
        out.write("".join(lines))
        return b

    return show


class Splitter(BatchProcessor):
    """Sends each record to the first branch whose predicate holds, else to the default.

    Records that match no predicate are dropped when there is no default branch, as in
    Kafka Streams' ``split()``.
    """

    def __init__(
        self,
        predicates: Sequence[Callable[[Any, Any], bool]],
        children: Sequence[str],
        default_child: str | None,
    ) -> None:
        self._predicates = tuple(predicates)
        self._children = tuple(children)
        self._default = default_child

    def process_batch(self, batch: list[Rec]) -> None:
        predicates = self._predicates
        buckets: list[list[Rec]] = [[] for _ in predicates]
        rest: list[Rec] = []
        indexed = tuple(zip(predicates, buckets, strict=True))
        for r in batch:
            k, v = r[0], r[1]
            for predicate, bucket in indexed:
                if predicate(k, v):
                    bucket.append(r)
                    break
            else:
                rest.append(r)
        forward = self.context.forward_batch
        for child, bucket in zip(self._children, buckets, strict=True):
            if bucket:
                forward(bucket, to=child)
        if rest and self._default is not None:
            forward(rest, to=self._default)


class Foreach(BatchProcessor):
    """Calls ``action(key, value)`` per record; a terminal operation."""

    def __init__(self, action: Callable[[Any, Any], object]) -> None:
        self._action = action

    def process_batch(self, batch: list[Rec]) -> None:
        action = self._action
        for r in batch:
            action(r[0], r[1])
