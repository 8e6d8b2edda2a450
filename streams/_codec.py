"""Binding serdes to a topic once, so the per-record call is as cheap as it can be.

A serde may offer ``serializer_for(topic)`` / ``deserializer_for(topic)`` returning a
one-argument function, or ``None`` when it leaves bytes unchanged (then the executor
skips the call altogether). Any other object with ``serialize(topic, obj)`` /
``deserialize(topic, data)`` is bound with :func:`functools.partial`.

A serde may also offer ``bare_serializer_for(topic)`` / ``bare_deserializer_for(topic)``:
the same conversion for non-null input without null handling or error translation,
typically a C function (``orjson.loads``), which a batch loop calls directly, saving a
Python call per record. It must return what the checked function returns wherever
that succeeds, and raise (any exception) wherever that raises: the loops keep nulls as
nulls themselves and, on any exception, redo the batch with the checked functions,
which raise the serde's own error or hand the record to the error handler.

No serde at all means bytes pass through; on the way out they are checked to be bytes,
so a value whose serde was lost on the way (``map_values`` forgets it, as in Kafka
Streams) fails with a clear message instead of reaching the producer as an object.

A sink side whose serializer is :data:`APP_DEFAULT` (the DSL's ``to()`` gives it to a side
the program computed) must be written with the configured default serde: with none,
:func:`check_sink_serdes` refuses the topology before a record is read, naming the sink
and its topic.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

Encode = Callable[[Any], "bytes | None"]
Decode = Callable[["bytes | None"], Any]


def _bytes_or(complaint: Callable[[Any], str]) -> Encode:
    """A writer of bytes as they are, raising ``TypeError(complaint(obj))`` for anything
    else: where there is no serde, only bytes can be written."""

    def check(obj: Any) -> bytes | None:
        if obj is None or type(obj) is bytes:
            return obj
        if isinstance(obj, bytes | bytearray | memoryview):
            return bytes(obj)
        raise TypeError(complaint(obj))

    return check


require_bytes = _bytes_or(
    lambda obj: (
        f"no serde to write a {type(obj).__name__}: pass key_serde/value_serde to "
        "the operator or set a default serde in the config"
    )
)


def bytes_only(node: str, topic: str, side: str) -> Encode:
    """``require_bytes`` for the ``side`` (key or value) of sink ``node``, whose error
    names the node and the topic."""
    return _bytes_or(
        lambda obj: (
            f"sink {node} (topic {topic!r}) has no {side} serde and got a "
            f"{type(obj).__name__}, not bytes: pass {side}_serializer to the sink or set "
            f"default_{side}_serde"
        )
    )


class AppDefault:
    """The serializer of a sink side that must use the configured default serde."""

    def __repr__(self) -> str:
        return "APP_DEFAULT"


APP_DEFAULT = AppDefault()


def sink_serde(serializer: Any, default: Any) -> Any:
    """The serde a sink side writes with: its own, else the configured default (``None``
    when there is none: bytes pass)."""
    if serializer is None or serializer is APP_DEFAULT:
        return default
    return serializer


def missing_sink_serdes(
    sinks: Iterable[tuple[str, str, Any, Any]], default_key: Any, default_value: Any
) -> list[str]:
    """For each ``(node, topic, key serializer, value serializer)``, what the defaults
    leave unserialized: one line per sink side that is :data:`APP_DEFAULT` with no default."""
    missing = []
    for node, topic, key, value in sinks:
        for side, serializer, default in (
            ("key", key, default_key),
            ("value", value, default_value),
        ):
            if serializer is APP_DEFAULT and default is None:
                missing.append(
                    f"sink {node} (topic {topic}) has no {side} serde: its {side}s are computed "
                    f"by the topology, so pass {side}_serde to to() or set a default "
                    f"{side} serde (App(default_{side}_serde=...))"
                )
    return missing


def _bind(serde: Any, topic: str, fast: str, slow: str) -> Any:
    """``serde.<fast>(topic)`` where the serde offers it, else ``serde.<slow>`` with the
    topic bound."""
    bind_fast = getattr(serde, fast, None)
    if bind_fast is not None:
        return bind_fast(topic)
    return functools.partial(getattr(serde, slow), topic)


def bind_serializer(serde: Any, topic: str) -> Encode | None:
    if serde is None:
        return require_bytes
    bound: Encode | None = _bind(serde, topic, "serializer_for", "serialize")
    return bound


def bind_deserializer(serde: Any, topic: str) -> Decode | None:
    if serde is None:
        return None
    bound: Decode | None = _bind(serde, topic, "deserializer_for", "deserialize")
    return bound


def bind_bare(serde: Any, topic: str, kind: str) -> Callable[[Any], Any] | None:
    """``serde.bare_<kind>_for(topic)`` (``kind``: ``serializer`` or ``deserializer``),
    or ``None`` when the serde offers no bare function."""
    bind = getattr(serde, f"bare_{kind}_for", None)
    return None if bind is None else bind(topic)


BarePair = tuple[Callable[[Any], Any] | None, Callable[[Any], Any] | None]


def bind_bare_pair(
    key_serde: Any, value_serde: Any, key_fn: Any, value_fn: Any, topic: str, kind: str
) -> BarePair | None:
    """The bare functions of a key and a value side, ``None`` for a side whose bound
    function (``key_fn``/``value_fn``) is ``None`` (bytes pass unchanged); ``None``
    altogether unless every side that converts offers one."""
    kb = None if key_fn is None else bind_bare(key_serde, topic, kind)
    vb = None if value_fn is None else bind_bare(value_serde, topic, kind)
    if (key_fn is not None and kb is None) or (value_fn is not None and vb is None):
        return None
    return None if kb is None and vb is None else (kb, vb)
