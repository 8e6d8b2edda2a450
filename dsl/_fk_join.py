"""Foreign-key table joins: each row of the left table joined with the right table's row
whose key ``foreign_key_extractor(left value)`` names (Kafka Streams' KIP-213 design).

The two tables are partitioned by different keys, so the join runs as a round trip
through two internal topics, named after the join:

1. *Subscribe* (left task, :class:`SubscriptionSend`): for each change of a left row,
   send to ``<name>-subscription-registration-topic``, keyed by foreign key, what the
   row now wants: a subscription to its new foreign key, carrying a hash of its new
   value, and an unsubscription from its old foreign key when that changed.
2. *Answer* (right task): :class:`SubscriptionReceive` keeps the subscriptions in the
   store ``<name>-subscription-store`` (foreign key, then primary key) and answers each
   with the right row's current value; :class:`ForeignUpdate` answers every subscriber
   of a right row again whenever that row changes or is deleted. Answers go to
   ``<name>-subscription-response-topic``, keyed by the left row's key.
   An answer to a subscription is stamped max(the subscription's timestamp, the right
   row's), as Kafka Streams' ``SubscriptionJoinProcessorSupplier`` stamps it (an
   unsubscription's answer too); an answer to a right row's change carries the change's
   timestamp, as ``ForeignTableJoinProcessorSupplier``'s does.
3. *Resolve* (left task, :class:`ResponseResolve`): an answer whose hash is not that of
   the left row's current value is stale (the row changed since) and is dropped; the
   others become the result row, or a delete.
4. The result table (:class:`ResultTable`) keeps the rows in its store, so it can send
   old values. Every current answer is forwarded, a repeat of the same row and a delete
   of a row that never was included, as Kafka Streams forwards them.

A left row without a foreign key joins nothing (a left join gives ``joiner(value,
None)`` at once). Hashes are of the left value's serialized bytes (its ``repr`` when the
table has no value serde, which is stable only for plain data).

Wire formats (all bytes): a subscription is an instruction byte, the 16-byte hash and
the left key's bytes; an answer is the hash, a presence byte and the right value's bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from headrace.streams import BatchProcessor, ProcessorContext, Rec

from ._binding import decoder, encoder
from ._change import Change
from ._table_nodes import ValueGetter, ValueGetterSupplier, timestamped_get

_new_tuple = tuple.__new__
SUBSCRIBE = b"S"  # answer only if the right row exists
SUBSCRIBE_ANSWER_NULL = b"s"  # answer even if it does not: an earlier row must be undone
UNSUBSCRIBE = b"u"  # forget the subscription, no answer
UNSUBSCRIBE_ANSWER_NULL = b"U"  # forget it and answer "no right row"
_PRESENT, _ABSENT = b"\x01", b"\x00"
HASH_LEN = 16
NO_HASH = bytes(HASH_LEN)


@dataclass(frozen=True)
class FkJoinSpec:
    name: str
    extractor: Callable[[Any], Any]
    joiner: Callable[[Any, Any], Any]
    left_join: bool
    left_key_serde: Any
    left_value_serde: Any
    right_key_serde: Any
    right_value_serde: Any
    subscription_store: str
    result_node: str
    subscription_sink: str


def _value_hasher(serde: Any, topic: str) -> Callable[[Any], bytes]:
    encode = None if serde is None else encoder(serde, topic)

    def value_hash(value: Any) -> bytes:
        if value is None:
            return NO_HASH
        data = encode(value) if encode is not None else value
        if type(data) is not bytes:
            data = repr(data).encode()
        return hashlib.blake2b(data, digest_size=HASH_LEN).digest()

    return value_hash


def _subscription_key(fk: bytes, pk: bytes) -> bytes:
    return len(fk).to_bytes(4, "big") + fk + pk


class SubscriptionSend(BatchProcessor):
    """Left changes to subscriptions; rows with no foreign key either way go straight
    to the result table."""

    def __init__(self, spec: FkJoinSpec) -> None:
        self._spec = spec

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        spec = self._spec
        topic = f"{context.application_id}-{spec.name}-subscription-registration-topic"
        self._efk = encoder(spec.right_key_serde, topic)
        self._epk = encoder(spec.left_key_serde, topic)
        self._hash = _value_hasher(spec.left_value_serde, topic)

    def process_batch(self, batch: list[Rec]) -> None:
        spec = self._spec
        extract, efk, epk, value_hash = spec.extractor, self._efk, self._epk, self._hash
        subscriptions: list[Rec] = []
        direct: list[Rec] = []
        for k, (new, old), ts, h, o in batch:
            if k is None:
                continue
            new_fk = None if new is None else extract(new)
            old_fk = None if old is None else extract(old)
            new_fkb = None if new_fk is None else efk(new_fk)
            old_fkb = None if old_fk is None else efk(old_fk)
            digest = value_hash(new)
            pkb = epk(k)
            if old_fkb is not None and old_fkb != new_fkb:
                instruction = UNSUBSCRIBE_ANSWER_NULL if new_fkb is None else UNSUBSCRIBE
                subscriptions.append((old_fkb, instruction + digest + pkb, ts, h, o))
            if new_fkb is not None:
                # an inner join undoes an old row only when the foreign key moved: with
                # the same one, an absent right row means there was no row to undo
                answer_null = spec.left_join or (old_fkb is not None and old_fkb != new_fkb)
                instruction = SUBSCRIBE_ANSWER_NULL if answer_null else SUBSCRIBE
                subscriptions.append((new_fkb, instruction + digest + pkb, ts, h, o))
            elif old_fkb is None and spec.left_join and (new is not None or old is not None):
                # No foreign key before or after: a left join's row is the left value
                # alone (an inner join has had no row, and makes none).
                row = None if new is None else spec.joiner(new, None)
                direct.append((k, _new_tuple(Change, (row, None)), ts, h, o))
        forward = self.context.forward_batch
        if subscriptions:
            forward(subscriptions, to=spec.subscription_sink)
        if direct:
            forward(direct, to=spec.result_node)


class SubscriptionReceive(BatchProcessor):
    """Keeps subscriptions per foreign key and answers each with the right row."""

    def __init__(self, spec: FkJoinSpec, right: ValueGetterSupplier) -> None:
        self._spec, self._right_supplier = spec, right

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        spec = self._spec
        topic = f"{context.application_id}-{spec.name}-subscription-response-topic"
        self._store = context.get_state_store(spec.subscription_store)
        self._right: ValueGetter = self._right_supplier.get()
        self._right.init(context)
        self._get_right = timestamped_get(self._right)
        self._dfk = decoder(spec.right_key_serde, topic)
        self._erv = encoder(spec.right_value_serde, topic)

    def process_batch(self, batch: list[Rec]) -> None:
        put, get, dfk, erv = self._store.put, self._get_right, self._dfk, self._erv
        out: list[Rec] = []
        for fkb, sub, ts, h, o in batch:
            if fkb is None or sub is None:
                continue
            instruction, digest, pkb = sub[:1], sub[1 : 1 + HASH_LEN], sub[1 + HASH_LEN :]
            key = _subscription_key(fkb, pkb)
            foreign = get(dfk(fkb))
            # A deleted left row's answer (no hash) keeps its own timestamp, as in Kafka
            # Streams; any other is stamped with the newer of the two rows.
            newer = foreign is not None and foreign[1] > ts and digest != NO_HASH
            answered_at = foreign[1] if newer else ts  # type: ignore[index]
            if instruction in (UNSUBSCRIBE, UNSUBSCRIBE_ANSWER_NULL):
                put(key, None)
                if instruction == UNSUBSCRIBE_ANSWER_NULL:
                    out.append((pkb, digest + _ABSENT, answered_at, h, o))
                continue
            put(key, digest)
            if foreign is not None:
                out.append((pkb, digest + _PRESENT + erv(foreign[0]), answered_at, h, o))
            elif instruction == SUBSCRIBE_ANSWER_NULL:
                out.append((pkb, digest + _ABSENT, answered_at, h, o))
        if out:
            self.context.forward_batch(out)


class ForeignUpdate(BatchProcessor):
    """A changed right row: answer every subscriber again with its new value."""

    def __init__(self, spec: FkJoinSpec) -> None:
        self._spec = spec

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        spec = self._spec
        topic = f"{context.application_id}-{spec.name}-subscription-response-topic"
        self._store = context.get_state_store(spec.subscription_store)
        self._efk = encoder(spec.right_key_serde, topic)
        self._erv = encoder(spec.right_value_serde, topic)

    def process_batch(self, batch: list[Rec]) -> None:
        scan, efk, erv = self._store.prefix_scan, self._efk, self._erv
        out: list[Rec] = []
        for fk, change, ts, h, o in batch:
            if fk is None:
                continue
            fkb = efk(fk)
            prefix = len(fkb).to_bytes(4, "big") + fkb
            new = change[0]
            tail = _ABSENT if new is None else _PRESENT + erv(new)
            start = len(prefix)
            for key, digest in scan(prefix):
                out.append((key[start:], digest + tail, ts, h, o))
        if out:
            self.context.forward_batch(out)


class ResponseResolve(BatchProcessor):
    """Answers to result rows, dropping those a later left change has made stale."""

    def __init__(self, spec: FkJoinSpec, left: ValueGetterSupplier) -> None:
        self._spec, self._left_supplier = spec, left

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        spec = self._spec
        topic = f"{context.application_id}-{spec.name}-subscription-response-topic"
        self._left: ValueGetter = self._left_supplier.get()
        self._left.init(context)
        self._hash = _value_hasher(spec.left_value_serde, topic)
        self._drv = decoder(spec.right_value_serde, topic)

    def process_batch(self, batch: list[Rec]) -> None:
        spec = self._spec
        get, value_hash, drv, joiner = self._left.get, self._hash, self._drv, spec.joiner
        out: list[Rec] = []
        for k, answer, ts, h, o in batch:
            if k is None or answer is None:
                continue
            current = get(k)
            if value_hash(current) != answer[:HASH_LEN]:
                continue  # the row changed since it subscribed: a newer answer follows
            if current is None:
                row = None
            elif answer[HASH_LEN : HASH_LEN + 1] == _PRESENT:
                row = joiner(current, drv(answer[HASH_LEN + 1 :]))
            else:
                row = joiner(current, None) if spec.left_join else None
            out.append((k, _new_tuple(Change, (row, None)), ts, h, o))
        if out:
            self.context.forward_batch(out)


class ResultTable(BatchProcessor):
    """Writes result rows to the join's store and forwards each, with the old row when
    readers asked for it."""

    def __init__(self, node: Any, store_name: str, key_serde: Any, value_serde: Any) -> None:
        self._node, self._store_name = node, store_name
        self._key_serde, self._value_serde = key_serde, value_serde

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        topic = f"{context.application_id}-{self._store_name}-changelog"
        self._ek = encoder(self._key_serde, topic)
        self._ev = encoder(self._value_serde, topic)
        self._dv = decoder(self._value_serde, topic)
        self._store = context.get_state_store(self._store_name).inner
        self._send_old = self._node.send_old_values

    def process_batch(self, batch: list[Rec]) -> None:
        get, put, send_old = self._store.get, self._store.put, self._send_old
        ek, ev, dv = self._ek, self._ev, self._dv
        out: list[Rec] = []
        for k, change, ts, h, o in batch:
            new = change[0]
            kb = ek(k)
            old = dv(get(kb))
            # Every answer is forwarded, a repeat of the row or a delete of none included,
            # as Kafka Streams' response processor forwards each one that is current.
            put(kb, ev(new))
            out.append((k, _new_tuple(Change, (new, old if send_old else None)), ts, h, o))
        if out:
            self.context.forward_batch(out)
