"""Binding a serde to a topic once, for the per-record paths of stateful operators.

A serde offering ``serializer_for``/``deserializer_for`` gives a plain function (or
``None`` for bytes unchanged); any other object with ``serialize(topic, obj)`` is bound
with a closure. Everything bound here is internal (stores, changelogs, repartitioned
changes, join state), so ``None`` as the serde means the self-describing auto serde
(``_auto_serde``), as ``_serde_roles.for_internal`` says.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._auto_serde import AUTO

Encode = Callable[[Any], Any]  # bytes, or None for a null
Decode = Callable[["bytes | None"], Any]


def _same(obj: Any) -> Any:
    return obj


def encoder(serde: Any, topic: str) -> Encode:
    if serde is None:
        serde = AUTO
    fast = getattr(serde, "serializer_for", None)
    if fast is not None:
        bound = fast(topic)
        return _same if bound is None else bound
    serialize = serde.serialize
    return lambda obj: serialize(topic, obj)


def decoder(serde: Any, topic: str) -> Decode:
    if serde is None:
        serde = AUTO
    fast = getattr(serde, "deserializer_for", None)
    if fast is not None:
        bound = fast(topic)
        return _same if bound is None else bound
    deserialize = serde.deserialize
    return lambda data: None if data is None else deserialize(topic, data)
