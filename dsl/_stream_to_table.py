"""``KStream.to_table``: a stream read as a table's changelog, as Kafka Streams' ``toTable``.

Each record upserts its key's row, a ``None`` value deletes it, a ``None`` key is
skipped (``_table_nodes.TableSource``, the processor behind ``StreamsBuilder.table``).
A table is partitioned by key, so a stream whose key may have changed upstream goes
through ``<name>-repartition`` first (``name`` being the operator's, else the store's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _operators as ops
from ._graph import GraphNode, RepartitionGraphNode, TableGraphNode
from ._materialized import Materialized
from ._versioned_table import table_source_parts

if TYPE_CHECKING:
    from ._kstream import KStream
    from ._ktable import KTable


def stream_to_table(
    stream: KStream[Any, Any], materialized: Materialized | None, name: str | None
) -> KTable[Any, Any]:
    from ._ktable import KTable

    builder = stream._builder
    store = (materialized or Materialized()).resolve(
        builder.new_name("KSTREAM-TOTABLE-STATE-STORE-"), stream.key_serde, stream.value_serde
    )
    parent: GraphNode = stream._node
    if stream.repartition_required:
        parent = builder.add_node(
            RepartitionGraphNode(
                name or store.store_name,
                (parent,),
                key_serde=store.key_serde,
                value_serde=store.value_serde,
                filter_supplier=lambda: ops.Transform(ops.drop_null_keys),
            )
        )
    parts = table_source_parts(store)
    node = TableGraphNode(
        name or builder.new_name("KSTREAM-TOTABLE-"),
        (parent,),
        store_builders=(parts.store_builder,),
    )
    node.supplier = parts.processor(node)
    builder.add_node(node)
    return KTable(
        builder,
        node,
        store.key_serde,
        store.value_serde,
        store_name=store.store_name,
        getter=parts.getter,
    )
