"""Compiling a sink node into a push function that appends produced tuples.

For a fixed topic with no partitioner, a batch costs one comprehension and one
``list.extend``; where the serdes offer bare functions (``_codec.py``) the comprehension
calls those, and redoes the batch with the checked ones if anything raises. A
per-record topic or partitioner adds exactly one call per record each.

A side with no serde and no configured default writes bytes only (its error names the
sink and the topic); one that is ``APP_DEFAULT`` with no default is refused here, though
``Topology.check_sink_serdes`` normally refused it earlier, before any record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._codec import (
    Encode,
    bind_bare_pair,
    bind_serializer,
    bytes_only,
    missing_sink_serdes,
    sink_serde,
)
from ._config import StreamsConfig
from ._errors import TopologyError
from ._nodes import SinkNode
from ._record import ProducedRecord, Rec

Push = Callable[[list[Rec]], None]


def _identity(obj: Any) -> Any:
    return obj


def compile_sink(
    node: SinkNode,
    resolved_topic: str | None,
    config: StreamsConfig,
    produced: list[ProducedRecord],
    partitions_for: Callable[[str], int],
) -> Push:
    """Return ``push(batch)`` for ``node``; ``resolved_topic`` is its topic on the broker."""
    extend = produced.extend
    missing = missing_sink_serdes(
        [
            (
                node.name,
                repr(resolved_topic) if resolved_topic else "chosen per record",
                node.key_serializer,
                node.value_serializer,
            )
        ],
        config.default_key_serde,
        config.default_value_serde,
    )
    if missing:
        raise TopologyError("; ".join(missing))
    key_serde = sink_serde(node.key_serializer, config.default_key_serde)
    value_serde = sink_serde(node.value_serializer, config.default_value_serde)
    partitioner = node.partitioner

    def bind(serde: Any, topic: str, side: str) -> Encode | None:
        if serde is None:  # no serde, no default: bytes only, and an error naming us
            return bytes_only(node.name, topic, side)
        return bind_serializer(serde, topic)

    if resolved_topic is not None:
        topic = resolved_topic
        ks = bind(key_serde, topic, "key")
        vs = bind(value_serde, topic, "value")
        if partitioner is None:
            checked = _fixed(topic, ks, vs, extend)
            bare = bind_bare_pair(key_serde, value_serde, ks, vs, topic, "serializer")
            return checked if bare is None else _bare(topic, *bare, checked, extend)
        kf = ks or _identity
        vf = vs or _identity
        count = partitions_for(topic)

        def push_partitioned(batch: list[Rec]) -> None:
            extend(
                [
                    (topic, kf(k), vf(v), ts, h, partitioner(topic, k, v, count))
                    for k, v, ts, h, _o in batch
                ]
            )

        return push_partitioned

    extractor = node.topic_extractor
    assert extractor is not None
    bound: dict[str, tuple[Encode, Encode, int]] = {}

    def codecs(topic: str) -> tuple[Encode, Encode, int]:
        found = bound.get(topic)
        if found is None:
            found = (
                bind(key_serde, topic, "key") or _identity,
                bind(value_serde, topic, "value") or _identity,
                partitions_for(topic) if partitioner is not None else 0,
            )
            bound[topic] = found
        return found

    def push_extracted(batch: list[Rec]) -> None:
        out: list[ProducedRecord] = []
        append = out.append
        for k, v, ts, h, _o in batch:
            topic = extractor(k, v, ts)
            kf, vf, count = codecs(topic)
            part = None if partitioner is None else partitioner(topic, k, v, count)
            append((topic, kf(k), vf(v), ts, h, part))
        extend(out)

    return push_extracted


def _fixed(
    topic: str,
    ks: Encode | None,
    vs: Encode | None,
    extend: Callable[[list[ProducedRecord]], None],
) -> Push:
    # One comprehension per serde combination, as in the source: skipped calls are free.
    if ks is None and vs is None:
        return lambda batch: extend([(topic, k, v, ts, h, None) for k, v, ts, h, _o in batch])
    if ks is None:
        assert vs is not None
        return lambda batch: extend([(topic, k, vs(v), ts, h, None) for k, v, ts, h, _o in batch])
    if vs is None:
        return lambda batch: extend([(topic, ks(k), v, ts, h, None) for k, v, ts, h, _o in batch])
    return lambda batch: extend([(topic, ks(k), vs(v), ts, h, None) for k, v, ts, h, _o in batch])


def _bare_encoder(
    topic: str, kb: Encode | None, vb: Encode | None
) -> Callable[[list[Rec]], list[ProducedRecord]]:
    # Bare functions take no nulls: nulls stay nulls here, inline.
    if kb is None:
        assert vb is not None
        return lambda batch: [
            (topic, k, None if v is None else vb(v), ts, h, None) for k, v, ts, h, _o in batch
        ]
    if vb is None:
        return lambda batch: [
            (topic, None if k is None else kb(k), v, ts, h, None) for k, v, ts, h, _o in batch
        ]
    return lambda batch: [
        (topic, None if k is None else kb(k), None if v is None else vb(v), ts, h, None)
        for k, v, ts, h, _o in batch
    ]


def _bare(
    topic: str,
    kb: Encode | None,
    vb: Encode | None,
    checked: Push,
    extend: Callable[[list[ProducedRecord]], None],
) -> Push:
    """``_fixed`` over bare functions. If one raises, the whole batch goes through
    ``checked``, which raises the serde's own error (serializers have no side effects,
    and only built-in serdes offer bare functions, so redoing the batch is safe)."""
    encode = _bare_encoder(topic, kb, vb)

    def push(batch: list[Rec]) -> None:
        try:
            out = encode(batch)
        except Exception:
            checked(batch)
            return
        extend(out)

    return push
