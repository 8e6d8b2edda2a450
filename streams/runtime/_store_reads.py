"""Reading one typed store for an interactive query, as JSON-ready entries.

Three kinds of store answer differently (:class:`StoreKind`, read off the store's
builder, so a request is checked before anyone looks for the store's task):

- a **key-value** store: one value per key; a range is ``{key, value}`` entries over
  keys ``from_key..to_key``, both inclusive, compared as serialized bytes (the store's
  own order);
- a **window** store: a key's windows ``{start, end, value}`` whose *start* lies in
  ``[from, to]``, as Kafka Streams' ``WindowStore.fetch(key, timeFrom, timeTo)``;
  a range adds the key to each entry;
- a **session** store: a key's sessions ``{start, end, value}`` that *overlap*
  ``[from, to]`` (end >= from and start <= to), as Kafka Streams'
  ``SessionStore.findSessions(key, earliestSessionEndTime, latestSessionStartTime)``.
  A session has no fixed length, so "starts in [from, to]" would miss a session that
  began before ``from`` and is still open within it.

Every read stops after ``limit + 1`` entries: the extra one only says the answer was
cut (``truncated``), and nothing beyond it is read from the store.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, NamedTuple

from headrace.state import SessionStoreBuilder, WindowStoreBuilder

from ._query_params import BadQuery, TimeBounds


class StoreKind(enum.Enum):
    KEY_VALUE = "key_value"
    WINDOW = "window"
    SESSION = "session"


def store_kind(builder: object) -> StoreKind:
    """The kind of the store ``builder`` builds. A store of another make (a
    processor-API builder of its own) is read as a key-value store: with its ``get``
    and ``range`` when it has them, else the query is refused."""
    if isinstance(builder, WindowStoreBuilder):
        return StoreKind.WINDOW
    if isinstance(builder, SessionStoreBuilder):
        return StoreKind.SESSION
    return StoreKind.KEY_VALUE


def jsonable(value: Any) -> Any:
    """A stored value as JSON: bytes holding JSON as that JSON, other bytes as text (or
    hex when not UTF-8), pydantic models as their dump, the rest as it is."""
    if isinstance(value, bytes):
        try:
            return json.loads(value)
        except ValueError:
            try:
                return value.decode()
            except UnicodeDecodeError:
                return value.hex()
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    return value


def key_json(key: Any) -> Any:
    """A key as JSON: keys come from URLs as text, so bytes keys go back as text."""
    if isinstance(key, bytes):
        try:
            return key.decode()
        except UnicodeDecodeError:
            return key.hex()
    return jsonable(key)


class Entry(NamedTuple):
    """One answer entry and where it sorts among the entries of other tasks."""

    order: tuple[bytes, int, int]
    body: dict[str, Any]


def _cut(items: Iterator[Any], limit: int) -> tuple[list[Any], bool]:
    taken = list(islice(items, limit + 1))
    return taken[:limit], len(taken) > limit


def key_windows(
    store: Any, kind: StoreKind, key: Any, bounds: TimeBounds, limit: int
) -> tuple[list[dict[str, Any]], bool]:
    """The windows or sessions of ``key`` within ``bounds`` (see the module docstring),
    in time order, at most ``limit``; and whether more were left out."""
    if kind is StoreKind.WINDOW:
        items = store.fetch_key_range(key, key, bounds.time_from, bounds.time_to)
    elif kind is StoreKind.SESSION:
        items = store.find_sessions(key, bounds.time_from, bounds.time_to)
    else:
        raise BadQuery(f"a {kind.value} store has no windows")
    taken, truncated = _cut(items, limit)
    return [
        {"start": w.window.start, "end": w.window.end, "value": jsonable(v)} for w, v in taken
    ], truncated


def key_range(
    store: Any,
    kind: StoreKind,
    key_from: Any,
    key_to: Any,
    bounds: TimeBounds | None,
    limit: int,
) -> tuple[list[Entry], bool]:
    """Entries of keys ``key_from..key_to`` (``None``: unbounded), at most ``limit``, in
    the store's order; and whether more were left out."""
    if kind is StoreKind.KEY_VALUE:
        if not callable(getattr(store, "range", None)):
            raise BadQuery(f"store {getattr(store, 'name', '?')!r} has no key ranges")
        taken, truncated = _cut(store.range(key_from, key_to), limit)
        return [
            Entry((_order_bytes(store, k), 0, 0), {"key": key_json(k), "value": jsonable(v)})
            for k, v in taken
        ], truncated
    assert bounds is not None
    if kind is StoreKind.WINDOW:
        items = store.fetch_key_range(key_from, key_to, bounds.time_from, bounds.time_to)
    else:
        items = store.find_sessions_range(key_from, key_to, bounds.time_from, bounds.time_to)
    taken, truncated = _cut(items, limit)
    return [
        Entry(
            (_order_bytes(store, w.key), w.window.start, w.window.end),
            {
                "key": key_json(w.key),
                "start": w.window.start,
                "end": w.window.end,
                "value": jsonable(v),
            },
        )
        for w, v in taken
    ], truncated


def merge(
    parts: Iterable[tuple[Sequence[Entry], bool]], limit: int
) -> tuple[list[dict[str, Any]], bool]:
    """The first ``limit`` entries of several tasks' answers, by key bytes then time.
    Each part holds its task's first entries, so the first ``limit`` of the union are
    among them; the union is cut when it is longer, or when any part was cut."""
    entries: list[Entry] = []
    truncated = False
    for part, cut in parts:
        entries.extend(part)
        truncated = truncated or cut
    entries.sort(key=lambda e: e.order)
    return [e.body for e in entries[:limit]], truncated or len(entries) > limit


def _order_bytes(store: Any, key: Any) -> bytes:
    """``key`` as the store holds it: what its serde writes (bytes keys pass through)."""
    if isinstance(key, bytes):
        return key
    data = store.key_serde.serialize(store.topic, key)
    return data if isinstance(data, bytes) else str(key).encode()
