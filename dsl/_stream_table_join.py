"""Stream-table and stream-global-table joins: each stream record looks the table up.

For every stream record the processor reads the table's value for the record's key
(for a global table: for ``key_selector(key, value)``) through the table's value
getter. A table update never changes results already emitted, and alone emits nothing.

* ``join``: a record whose lookup finds nothing is dropped.
* ``left_join``: it is emitted with ``None`` for the table's value; so is a record
  whose key (or selected key) is ``None``.

Records with a ``None`` value are dropped. A result keeps the stream record's key,
timestamp and headers.

When the table is versioned (KIP-914, ``_versioned_table``), the lookup reads the
table as of the stream record's timestamp, not its latest value. With a grace period
(``join(table, joiner, grace_period=...)``, Kafka Streams' ``Joined.withGracePeriod``)
stream records first wait in a buffer (``_join_buffer``) until the buffer's stream time
is the grace past them, so table updates that arrive out of order, within the grace,
are seen; a record already past the grace is joined at once. A left join's record
with a ``None`` key cannot be buffered by key and is joined at once (Kafka Streams'
buffer fails on it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headrace.streams import BatchProcessor, Headers, ProcessorContext, Rec

from ._join_buffer import GraceBuffer, Held
from ._stream_stream_join import PairFn
from ._table_nodes import ValueGetterSupplier


class GraceSpec:
    """Where a stream-table join with a grace period holds its stream records."""

    def __init__(self, store_name: str, grace: int, key_serde: Any, value_serde: Any) -> None:
        self.store_name = store_name
        self.grace = grace
        self.key_serde = key_serde
        self.value_serde = value_serde


class StreamTableJoin(BatchProcessor):
    def __init__(
        self,
        getter: ValueGetterSupplier,
        pair: PairFn,
        left: bool,
        key_selector: Callable[[Any, Any], Any] | None = None,
        grace: GraceSpec | None = None,
    ) -> None:
        self._supplier = getter
        self._pair = pair
        self._left = left
        self._selector = key_selector
        self._grace = grace

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._getter = self._supplier.get()
        self._getter.init(context)
        as_of = getattr(self._getter, "get_as_of", None)
        self._as_of: Callable[[Any, int], Any] | None = as_of
        self._buffer: GraceBuffer | None = None
        if self._grace is not None:
            spec = self._grace
            store = context.get_state_store(spec.store_name)
            self._buffer = GraceBuffer(
                store.inner, store.topic, spec.grace, spec.key_serde, spec.value_serde
            )

    def process_batch(self, batch: list[Rec]) -> None:
        if self._buffer is not None:
            self._buffered(batch, self._buffer)
            return
        out: list[Rec] = []
        for k, v, ts, h, o in batch:
            if v is not None:
                self._join(k, v, ts, h, o, out)
        if out:
            self.context.forward_batch(out)

    def _join(self, k: Any, v: Any, ts: int, h: Headers, o: int, out: list[Rec]) -> None:
        selector, as_of = self._selector, self._as_of
        lookup = k if selector is None else selector(k, v)
        if lookup is None:
            other = None
        elif as_of is not None:
            other = as_of(lookup, ts)
        else:
            other = self._getter.get(lookup)
        if other is None and not self._left:
            return
        out.append((k, self._pair(k, v, other), ts, h, o))

    def _buffered(self, batch: list[Rec], buffer: GraceBuffer) -> None:
        out: list[Rec] = []

        def emit(held: list[Held]) -> None:
            for hk, hv, hts, hh in held:
                self._join(hk, hv, hts, hh, -1, out)

        for k, v, ts, h, o in batch:
            if v is None or (k is None and not self._left):
                continue
            if k is None or not buffer.put(k, v, ts, h):
                self._join(k, v, ts, h, o, out)
            else:
                buffer.evict(emit)
        if out:
            self.context.forward_batch(out)
