"""Binding a serde to a topic once, for the per-record paths of stateful operators.

A serde offering ``serializer_for``/``deserializer_for`` gives a plain function (or
``None`` for bytes unchanged); any other object with ``serialize(topic, obj)`` is bound
with a closure. ``None`` as the serde means bytes pass through, and anything else
is refused with a message naming the missing serde.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._errors import SerializationError

Encode = Callable[[Any], Any]  # bytes, or None for a null
Decode = Callable[["bytes | None"], Any]


def _same(obj: Any) -> Any:
    return obj


def _require_bytes(obj: Any) -> Any:
    if obj is None or type(obj) is bytes:
        return obj
    raise SerializationError(
        f"no serde for a {type(obj).__name__} in {_where}: pass key_serde/value_serde "
        "to the grouping or to materialized()"
    )


_where = "a state store or internal topic"


def encoder(serde: Any, topic: str) -> Encode:
    if serde is None:
        return _require_bytes
    fast = getattr(serde, "serializer_for", None)
    if fast is not None:
        bound = fast(topic)
        return _same if bound is None else bound
    serialize = serde.serialize
    return lambda obj: serialize(topic, obj)


def decoder(serde: Any, topic: str) -> Decode:
    if serde is None:
        return _same
    fast = getattr(serde, "deserializer_for", None)
    if fast is not None:
        bound = fast(topic)
        return _same if bound is None else bound
    deserialize = serde.deserialize
    return lambda data: None if data is None else deserialize(topic, data)
