"""Table-table joins by primary key: inner, left and outer, updated from either side.

Each side has a processor: a change ``Change(new, old)`` of one table at a key is
joined with the other table's current value at that key (read through its value
getter), giving the result's new value and, when readers asked for it, its old one.
What a row of the result is, for left value ``l`` and right value ``r``:

==========  ==================  ==================  ==================
join        both present        only ``l``          only ``r``
==========  ==================  ==================  ==================
inner       ``joiner(l, r)``    no row              no row
left        ``joiner(l, r)``    ``joiner(l, None)`` no row
outer       ``joiner(l, r)``    ``joiner(l, None)`` ``joiner(None, r)``
==========  ==================  ==================  ==================

A change that leaves no row where there was one is a delete (a tombstone) downstream.
A side whose value alone makes a row (left of a left join, either of an outer one) reads
its old value to tell such a delete from a delete of a key neither side has, which it
drops, as Kafka Streams does; a side that needs the other's value sends the delete
unless the other side's absence rules a row out. A result is stamped, as Kafka Streams'
``KTableKTable*Join`` stamps it, max(the change's timestamp, the other row's) when the
other side has a row, else the change's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from headrace.state import ValueAndTimestamp
from headrace.streams import BatchProcessor, ProcessorContext, Rec

from ._change import Change
from ._table_nodes import ValueGetter, ValueGetterSupplier, timestamped_get

if TYPE_CHECKING:
    from ._graph import TableGraphNode

_new_tuple = tuple.__new__
RowFn = Callable[[Any, Any], Any]  # (left value, right value) -> row, or None for no row


def row_fn(joiner: Callable[[Any, Any], Any], kind: str) -> RowFn:
    """The result row for a left and a right value (either may be ``None``)."""
    if kind == "inner":
        return lambda lv, rv: None if lv is None or rv is None else joiner(lv, rv)
    if kind == "left":
        return lambda lv, rv: None if lv is None else joiner(lv, rv)
    return lambda lv, rv: None if lv is None and rv is None else joiner(lv, rv)


class TableJoinSide(BatchProcessor):
    def __init__(
        self, node: TableGraphNode, other: ValueGetterSupplier, row: RowFn, left: bool, kind: str
    ) -> None:
        self._node, self._other_supplier = node, other
        self._row = row if left else (lambda this, that: row(that, this))
        # Whether this side's value alone can make a row: if not, the other side's
        # absence means there is no row before or after the change.
        self._alone = kind == "outer" or (kind == "left" and left)

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._other: ValueGetter = self._other_supplier.get()
        self._other.init(context)
        self._get_other = timestamped_get(self._other)
        self._send_old = self._node.send_old_values

    def process_batch(self, batch: list[Rec]) -> None:
        get, row, send_old, alone = self._get_other, self._row, self._send_old, self._alone
        out: list[Rec] = []
        for k, change, ts, h, o in batch:
            if k is None:
                continue
            new, old = change
            found = get(k)
            if found is None:
                if not alone or (new is None and old is None):
                    continue  # no row either way: for a delete of a key neither side has, too
                other = None
            else:
                other, other_ts = found
                if other_ts > ts:
                    ts = other_ts
            new_row = row(new, other)
            old_row = row(old, other) if send_old else None
            if new_row is None and old_row is None and send_old:
                continue  # no row before, none after
            out.append((k, _new_tuple(Change, (new_row, old_row)), ts, h, o))
        if out:
            self.context.forward_batch(out)


class JoinValueGetter:
    def __init__(self, left: ValueGetter, right: ValueGetter, row: RowFn) -> None:
        self._left, self._right, self._row = left, right, row

    def init(self, context: ProcessorContext) -> None:
        self._left.init(context)
        self._right.init(context)
        self._left_ts, self._right_ts = timestamped_get(self._left), timestamped_get(self._right)

    def get(self, key: Any) -> Any:
        return self._row(self._left.get(key), self._right.get(key))

    def get_with_timestamp(self, key: Any) -> ValueAndTimestamp[Any] | None:
        """The join's row for ``key``, stamped with the newer of the rows it joins."""
        left, right = self._left_ts(key), self._right_ts(key)
        value = self._row(None if left is None else left[0], None if right is None else right[0])
        if value is None:
            return None
        timestamps = [row[1] for row in (left, right) if row is not None]
        return ValueAndTimestamp(value, max(timestamps))


class JoinValueGetterSupplier:
    """Reads a join's row for a key from both sides' getters."""

    def __init__(self, left: ValueGetterSupplier, right: ValueGetterSupplier, row: RowFn) -> None:
        self._left, self._right, self._row = left, right, row
        self.store_names = tuple(dict.fromkeys((*left.store_names, *right.store_names)))

    def get(self) -> ValueGetter:
        return JoinValueGetter(self._left.get(), self._right.get(), self._row)
