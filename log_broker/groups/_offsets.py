"""A group's committed offsets, with the seam where transactional commits will land.

Offsets committed inside a transaction are staged per producer id and become visible
only when the transaction commits (``complete_transaction``), or vanish when it
aborts; until then ``get`` never returns them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from ._codec import OffsetValue


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int


class GroupOffsets:
    def __init__(self) -> None:
        self._committed: dict[TopicPartition, OffsetValue] = {}
        self._pending: dict[int, dict[TopicPartition, OffsetValue]] = {}

    def __len__(self) -> int:
        return len(self._committed)

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self._committed)

    def get(self, tp: TopicPartition) -> OffsetValue | None:
        return self._committed.get(tp)

    def items(self) -> Iterable[tuple[TopicPartition, OffsetValue]]:
        return self._committed.items()

    def put(self, offsets: Mapping[TopicPartition, OffsetValue]) -> None:
        self._committed.update(offsets)

    def remove(self, tp: TopicPartition, only_if: OffsetValue | None = None) -> bool:
        """Forget ``tp``'s offset; with ``only_if``, only while it is still that value
        (an expiry must not delete a commit that arrived while its tombstone was written)."""
        current = self._committed.get(tp)
        if current is None or (only_if is not None and current is not only_if):
            return False
        del self._committed[tp]
        return True

    def expired(self, now_ms: int, retention_ms: int, empty_since_ms: int | None
                ) -> dict[TopicPartition, OffsetValue]:
        """Offsets past retention. A group that had members counts from the moment it
        became empty; a group that only ever stored offsets counts from each commit."""
        return {tp: value for tp, value in self._committed.items()
                if (value.commit_timestamp if empty_since_ms is None else empty_since_ms)
                + retention_ms <= now_ms}

    # -------------------------------------------------------------- transactions

    def stage(self, producer_id: int, offsets: Mapping[TopicPartition, OffsetValue]) -> None:
        self._pending.setdefault(producer_id, {}).update(offsets)

    def has_pending(self, producer_id: int | None = None) -> bool:
        return bool(self._pending) if producer_id is None else producer_id in self._pending

    def complete_transaction(self, producer_id: int, commit: bool) -> None:
        staged = self._pending.pop(producer_id, None)
        if staged and commit:
            self._committed.update(staged)
