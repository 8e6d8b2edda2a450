"""Aggregating a re-grouped table: every row contributes, and stops contributing.

Input records come from the repartition topic of ``KTable.group_by``: ``Change(None,
old)`` takes a row's old contribution out of its group's aggregate (the subtractor),
``Change(new, None)`` puts a row's new contribution in (the adder), and ``Change(new,
old)`` (a row updated within its group) does both, subtractor first, in one update. A
row that moves from one group to another therefore leaves the first and joins the second.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headrace.streams import Rec

from ._aggregate_base import KeyValueAggregate, _new_tuple
from ._change import Change


class TableFold:
    """``apply(key, agg, new, old)``: subtract ``old`` if given, then add ``new`` if given."""

    def __init__(
        self,
        initializer: Callable[[], Any] | None,
        adder: Callable[..., Any],
        subtractor: Callable[..., Any],
        with_key: bool,
    ) -> None:
        self._initializer = initializer
        self._adder = adder
        self._subtractor = subtractor
        self._with_key = with_key

    def apply(self, key: Any, agg: Any, new: Any, old: Any) -> Any:
        if self._with_key:  # aggregate(initializer, adder(k, v, agg), subtractor(k, v, agg))
            if agg is None and self._initializer is not None:
                agg = self._initializer()
            if old is not None:
                agg = self._subtractor(key, old, agg)
            if new is not None:
                agg = self._adder(key, new, agg)
            return agg
        # reduce(adder(agg, v), subtractor(agg, v)): the first value is the aggregate
        if old is not None and agg is not None:
            agg = self._subtractor(agg, old)
        if new is not None:
            agg = new if agg is None else self._adder(agg, new)
        return agg


def count_fold() -> TableFold:
    return TableFold(lambda: 0, lambda k, v, agg: agg + 1, lambda k, v, agg: agg - 1, True)


class TableAggregate(KeyValueAggregate):
    def process_batch(self, batch: list[Rec]) -> None:
        """Records apply in order; an aggregate is read once per key and batch.

        The result's timestamp follows ``KTableAggregate``/``KTableReduce``: the
        record's, or, when the key already had an aggregate that the record took
        something out of or put something into, the larger of the record's and that
        aggregate's."""
        ek = self._ek
        get, put, stored, stamped = self._bytes.get, self._bytes.put, self._stored, self._stamped
        fold: TableFold = self._fold
        current: dict[bytes, tuple[Any, int]] = {}
        out: list[Rec] = []
        cached, send_old = self._cached, self._send_old
        for k, change, ts, _h, _o in batch:
            if k is None or change is None:
                continue
            kb = ek(k)
            old_agg, old_ts = current[kb] if kb in current else stored(get(kb))
            new, old = change[0], change[1]
            new_agg = fold.apply(k, old_agg, new, old)
            if old_agg is not None and (new is not None or old is not None) and old_ts > ts:
                ts = old_ts
            current[kb] = (new_agg, ts)
            if not cached:
                out.append(
                    (k, _new_tuple(Change, (new_agg, old_agg if send_old else None)), ts, (), -1)
                )
        for kb, (agg, ts) in current.items():
            put(kb, stamped(kb, agg, ts))
        self._forward_changes(out)
