"""What ``KStream.join``, ``left_join`` and ``outer_join`` build, by the other side's kind.

* another :class:`KStream`: a windowed stream-stream join (``_stream_stream_join``),
  ``join(other, joiner, JoinWindows...)``;
* a :class:`KTable`: a lookup join (``_stream_table_join``), ``join(table, joiner)``;
* a :class:`GlobalKTable`: a lookup join by a selected key, ``join(table, key_selector,
  joiner)``, with no co-partitioning and no repartition, whatever the stream's key.

Joiners take ``(left value, right value)``, or ``(key, left value, right value)`` with
``with_key=True``. Stores and repartition topics are named after the join: its
``name=``, or a generated ``KSTREAM-JOIN-<n>``. A join with a versioned table reads it
as of each stream record's timestamp, and may take ``grace_period=`` (ms or timedelta,
Kafka Streams' ``Joined.withGracePeriod``): stream records then wait in the store
``<name>-Buffer`` for late table updates; the table must be versioned, with a history
retention of at least the grace.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from headrace.state import Stores

from ._copartition import CopartitionGroup, side_input
from ._errors import TopologyBuildError
from ._global_table import GlobalKTable
from ._graph import ProcessorGraphNode
from ._join_windows import JoinWindows
from ._stream_stream_join import StreamJoinSpec, StreamStreamJoinNode, join_fn
from ._stream_table_join import GraceSpec, StreamTableJoin
from ._windows import to_ms

if TYPE_CHECKING:
    from ._kstream import KStream
    from ._ktable import KTable

JoinKind = Literal["inner", "left", "outer"]


def stream_join(
    stream: KStream, kind: JoinKind, other: Any, first: Any, second: Any, options: dict[str, Any]
) -> KStream:
    from ._kstream import KStream
    from ._ktable import KTable

    if isinstance(other, KStream):
        if second is None:
            raise TopologyBuildError(
                "a stream-stream join needs JoinWindows: join(other, joiner, windows)"
            )
        return _stream_stream(stream, other, first, second, kind, **options)
    if kind == "outer":
        raise TopologyBuildError(
            "outer_join needs another stream; a table supports join and left_join"
        )
    if isinstance(other, KTable):
        if second is not None:
            raise TopologyBuildError("a stream-table join takes join(table, joiner)")
        return _stream_table(stream, other, first, kind == "left", **options)
    if isinstance(other, GlobalKTable):
        if second is None:
            raise TopologyBuildError(
                "a stream-global join takes join(global_table, key_selector, joiner)"
            )
        return _stream_global(stream, other, first, second, kind == "left", **options)
    raise TopologyBuildError(f"cannot join a stream with a {type(other).__name__}")


def _same_builder(stream: KStream, other: Any) -> None:
    if other._builder is not stream._builder:
        raise TopologyBuildError("cannot join streams or tables of two different builders")


def _stream_stream(
    stream: KStream,
    other: KStream,
    joiner: Callable[..., Any],
    windows: JoinWindows,
    kind: JoinKind,
    *,
    key_serde: Any = None,
    value_serde: Any = None,
    other_value_serde: Any = None,
    with_key: bool = False,
    store: Literal["rocksdb", "memory"] = "rocksdb",
    logging: bool = True,
    retention: int | timedelta | None = None,
    name: str | None = None,
) -> KStream:
    from ._kstream import KStream

    _same_builder(stream, other)
    if not isinstance(windows, JoinWindows):
        raise TopologyBuildError(f"a stream-stream join needs JoinWindows, got {windows!r}")
    if store not in ("rocksdb", "memory"):
        raise TopologyBuildError(f"store must be 'rocksdb' or 'memory', got {store!r}")
    builder = stream._builder
    join_name = name or builder.new_name("KSTREAM-JOIN-")
    ks = key_serde if key_serde is not None else stream.key_serde or other.key_serde
    lvs = value_serde if value_serde is not None else stream.value_serde
    rvs = other_value_serde if other_value_serde is not None else other.value_serde
    self_join = other._node is stream._node
    left_node = side_input(stream, f"{join_name}-left", ks, lvs)
    right_node = left_node if self_join else side_input(other, f"{join_name}-right", ks, rvs)

    needed = windows.required_retention()
    retention_ms = (
        windows.default_retention() if retention is None else to_ms(retention, "retention")
    )
    if retention_ms < needed:
        raise TopologyBuildError(
            f"retention {retention_ms} ms of join {join_name} is shorter than its windows need "
            f"({needed} ms: the larger of before and after, plus grace)"
        )
    persistent = store == "rocksdb"
    size = max(1, windows.size_ms)

    def window_store(store_name: str) -> Any:
        b = Stores.window_store(store_name, max(retention_ms, size), size, True, persistent)
        return b if logging else b.with_logging_disabled()

    stores = [
        window_store(f"{join_name}-this-join-store"),
        window_store(f"{join_name}-other-join-store"),
    ]
    outer_store = None
    if kind != "inner":
        outer_store = f"{join_name}-outer-join-store"
        kv = Stores.key_value_store(outer_store, persistent)
        stores.append(kv if logging else kv.with_logging_disabled())
    spec = StreamJoinSpec(
        join_name,
        windows,
        join_fn(joiner, with_key),
        left_outer=kind != "inner",
        right_outer=kind == "outer",
        this_store=stores[0].name,
        other_store=stores[1].name,
        outer_store=outer_store,
        key_serde=ks,
        left_serde=lvs,
        right_serde=rvs,
    )
    node = StreamStreamJoinNode(
        join_name,
        (left_node, right_node),
        spec=spec,
        store_builders=tuple(stores),
        self_join=self_join,
    )
    builder.add_node(node)
    builder.add_copartition_group(CopartitionGroup(join_name, (left_node, right_node)))
    return KStream(builder, node, ks, None, repartition_required=False)


def _stream_table(
    stream: KStream,
    table: KTable,
    joiner: Callable[..., Any],
    left: bool,
    *,
    key_serde: Any = None,
    value_serde: Any = None,
    with_key: bool = False,
    grace_period: int | timedelta | None = None,
    name: str | None = None,
) -> KStream:
    from ._kstream import KStream

    _same_builder(stream, table)
    if table.windows is not None:
        raise TopologyBuildError("a stream cannot be joined with a windowed table")
    builder = stream._builder
    getter = table.value_getter_supplier()
    join_name = name or builder.new_name("KSTREAM-JOIN-")
    ks = key_serde if key_serde is not None else stream.key_serde or table.key_serde
    vs = value_serde if value_serde is not None else stream.value_serde
    source = side_input(stream, f"{join_name}-left", ks, vs)
    pair = join_fn(joiner, with_key)
    grace = None
    store_names = getter.store_names
    if grace_period is not None:
        grace = _grace_buffer(
            builder, join_name, getter, to_ms(grace_period, "grace period"), ks, vs
        )
        store_names = (*store_names, grace.store_name)
    node = ProcessorGraphNode(
        join_name,
        (source,),
        supplier=lambda: StreamTableJoin(getter, pair, left, grace=grace),
        store_names=store_names,
    )
    builder.add_node(node)
    builder.add_copartition_group(CopartitionGroup(join_name, (source, table._node)))
    return KStream(builder, node, ks, None, repartition_required=False)


def _grace_buffer(
    builder: Any, join_name: str, getter: Any, grace: int, key_serde: Any, value_serde: Any
) -> GraceSpec:
    """Add the store a join with a grace period holds its stream records in; refuse a
    grace on a table that is not versioned or keeps less history than the grace."""
    history = getattr(getter, "history_retention", None)
    if history is None:
        raise TopologyBuildError(
            f"join {join_name}: a grace period needs a versioned table; materialize the "
            "table with materialized(..., history_retention=...)"
        )
    if grace > history:
        raise TopologyBuildError(
            f"join {join_name}: the table's history retention ({history} ms) must be at "
            f"least the grace period ({grace} ms)"
        )
    store_name = f"{join_name}-Buffer"
    builder.add_state_store(Stores.key_value_store(store_name))
    return GraceSpec(store_name, grace, key_serde, value_serde)


def _stream_global(
    stream: KStream,
    table: GlobalKTable,
    key_selector: Callable[[Any, Any], Any],
    joiner: Callable[..., Any],
    left: bool,
    *,
    with_key: bool = False,
    name: str | None = None,
) -> KStream:
    from ._kstream import KStream

    _same_builder(stream, table)
    builder = stream._builder
    getter = table.value_getter_supplier()
    pair = join_fn(joiner, with_key)
    node = ProcessorGraphNode(
        name or builder.new_name("KSTREAM-JOIN-"),
        (stream._node,),
        supplier=lambda: StreamTableJoin(getter, pair, left, key_selector),
        store_names=getter.store_names,
    )
    builder.add_node(node)
    # The key is unchanged and the table is whole in every task: nothing to repartition.
    return KStream(
        builder, node, stream.key_serde, None, repartition_required=stream.repartition_required
    )
