"""Stream-table and stream-global-table joins: each stream record looks the table up.

For every stream record the processor reads the table's current value for the
record's key (for a global table: for ``key_selector(key, value)``) through the
table's value getter, as of that moment: a table update that arrives later changes
later lookups, never results already emitted, and an update alone emits nothing.

* ``join``: a record whose lookup finds nothing is dropped.
* ``left_join``: it is emitted with ``None`` for the table's value; so is a record
  whose key (or selected key) is ``None``.

Records with a ``None`` value are dropped. A result keeps the stream record's key and
timestamp.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headrace.streams import BatchProcessor, ProcessorContext, Rec

from ._stream_stream_join import PairFn
from ._table_nodes import ValueGetterSupplier


class StreamTableJoin(BatchProcessor):
    def __init__(
        self,
        getter: ValueGetterSupplier,
        pair: PairFn,
        left: bool,
        key_selector: Callable[[Any, Any], Any] | None = None,
    ) -> None:
        self._supplier = getter
        self._pair = pair
        self._left = left
        self._selector = key_selector

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._getter = self._supplier.get()
        self._getter.init(context)

    def process_batch(self, batch: list[Rec]) -> None:
        get, pair, left, selector = self._getter.get, self._pair, self._left, self._selector
        out: list[Rec] = []
        for k, v, ts, h, o in batch:
            if v is None:
                continue
            lookup = k if selector is None else selector(k, v)
            other = None if lookup is None else get(lookup)
            if other is None and not left:
                continue
            out.append((k, pair(k, v, other), ts, h, o))
        if out:
            self.context.forward_batch(out)
