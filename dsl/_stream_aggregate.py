"""count / reduce / aggregate of a grouped stream into a key-value store.

Records with a ``None`` key or value are skipped, as in Kafka Streams: there is no key
to aggregate under, or nothing to aggregate. Each aggregate carries the largest
timestamp of the records in it (``KStreamAggregate``, ``KStreamReduce``): an
out-of-order record updates it without making its timestamp older.
"""

from __future__ import annotations

from typing import Any

from headrace.streams import Rec

from ._aggregate_base import KeyValueAggregate, _new_tuple
from ._change import Change


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
        fold, stored, stamped = self._fold, self._stored, self._stamped
        if cached:
            counting = fold.counting
            # One read for the batch's keys: past the cache, one multi-get, not a get each;
            # and one write into the cache.
            rows = []
            for (kb, (k, values, newest)), raw in zip(
                groups.items(), self._bytes.get_many(list(groups)), strict=True
            ):
                agg, agg_ts = stored(raw)
                agg = fold.final(k, agg, len(values) if counting else values)
                rows.append((kb, stamped(kb, agg, max(newest, agg_ts))))
            self._bytes.put_all(rows)
            return
        out: list[Rec] = []
        send_old, get, put = self._send_old, self._bytes.get, self._bytes.put
        for kb, (k, timed, _newest) in groups.items():
            old, stamp = stored(get(kb))
            steps = fold.steps(k, old, [v for v, _ in timed])
            for new, (_v, ts) in zip(steps, timed, strict=True):
                if ts > stamp:
                    stamp = ts
                out.append((k, _new_tuple(Change, (new, old if send_old else None)), stamp, (), -1))
                old = new
            put(kb, stamped(kb, old, stamp))
        self._forward_changes(out)
