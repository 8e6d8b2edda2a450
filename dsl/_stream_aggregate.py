"""count / reduce / aggregate of a grouped stream into a key-value store.

Records with a ``None`` key or value are skipped, as in Kafka Streams: there is no key
to aggregate under, or nothing to aggregate.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from headrace.streams import Rec

from ._aggregate_base import KeyValueAggregate, _new_tuple
from ._change import Change

_newest = itemgetter(2)  # a group's newest record timestamp


class StreamAggregate(KeyValueAggregate):
    def process_batch(self, batch: list[Rec]) -> None:
        ek = self._ek
        groups: dict[bytes, list[Any]] = {}
        cached = self._cached
        for k, v, ts, _h, _o in batch:
            if k is None or v is None:
                continue
            kb = ek(k)
            group = groups.get(kb)
            if group is None:
                groups[kb] = [k, [(v, ts)] if not cached else [v], ts]
            else:
                group[1].append((v, ts) if not cached else v)
                if ts > group[2]:
                    group[2] = ts
        if not groups:
            return
        fold, get, put = self._fold, self._bytes.get, self._bytes.put
        dv, ev = self._dv, self._ev
        if cached:
            counting = fold.counting
            # One read for the batch's keys: past the cache, one multi-get, not a get each;
            # and one write into the cache.
            olds = self._bytes.get_many(list(groups))
            self._bytes.put_all(
                [
                    (kb, ev(fold.final(k, dv(old), len(values) if counting else values)))
                    for (kb, (k, values, _ts)), old in zip(groups.items(), olds, strict=True)
                ]
            )
            if self._readers:
                self._pending_ts.update(zip(groups, map(_newest, groups.values()), strict=True))
            return
        out: list[Rec] = []
        send_old = self._send_old
        for kb, (k, timed, _ts) in groups.items():
            old = dv(get(kb))
            steps = fold.steps(k, old, [v for v, _ in timed])
            for new, (_v, ts) in zip(steps, timed, strict=True):
                out.append((k, _new_tuple(Change, (new, old if send_old else None)), ts, (), -1))
                old = new
            put(kb, ev(old))
        self._forward_changes(out)
