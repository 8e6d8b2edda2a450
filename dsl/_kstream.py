"""KStream: an immutable handle on a point of the logical graph.

Every operator adds one node to the builder's graph and returns a new KStream (or
nothing, for terminal operators); a KStream object itself never changes, so one stream
can be the start of several independent pipelines.

A stream remembers its key and value serdes while operators keep them meaningful, and
whether its key may have changed (``repartition_required``), which the stateful
operators to come use to decide on a repartition topic.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, Literal, TextIO, overload

from headrace.streams import (
    AsyncOptions,
    ProcessorSupplier,
    StreamPartitioner,
    TopicNameExtractor,
    TopologyError,
)
from headrace.streams._async import require_coroutine_function

from . import _async_operators as aops
from . import _operators as ops
from ._errors import TopologyBuildError
from ._fixed_key import FixedKeyProcessorAdapter, FixedKeyProcessorSupplier
from ._graph import GraphNode, ProcessorGraphNode, RepartitionGraphNode, SinkGraphNode
from ._serde_types import Writes
from ._type_vars import KO, KR, VO, VR, K, V

if TYPE_CHECKING:
    from ._branched import BranchedKStream
    from ._builder import StreamsBuilder
    from ._global_table import GlobalKTable
    from ._grouped import KGroupedStream
    from ._join_windows import JoinWindows
    from ._ktable import KTable
    from ._materialized import Materialized

Predicate = Callable[[K, V], bool]
# How an async operator forwards its results (``streams/_async.py``'s ``ORDERS``).
AsyncOrder = Literal["key", "partition", "none"]


def _transform(fn: ops.BatchFn) -> ProcessorSupplier:
    return lambda: ops.Transform(fn)


class KStream(Generic[K, V]):
    """A stream of key-value records; see the package docstring for the operator list.

    ``KStream[K, V]``: keys of type ``K``, values of type ``V``; each operator's result
    type follows from its function (``map_values(len)`` on ``KStream[str, str]`` is a
    ``KStream[str, int]``). The serdes given to ``to``, ``repartition`` and the groupings
    must write ``K`` and ``V`` (``_serde_types.Writes``)
    """

    __slots__ = ("_builder", "_node", "key_serde", "repartition_required", "value_serde")

    _builder: StreamsBuilder
    _node: GraphNode
    key_serde: Any
    value_serde: Any
    repartition_required: bool

    def __init__(
        self,
        builder: StreamsBuilder,
        node: GraphNode,
        key_serde: Any,
        value_serde: Any,
        *,
        repartition_required: bool,
    ) -> None:
        object.__setattr__(self, "_builder", builder)
        object.__setattr__(self, "_node", node)
        object.__setattr__(self, "key_serde", key_serde)
        object.__setattr__(self, "value_serde", value_serde)
        object.__setattr__(self, "repartition_required", repartition_required)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("KStream is immutable: operators return new streams")

    @property
    def node_name(self) -> str:
        """The physical node this stream's records leave from."""
        return self._node.output_name

    # -- helpers ------------------------------------------------------------------------

    def _add(
        self,
        prefix: str,
        name: str | None,
        supplier: ProcessorSupplier,
        *,
        parents: tuple[GraphNode, ...] | None = None,
        store_names: tuple[str, ...] = (),
    ) -> GraphNode:
        node = ProcessorGraphNode(
            name or self._builder.new_name(prefix),
            parents if parents is not None else (self._node,),
            supplier=supplier,
            store_names=store_names,
        )
        return self._builder.add_node(node)

    def _then(
        self,
        node: GraphNode,
        *,
        key_serde: Any,
        value_serde: Any,
        repartition_required: bool,
    ) -> KStream[Any, Any]:
        return KStream(
            self._builder, node, key_serde, value_serde, repartition_required=repartition_required
        )

    def _same_key(self, node: GraphNode, value_serde: Any) -> KStream[K, Any]:
        return self._then(
            node,
            key_serde=self.key_serde,
            value_serde=value_serde,
            repartition_required=self.repartition_required,
        )

    def _new_key(self, node: GraphNode) -> KStream[Any, Any]:
        return self._then(node, key_serde=None, value_serde=None, repartition_required=True)

    # -- stateless operators ------------------------------------------------------------

    def filter(self, predicate: Predicate[K, V], *, name: str | None = None) -> KStream[K, V]:
        """Keep the records for which ``predicate(key, value)`` is true."""
        node = self._add("KSTREAM-FILTER-", name, _transform(ops.filter_fn(predicate, True)))
        return self._same_key(node, self.value_serde)

    def filter_not(self, predicate: Predicate[K, V], *, name: str | None = None) -> KStream[K, V]:
        """Drop the records for which ``predicate(key, value)`` is true."""
        node = self._add("KSTREAM-FILTER-", name, _transform(ops.filter_fn(predicate, False)))
        return self._same_key(node, self.value_serde)

    def map(
        self, mapper: Callable[[K, V], tuple[KR, VR]], *, name: str | None = None
    ) -> KStream[KR, VR]:
        """Replace each record by ``mapper(key, value) -> (new_key, new_value)``."""
        return self._new_key(self._add("KSTREAM-MAP-", name, _transform(ops.map_fn(mapper))))

    @overload
    def map_values(
        self,
        mapper: Callable[[V], VR],
        *,
        with_key: Literal[False] = False,
        name: str | None = None,
    ) -> KStream[K, VR]: ...

    @overload
    def map_values(
        self, mapper: Callable[[K, V], VR], *, with_key: Literal[True], name: str | None = None
    ) -> KStream[K, VR]: ...

    def map_values(
        self, mapper: Callable[..., Any], *, with_key: bool = False, name: str | None = None
    ) -> KStream[K, Any]:
        """Replace each value by ``mapper(value)`` (``mapper(key, value)`` with ``with_key``)."""
        node = self._add(
            "KSTREAM-MAPVALUES-", name, _transform(ops.map_values_fn(mapper, with_key))
        )
        return self._same_key(node, None)

    def flat_map(
        self, mapper: Callable[[K, V], Iterable[tuple[KR, VR]]], *, name: str | None = None
    ) -> KStream[KR, VR]:
        """Replace each record by the zero or more ``(key, value)`` pairs of ``mapper``."""
        return self._new_key(
            self._add("KSTREAM-FLATMAP-", name, _transform(ops.flat_map_fn(mapper)))
        )

    @overload
    def flat_map_values(
        self,
        mapper: Callable[[V], Iterable[VR]],
        *,
        with_key: Literal[False] = False,
        name: str | None = None,
    ) -> KStream[K, VR]: ...

    @overload
    def flat_map_values(
        self,
        mapper: Callable[[K, V], Iterable[VR]],
        *,
        with_key: Literal[True],
        name: str | None = None,
    ) -> KStream[K, VR]: ...

    def flat_map_values(
        self,
        mapper: Callable[..., Iterable[Any]],
        *,
        with_key: bool = False,
        name: str | None = None,
    ) -> KStream[K, Any]:
        """Replace each record by one record per value of ``mapper(value)``, same key."""
        fn = ops.flat_map_values_fn(mapper, with_key)
        return self._same_key(self._add("KSTREAM-FLATMAPVALUES-", name, _transform(fn)), None)

    def select_key(
        self, mapper: Callable[[K, V], KR], *, name: str | None = None
    ) -> KStream[KR, V]:
        """Set each record's key to ``mapper(key, value)``; the value is kept."""
        node = self._add("KSTREAM-KEY-SELECT-", name, _transform(ops.select_key_fn(mapper)))
        return self._then(
            node, key_serde=None, value_serde=self.value_serde, repartition_required=True
        )

    def peek(self, action: Callable[[K, V], object], *, name: str | None = None) -> KStream[K, V]:
        """Call ``action(key, value)`` for each record and pass the record on unchanged."""
        node = self._add("KSTREAM-PEEK-", name, _transform(ops.peek_fn(action)))
        return self._same_key(node, self.value_serde)

    def foreach(self, action: Callable[[K, V], object], *, name: str | None = None) -> None:
        """Call ``action(key, value)`` for each record; nothing follows."""
        self._add("KSTREAM-FOREACH-", name, lambda: ops.Foreach(action))

    def print(
        self,
        *,
        label: str | None = None,
        file: TextIO | None = None,
        mapper: Callable[[K, V], str] | None = None,
        name: str | None = None,
    ) -> None:
        """Print ``[label]: key, value`` per record to ``file`` (stdout by default)."""
        node_name = name or self._builder.new_name("KSTREAM-PRINTER-")
        fn = ops.print_fn(label or node_name, file, mapper)
        self._add("", node_name, _transform(fn))

    # -- async operators ----------------------------------------------------------------
    # Each runs ``async def`` calls concurrently per task (``concurrency``), forwards
    # results per key in input order (``order="key"``), in input order ("partition")
    # or as they finish ("none"); ``timeout`` (seconds) bounds an attempt, ``retries``
    # repeats a failed one after ``backoff * 2**attempt`` seconds; a call that still
    # fails goes to the processing error handler. An offset is committed only once its
    # record's results, and every earlier record's, are out (``streams/_async.py``).

    def _async(
        self,
        prefix: str,
        name: str | None,
        operator: type[aops._AsyncOperator],
        fn: aops.AsyncFn,
        with_key: bool,
        concurrency: int,
        order: AsyncOrder,
        timeout: float | None,
        retries: int,
        backoff: float,
    ) -> GraphNode:
        what = f"KStream.{prefix.lower().replace('-', '_')}"
        try:
            require_coroutine_function(fn, what)
            opts = AsyncOptions(concurrency, order, timeout, retries, backoff)
        except (TypeError, TopologyError) as error:  # TypeError: a value of the wrong type
            raise TopologyBuildError(f"{what}: {error}") from error
        node_prefix = f"KSTREAM-{prefix.replace('-', '')}-"
        return self._add(node_prefix, name, lambda: operator(fn, opts, with_key))

    @overload
    def map_values_async(
        self,
        mapper: Callable[[V], Awaitable[VR]],
        *,
        with_key: Literal[False] = False,
        name: str | None = None,
        concurrency: int = 16,
        order: AsyncOrder = "key",
        timeout: float | None = None,
        retries: int = 0,
        backoff: float = 0.1,
    ) -> KStream[K, VR]: ...

    @overload
    def map_values_async(
        self,
        mapper: Callable[[K, V], Awaitable[VR]],
        *,
        with_key: Literal[True],
        name: str | None = None,
        concurrency: int = 16,
        order: AsyncOrder = "key",
        timeout: float | None = None,
        retries: int = 0,
        backoff: float = 0.1,
    ) -> KStream[K, VR]: ...

    def map_values_async(
        self,
        mapper: aops.AsyncFn,
        *,
        with_key: bool = False,
        name: str | None = None,
        concurrency: int = 16,
        order: AsyncOrder = "key",
        timeout: float | None = None,
        retries: int = 0,
        backoff: float = 0.1,
    ) -> KStream[K, Any]:
        """Replace each value by ``await mapper(value)`` (``mapper(key, value)`` with
        ``with_key``). The keywords of every async operator:

        :param concurrency: calls in flight at once, per task.
        :param order: results out per key in input order (``"key"``), all in input order
            (``"partition"``), or as they finish (``"none"``).
        :param timeout: seconds an attempt may take (``None``: no limit).
        :param retries: attempts again after a failed one, the n-th after
            ``backoff * 2**n`` seconds; a call that still fails goes to the processing
            error handler.
        :param backoff: seconds before the first retry.
        :param name: the processor's name (a generated one by default)."""
        node = self._async(
            "MAP-VALUES-ASYNC",
            name,
            aops.AsyncMapValues,
            mapper,
            with_key,
            concurrency,
            order,
            timeout,
            retries,
            backoff,
        )
        return self._same_key(node, None)

    def map_async(
        self,
        mapper: Callable[[K, V], Awaitable[tuple[KR, VR]]],
        *,
        name: str | None = None,
        concurrency: int = 16,
        order: AsyncOrder = "key",
        timeout: float | None = None,
        retries: int = 0,
        backoff: float = 0.1,
    ) -> KStream[KR, VR]:
        """Replace each record by ``await mapper(key, value) -> (new_key, new_value)``;
        the keywords as for :meth:`map_values_async`."""
        return self._new_key(
            self._async(
                "MAP-ASYNC",
                name,
                aops.AsyncMap,
                mapper,
                True,
                concurrency,
                order,
                timeout,
                retries,
                backoff,
            )
        )

    @overload
    def flat_map_values_async(
        self,
        mapper: Callable[[V], Awaitable[Iterable[VR]]],
        *,
        with_key: Literal[False] = False,
        name: str | None = None,
        concurrency: int = 16,
        order: AsyncOrder = "key",
        timeout: float | None = None,
        retries: int = 0,
        backoff: float = 0.1,
    ) -> KStream[K, VR]: ...

    @overload
    def flat_map_values_async(
        self,
        mapper: Callable[[K, V], Awaitable[Iterable[VR]]],
        *,
        with_key: Literal[True],
        name: str | None = None,
        concurrency: int = 16,
        order: AsyncOrder = "key",
        timeout: float | None = None,
        retries: int = 0,
        backoff: float = 0.1,
    ) -> KStream[K, VR]: ...

    def flat_map_values_async(
        self,
        mapper: aops.AsyncFn,
        *,
        with_key: bool = False,
        name: str | None = None,
        concurrency: int = 16,
        order: AsyncOrder = "key",
        timeout: float | None = None,
        retries: int = 0,
        backoff: float = 0.1,
    ) -> KStream[K, Any]:
        """One record per value of ``await mapper(value)``, same key; the keywords as for
        :meth:`map_values_async`."""
        node = self._async(
            "FLAT-MAP-VALUES-ASYNC",
            name,
            aops.AsyncFlatMapValues,
            mapper,
            with_key,
            concurrency,
            order,
            timeout,
            retries,
            backoff,
        )
        return self._same_key(node, None)

    def filter_async(
        self,
        predicate: Callable[[K, V], Awaitable[bool]],
        *,
        name: str | None = None,
        concurrency: int = 16,
        order: AsyncOrder = "key",
        timeout: float | None = None,
        retries: int = 0,
        backoff: float = 0.1,
    ) -> KStream[K, V]:
        """Keep the records for which ``await predicate(key, value)`` is true; the keywords
        as for :meth:`map_values_async`."""
        node = self._async(
            "FILTER-ASYNC",
            name,
            aops.AsyncFilter,
            predicate,
            True,
            concurrency,
            order,
            timeout,
            retries,
            backoff,
        )
        return self._same_key(node, self.value_serde)

    def foreach_async(
        self,
        action: Callable[[K, V], Awaitable[object]],
        *,
        name: str | None = None,
        concurrency: int = 16,
        order: AsyncOrder = "key",
        timeout: float | None = None,
        retries: int = 0,
        backoff: float = 0.1,
    ) -> None:
        """``await action(key, value)`` for each record; nothing follows. The input
        offset is committed only after the action finished for it and every record before.
        The keywords as for :meth:`map_values_async`."""
        self._async(
            "FOREACH-ASYNC",
            name,
            aops.AsyncForeach,
            action,
            True,
            concurrency,
            order,
            timeout,
            retries,
            backoff,
        )

    def split(self, *, name: str | None = None) -> BranchedKStream[K, V]:
        """Start routing records to named branches; see :class:`BranchedKStream`."""
        from ._branched import BranchedKStream

        return BranchedKStream(self, name or self._builder.new_name("KSTREAM-BRANCH-"), ())

    def merge(self, other: KStream[K, V], *, name: str | None = None) -> KStream[K, V]:
        """One stream of the records of both; each side's order is kept."""
        if other._builder is not self._builder:
            raise TopologyBuildError("cannot merge streams of two different builders")
        node = self._add(
            "KSTREAM-MERGE-", name, _transform(ops.pass_through), parents=(self._node, other._node)
        )
        same = self.key_serde is other.key_serde, self.value_serde is other.value_serde
        return self._then(
            node,
            key_serde=self.key_serde if same[0] else None,
            value_serde=self.value_serde if same[1] else None,
            repartition_required=self.repartition_required or other.repartition_required,
        )

    def repartition(
        self,
        *,
        key_serde: Writes[K] | None = None,
        value_serde: Writes[V] | None = None,
        name: str | None = None,
        num_partitions: int | None = None,
        partitioner: StreamPartitioner | None = None,
    ) -> KStream[K, V]:
        """Write to an internal topic and read it back, so records are partitioned by key.

        Records with a ``None`` key cannot be partitioned by key and are dropped, as in
        Kafka Streams.
        """
        ks = key_serde if key_serde is not None else self.key_serde
        vs = value_serde if value_serde is not None else self.value_serde
        node = RepartitionGraphNode(
            name or self._builder.new_name("KSTREAM-REPARTITION-"),
            (self._node,),
            key_serde=ks,
            value_serde=vs,
            partitions=num_partitions,
            partitioner=partitioner,
            filter_supplier=_transform(ops.drop_null_keys),
        )
        self._builder.add_node(node)
        return self._then(node, key_serde=ks, value_serde=vs, repartition_required=False)

    def to(
        self,
        topic: str | TopicNameExtractor,
        *,
        key_serde: Writes[K] | None = None,
        value_serde: Writes[V] | None = None,
        partitioner: StreamPartitioner | None = None,
        name: str | None = None,
    ) -> None:
        """Write every record to ``topic``, or to ``topic(key, value, timestamp)`` per record.

        Each side is written with the serde given here, else the one the stream carries,
        else the App's default serde. A side with none of these passes through only if
        it is a source topic's bytes, unchanged; any other side (computed by ``map``,
        ``group_by``, a joiner, ...) makes the App refuse to start, and the test driver
        to open, with an error naming this sink and its topic.
        """
        node = SinkGraphNode(
            name or self._builder.new_name("KSTREAM-SINK-"),
            (self._node,),
            topic=topic,
            key_serde=key_serde if key_serde is not None else self.key_serde,
            value_serde=value_serde if value_serde is not None else self.value_serde,
            partitioner=partitioner,
        )
        self._builder.add_node(node)

    def process(
        self, supplier: ProcessorSupplier, *store_names: str, name: str | None = None
    ) -> KStream[Any, Any]:
        """Run a processor-API processor (``supplier()`` per task), connected to stores."""
        node = self._add("KSTREAM-PROCESSOR-", name, supplier, store_names=tuple(store_names))
        return self._new_key(node)

    def process_values(
        self, supplier: FixedKeyProcessorSupplier, *store_names: str, name: str | None = None
    ) -> KStream[K, Any]:
        """Run a key-preserving processor (``supplier()`` per task, a
        :class:`FixedKeyProcessor`), connected to stores. It can change values, timestamps
        and headers but not keys, so unlike :meth:`process` it leaves the stream as
        partitioned as it was: a grouping or join downstream needs no repartition."""
        node = self._add(
            "KSTREAM-PROCESSVALUES-",
            name,
            lambda: FixedKeyProcessorAdapter(supplier()),
            store_names=tuple(store_names),
        )
        return self._same_key(node, None)

    def to_table(
        self, *, materialized: Materialized | None = None, name: str | None = None
    ) -> KTable[K, V]:
        """The table of this stream's latest value per key: a ``None`` value deletes the
        key's row, a ``None`` key is skipped. A key changed upstream is repartitioned
        first (``<name>-repartition``). The rows are kept in a key-value store
        (``materialized``, or a generated name), cached and changelogged by default."""
        from ._stream_to_table import stream_to_table

        return stream_to_table(self, materialized, name)

    # -- grouping -----------------------------------------------------------------------

    def group_by_key(
        self,
        *,
        key_serde: Writes[K] | None = None,
        value_serde: Writes[V] | None = None,
        name: str | None = None,
    ) -> KGroupedStream[K, V]:
        """Group by the current key, to aggregate; a key changed upstream is repartitioned
        first, through ``<application_id>-<name>-repartition``."""
        from ._grouped import KGroupedStream

        return KGroupedStream(
            self,
            key_serde if key_serde is not None else self.key_serde,
            value_serde if value_serde is not None else self.value_serde,
            name,
        )

    def group_by(
        self,
        selector: Callable[[K, V], KR],
        *,
        key_serde: Writes[Any] | None = None,  # KR comes from the selector alone
        value_serde: Writes[V] | None = None,
        name: str | None = None,
    ) -> KGroupedStream[KR, V]:
        """Group by ``selector(key, value)``: always through a repartition topic."""
        return self.select_key(selector).group_by_key(
            key_serde=key_serde,
            value_serde=value_serde if value_serde is not None else self.value_serde,
            name=name,
        )

    # -- joins --------------------------------------------------------------------------

    @overload
    def join(
        self,
        other: KStream[K, VO],
        joiner: Callable[[V, VO], VR],
        windows: JoinWindows,
        /,
        *,
        with_key: Literal[False] = False,
        **options: Any,
    ) -> KStream[K, VR]: ...

    @overload
    def join(
        self,
        other: KStream[K, VO],
        joiner: Callable[[K, V, VO], VR],
        windows: JoinWindows,
        /,
        *,
        with_key: Literal[True],
        **options: Any,
    ) -> KStream[K, VR]: ...

    @overload
    def join(
        self,
        other: KTable[K, VO],
        joiner: Callable[[V, VO], VR],
        /,
        *,
        with_key: Literal[False] = False,
        **options: Any,
    ) -> KStream[K, VR]: ...

    @overload
    def join(
        self,
        other: KTable[K, VO],
        joiner: Callable[[K, V, VO], VR],
        /,
        *,
        with_key: Literal[True],
        **options: Any,
    ) -> KStream[K, VR]: ...

    @overload
    def join(
        self,
        other: GlobalKTable[KO, VO],
        key_selector: Callable[[K, V], KO],
        joiner: Callable[[V, VO], VR],
        /,
        *,
        with_key: Literal[False] = False,
        **options: Any,
    ) -> KStream[K, VR]: ...

    @overload
    def join(
        self,
        other: GlobalKTable[KO, VO],
        key_selector: Callable[[K, V], KO],
        joiner: Callable[[K, V, VO], VR],
        /,
        *,
        with_key: Literal[True],
        **options: Any,
    ) -> KStream[K, VR]: ...

    def join(
        self, other: Any, first: Any, second: Any = None, /, **options: Any
    ) -> KStream[Any, Any]:
        """Inner join with another stream (``join(other, joiner, JoinWindows...)``), a
        table (``join(table, joiner)``) or a global table (``join(table, key_selector,
        joiner)``); ``joiner(value, other_value)``. See ``_kstream_joins`` for options."""
        from ._kstream_joins import stream_join

        return stream_join(self, "inner", other, first, second, options)

    @overload
    def left_join(
        self,
        other: KStream[K, VO],
        joiner: Callable[[V, VO | None], VR],
        windows: JoinWindows,
        /,
        *,
        with_key: Literal[False] = False,
        **options: Any,
    ) -> KStream[K, VR]: ...

    @overload
    def left_join(
        self,
        other: KStream[K, VO],
        joiner: Callable[[K, V, VO | None], VR],
        windows: JoinWindows,
        /,
        *,
        with_key: Literal[True],
        **options: Any,
    ) -> KStream[K, VR]: ...

    @overload
    def left_join(
        self,
        other: KTable[K, VO],
        joiner: Callable[[V, VO | None], VR],
        /,
        *,
        with_key: Literal[False] = False,
        **options: Any,
    ) -> KStream[K, VR]: ...

    @overload
    def left_join(
        self,
        other: KTable[K, VO],
        joiner: Callable[[K, V, VO | None], VR],
        /,
        *,
        with_key: Literal[True],
        **options: Any,
    ) -> KStream[K, VR]: ...

    @overload
    def left_join(
        self,
        other: GlobalKTable[KO, VO],
        key_selector: Callable[[K, V], KO],
        joiner: Callable[[V, VO | None], VR],
        /,
        *,
        with_key: Literal[False] = False,
        **options: Any,
    ) -> KStream[K, VR]: ...

    @overload
    def left_join(
        self,
        other: GlobalKTable[KO, VO],
        key_selector: Callable[[K, V], KO],
        joiner: Callable[[K, V, VO | None], VR],
        /,
        *,
        with_key: Literal[True],
        **options: Any,
    ) -> KStream[K, VR]: ...

    def left_join(
        self, other: Any, first: Any, second: Any = None, /, **options: Any
    ) -> KStream[Any, Any]:
        """Like :meth:`join`, but every record of this stream yields a result:
        ``joiner(value, None)`` when nothing pairs with it (for a stream-stream join, once
        its window has closed)."""
        from ._kstream_joins import stream_join

        return stream_join(self, "left", other, first, second, options)

    @overload
    def outer_join(
        self,
        other: KStream[K, VO],
        joiner: Callable[[V | None, VO | None], VR],
        windows: JoinWindows,
        /,
        *,
        with_key: Literal[False] = False,
        **options: Any,
    ) -> KStream[K, VR]: ...

    @overload
    def outer_join(
        self,
        other: KStream[K, VO],
        joiner: Callable[[K, V | None, VO | None], VR],
        windows: JoinWindows,
        /,
        *,
        with_key: Literal[True],
        **options: Any,
    ) -> KStream[K, VR]: ...

    def outer_join(
        self,
        other: KStream[K, Any],
        joiner: Callable[..., Any],
        windows: JoinWindows,
        /,
        **options: Any,
    ) -> KStream[K, Any]:
        """Like :meth:`left_join` with another stream, and unpaired records of ``other``
        yield ``joiner(None, other_value)`` too."""
        from ._kstream_joins import stream_join

        return stream_join(self, "outer", other, joiner, windows, options)
