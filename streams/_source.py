"""Compiling a source node, for one concrete topic, into a batch decoder.

The decoder turns consumed 7-tuples into the task's 5-tuples. The common case is one
list comprehension over the batch, calling the serdes' bare functions where they offer
them (``_codec.py``); per-record error handling costs nothing until a record fails,
because the comprehension is retried record by record, with the checked functions,
only then.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from operator import itemgetter

from ._codec import Decode, bind_bare_pair, bind_deserializer
from ._config import StreamsConfig
from ._deserialization import DeserializationAction, DeserializationHandler
from ._errors import ProcessingError, RecordDeserializationError, StreamsError
from ._nodes import SourceNode
from ._record import ConsumedRecord, ProducedRecord, Rec, RecAt

log = logging.getLogger("headrace.streams.source")

Decoder = Callable[[Sequence[ConsumedRecord]], list[Rec]]
_timestamp = itemgetter(2)


def _fast_path(kd: Decode | None, vd: Decode | None) -> Decoder:
    # One comprehension per serde combination: a skipped call is the cheapest call.
    if kd is None and vd is None:
        return lambda run: [(k, v, ts, h, o) for _t, _p, o, ts, k, v, h in run]
    if kd is None:
        assert vd is not None
        return lambda run: [(k, vd(v), ts, h, o) for _t, _p, o, ts, k, v, h in run]
    if vd is None:
        return lambda run: [(kd(k), v, ts, h, o) for _t, _p, o, ts, k, v, h in run]
    return lambda run: [(kd(k), vd(v), ts, h, o) for _t, _p, o, ts, k, v, h in run]


def _bare_path(kb: Decode | None, vb: Decode | None) -> Decoder:
    # Bare functions take no nulls: nulls stay nulls here, inline.
    if kb is None:
        assert vb is not None
        return lambda run: [
            (k, None if v is None else vb(v), ts, h, o) for _t, _p, o, ts, k, v, h in run
        ]
    if vb is None:
        return lambda run: [
            (None if k is None else kb(k), v, ts, h, o) for _t, _p, o, ts, k, v, h in run
        ]
    return lambda run: [
        (None if k is None else kb(k), None if v is None else vb(v), ts, h, o)
        for _t, _p, o, ts, k, v, h in run
    ]


def compile_decoder(
    node: SourceNode,
    topic: str,
    config: StreamsConfig,
    dead_letter: Callable[[ProducedRecord], None],
) -> Decoder:
    """Bind the node's deserializers to ``topic`` and return the batch decoder.

    Order per batch: deserialize (fast path, falling back to record by record with the
    checked deserializers and the handler on the first failure); then apply the
    timestamp extractor, dropping records for which it returns a negative timestamp.
    """
    key_serde = (
        node.key_deserializer if node.key_deserializer is not None else config.default_key_serde
    )
    value_serde = (
        node.value_deserializer
        if node.value_deserializer is not None
        else config.default_value_serde
    )
    kd = bind_deserializer(key_serde, topic)
    vd = bind_deserializer(value_serde, topic)
    handler: DeserializationHandler = (
        node.deserialization_handler
        if node.deserialization_handler is not None
        else config.deserialization_handler
    )
    extractor = (
        node.timestamp_extractor
        if node.timestamp_extractor is not None
        else config.default_timestamp_extractor
    )
    bare = bind_bare_pair(key_serde, value_serde, kd, vd, topic, "deserializer")
    fast = _fast_path(kd, vd) if bare is None else _bare_path(*bare)

    def one_by_one(run: Sequence[ConsumedRecord]) -> list[Rec]:
        out: list[Rec] = []
        for record in run:
            _t, partition, offset, ts, k, v, h = record
            try:
                key = k if kd is None else kd(k)
                value = v if vd is None else vd(v)
            except Exception as exc:
                response = handler.handle(record, exc)
                for letter in response.dead_letters:
                    dead_letter(letter)
                if response.action is DeserializationAction.FAIL:
                    raise RecordDeserializationError(
                        f"cannot deserialize {topic}-{partition} offset {offset}: {exc!r}",
                        topic=topic,
                        partition=partition,
                        offset=offset,
                    ) from exc
                continue
            out.append((key, value, ts, h, offset))
        return out

    def extract(batch: list[Rec]) -> list[Rec]:
        assert extractor is not None
        try:
            out = [(k, v, extractor(k, v, ts), h, o) for k, v, ts, h, o in batch]
        except StreamsError:
            raise
        except Exception as exc:
            raise ProcessingError(
                f"timestamp extractor of {node.name} failed: {exc!r}",
                node=node.name,
                topic=topic,
                partition=-1,
            ) from exc
        if out and min(map(_timestamp, out)) < 0:
            kept = [r for r in out if r[RecAt.TIMESTAMP] >= 0]
            log.warning(
                "%s: dropped %d record(s) of %s with a negative extracted timestamp",
                node.name,
                len(out) - len(kept),
                topic,
            )
            out = kept
        return out

    def decode(run: Sequence[ConsumedRecord]) -> list[Rec]:
        try:
            batch = fast(run)
        except Exception:
            batch = one_by_one(run)
        return batch if extractor is None else extract(batch)

    return decode
