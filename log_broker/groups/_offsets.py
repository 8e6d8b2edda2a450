"""A group's committed offsets, with the seam where transactional commits will land.

Offsets committed inside a transaction are staged per producer id and become visible
only when the transaction commits (``complete_transaction``), or vanish when it
aborts; until then ``get`` never returns them.

Which write wins is decided by the order the records were written in, as Kafka
decides it: a plain commit written after a transaction staged its offset is newer, so
the transaction's commit marker does not overwrite it. Writes reach this class in log
order (each is applied once durable, and the log keeps order), so a counter stands in
for the log offset.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from headrace.base import TopicPartition

from ._codec import OffsetValue


class GroupOffsets:
    def __init__(self) -> None:
        self._committed: dict[TopicPartition, OffsetValue] = {}
        self._pending: dict[int, dict[TopicPartition, tuple[int, OffsetValue]]] = {}
        self._written: dict[TopicPartition, int] = {}  # write order of each committed offset
        self._writes = 0

    def __len__(self) -> int:
        return len(self._committed)

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self._committed)

    def get(self, tp: TopicPartition) -> OffsetValue | None:
        return self._committed.get(tp)

    def items(self) -> Iterable[tuple[TopicPartition, OffsetValue]]:
        return self._committed.items()

    def put(self, offsets: Mapping[TopicPartition, OffsetValue]) -> None:
        self._writes += 1
        self._committed.update(offsets)
        self._written.update(dict.fromkeys(offsets, self._writes))

    def remove(self, tp: TopicPartition, only_if: OffsetValue | None = None) -> bool:
        """Forget ``tp``'s offset; with ``only_if``, only while it is still that value
        (an expiry must not delete a commit that arrived while its tombstone was written)."""
        current = self._committed.get(tp)
        if current is None or (only_if is not None and current is not only_if):
            return False
        del self._committed[tp]
        self._written.pop(tp, None)
        return True

    def expired(
        self, now_ms: int, retention_ms: int, empty_since_ms: int | None
    ) -> dict[TopicPartition, OffsetValue]:
        """Offsets past retention. A group that had members counts from the moment it
        became empty; a group that only ever stored offsets counts from each commit."""
        return {
            tp: value
            for tp, value in self._committed.items()
            if (value.commit_timestamp if empty_since_ms is None else empty_since_ms) + retention_ms
            <= now_ms
        }

    # -------------------------------------------------------------- transactions

    def stage(self, producer_id: int, offsets: Mapping[TopicPartition, OffsetValue]) -> None:
        self._writes += 1
        staged = self._pending.setdefault(producer_id, {})
        for tp, value in offsets.items():
            staged[tp] = (self._writes, value)

    def pending_partitions(self) -> set[TopicPartition]:
        """The partitions an open transaction has staged an offset for: the ones a
        ``require_stable`` OffsetFetch answers UNSTABLE_OFFSET_COMMIT for."""
        return {tp for staged in self._pending.values() for tp in staged}

    def has_pending(self, producer_id: int | None = None) -> bool:
        return bool(self._pending) if producer_id is None else producer_id in self._pending

    def complete_transaction(self, producer_id: int, commit: bool) -> None:
        staged = self._pending.pop(producer_id, None)
        if not staged or not commit:
            return
        for tp, (written, value) in staged.items():
            if written > self._written.get(tp, 0):
                self._committed[tp] = value
                self._written[tp] = written
