"""``KTable.transform_values``: a table's values computed by a stateful transformer, as
Kafka Streams' ``KTable.transformValues`` (still offered in Kafka Streams 4; the
``KStream`` transform family was removed there in favour of ``process``/``processValues``).

A :class:`ValueTransformerWithKey` is made per task by its supplier. ``init`` gets the
processor context (stores connected by name, punctuation, clocks) with forwarding
switched off: the transformer answers through ``transform``'s return value only.
``transform(key, value)`` is called for every change's new value, a delete's ``None``
included, and, when the table's readers need old values, for the old value too, as
Kafka Streams calls it. Reading the result table by key (a join's lookup) applies a
second transformer instance to the parent's current value, ``None`` included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from headrace.streams import BatchProcessor, ProcessorContext, Rec

from ._change import Change
from ._table_nodes import ValueGetter, ValueGetterSupplier

if TYPE_CHECKING:
    from ._graph import TableGraphNode

_new_tuple = tuple.__new__


class ValueTransformerWithKey:
    """Subclass and override :meth:`transform`; the default :meth:`init` keeps the context."""

    context: ForwardingDisabledContext

    def init(self, context: ForwardingDisabledContext) -> None:
        self.context = context

    def transform(self, key: Any, value: Any) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        """Release what :meth:`init` acquired; stores are closed by the task."""


ValueTransformerWithKeySupplier = Callable[[], ValueTransformerWithKey]


class ForwardingDisabledContext:
    """The processor context as a transformer sees it: everything but forwarding, which
    Kafka Streams refuses there too (the returned value is what goes downstream)."""

    def __init__(self, context: ProcessorContext) -> None:
        self._context = context

    def forward(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a value transformer cannot forward: return the new value instead")

    forward_batch = forward

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class TableTransformValues(BatchProcessor):
    def __init__(self, node: TableGraphNode, supplier: ValueTransformerWithKeySupplier) -> None:
        self._node, self._supplier = node, supplier

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._send_old = self._node.send_old_values
        self._transformer = self._supplier()
        self._transformer.init(ForwardingDisabledContext(context))

    def process_batch(self, batch: list[Rec]) -> None:
        transform, send_old = self._transformer.transform, self._send_old
        out = [
            (
                k,
                _new_tuple(Change, (transform(k, c[0]), transform(k, c[1]) if send_old else None)),
                ts,
                h,
                o,
            )
            for k, c, ts, h, o in batch
        ]
        if out:
            self.context.forward_batch(out)

    def close(self) -> None:
        self._transformer.close()


class TransformValuesGetter:
    def __init__(self, parent: ValueGetter, transformer: ValueTransformerWithKey) -> None:
        self._parent, self._transformer = parent, transformer

    def init(self, context: ProcessorContext) -> None:
        self._parent.init(context)
        self._transformer.init(ForwardingDisabledContext(context))

    def get(self, key: Any) -> Any:
        return self._transformer.transform(key, self._parent.get(key))


class TransformValuesGetterSupplier:
    """Reads the parent's value and transforms it; the stores the transformer uses are
    connected to whoever reads through this getter."""

    def __init__(
        self,
        parent: ValueGetterSupplier,
        supplier: ValueTransformerWithKeySupplier,
        store_names: tuple[str, ...],
    ) -> None:
        self._parent, self._supplier = parent, supplier
        self.store_names = (*parent.store_names, *store_names)

    def get(self) -> ValueGetter:
        return TransformValuesGetter(self._parent.get(), self._supplier())
