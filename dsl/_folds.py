"""How the values of one key (and window) fold into its aggregate.

An aggregating processor first collects a batch's values per key and window, then
reads each aggregate once, folds the collected values into it and writes it once.
``final`` gives the folded aggregate (what a cached store needs); ``steps`` gives every
intermediate aggregate (what an uncached store forwards, one update per record, as
Kafka Streams does without a cache). Counting collects only how many values came.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Fold:
    counting = False

    def final(self, key: Any, agg: Any, values: Any) -> Any:
        raise NotImplementedError

    def steps(self, key: Any, agg: Any, values: list[Any]) -> list[Any]:
        raise NotImplementedError

    def merge(self, key: Any, left: Any, right: Any) -> Any:
        """Combine two session aggregates."""
        raise NotImplementedError


class CountFold(Fold):
    counting = True

    def final(self, key: Any, agg: Any, values: Any) -> Any:
        return values if agg is None else agg + values

    def steps(self, key: Any, agg: Any, values: list[Any]) -> list[Any]:
        base = 0 if agg is None else agg
        return list(range(base + 1, base + len(values) + 1))

    def merge(self, key: Any, left: Any, right: Any) -> Any:
        return left + right


class AggregateFold(Fold):
    def __init__(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any] | None = None,
    ) -> None:
        self.initializer = initializer
        self.aggregator = aggregator
        self.merger = merger

    def final(self, key: Any, agg: Any, values: Any) -> Any:
        aggregator = self.aggregator
        if agg is None:
            agg = self.initializer()
        for value in values:
            agg = aggregator(key, value, agg)
        return agg

    def steps(self, key: Any, agg: Any, values: list[Any]) -> list[Any]:
        aggregator = self.aggregator
        if agg is None:
            agg = self.initializer()
        out = []
        for value in values:
            agg = aggregator(key, value, agg)
            out.append(agg)
        return out

    def merge(self, key: Any, left: Any, right: Any) -> Any:
        assert self.merger is not None, "session aggregations need a merger"
        return self.merger(key, left, right)


class ReduceFold(Fold):
    def __init__(self, reducer: Callable[[Any, Any], Any]) -> None:
        self.reducer = reducer

    def final(self, key: Any, agg: Any, values: Any) -> Any:
        reducer = self.reducer
        for value in values:  # a None aggregate (none yet, or a None value) restarts
            agg = value if agg is None else reducer(agg, value)
        return agg

    def steps(self, key: Any, agg: Any, values: list[Any]) -> list[Any]:
        reducer = self.reducer
        out = []
        for value in values:
            agg = value if agg is None else reducer(agg, value)
            out.append(agg)
        return out

    def merge(self, key: Any, left: Any, right: Any) -> Any:
        return self.reducer(left, right)
