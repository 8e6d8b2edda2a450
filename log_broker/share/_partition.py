"""One share partition: which records of a topic partition a share group has in flight.

A share partition spans offsets [start_offset, end_offset): the share-partition start
offset (SPSO) is the first offset not yet finished with; the end offset (SPEO) is the
first offset never acquired. Below the start every record is done; from the end on,
records are available to whoever fetches first. Between them each record has a state:

    AVAILABLE --acquire--> ACQUIRED --ACCEPT/GAP--> ACKNOWLEDGED
        ^                     |  |--REJECT--> ARCHIVED
        +--RELEASE / lock ----+  +--RENEW: lock extended
           expiry / member gone
    (a record whose delivery count reached the limit is ARCHIVED instead of AVAILABLE)

ACKNOWLEDGED and ARCHIVED are final; once every record from the start offset on is
final, the start offset moves past them and they are forgotten. Offsets inside the span
with no record (batches removed by compaction) are simply not tracked.

No I/O and no clock: callers pass ``now_ms``; ``snapshot``/``restore`` give the state
to persist and rebuild from.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ._config import PartitionRules
from ._errors import InvalidRecordStateError


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


FINAL = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AckType(enum.IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass(slots=True)
class _InFlight:
    state: RecordState
    delivery_count: int
    owner: str | None = None
    deadline_ms: int = 0


@dataclass(frozen=True, slots=True)
class Acquired:
    """A run of records acquired by one fetch, all delivered the same number of times."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class StateRange:
    """A run of tracked records sharing state and delivery count (what is persisted)."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    start_offset: int
    end_offset: int
    ranges: tuple[StateRange, ...]


class SharePartition:
    def __init__(self, start_offset: int, rules: PartitionRules) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.rules = rules
        # Tracked offsets in ascending order (they are only ever added at the end).
        self._records: OrderedDict[int, _InFlight] = OrderedDict()
        self._earliest_deadline: int | None = None

    # ------------------------------------------------------------------ reading

    @property
    def in_flight(self) -> int:
        """Records tracked between the start and end offsets."""
        return len(self._records)

    def count(self, state: RecordState) -> int:
        return sum(1 for r in self._records.values() if r.state is state)

    def state_of(self, offset: int) -> RecordState | None:
        record = self._records.get(offset)
        return None if record is None else record.state

    def delivery_count(self, offset: int) -> int:
        record = self._records.get(offset)
        return 0 if record is None else record.delivery_count

    def next_deadline(self) -> int | None:
        return self._earliest_deadline

    def room(self) -> int:
        """How many new records may still be acquired under the in-flight bound."""
        return max(self.rules.max_in_flight_records - len(self._records), 0)

    # ------------------------------------------------------------------ changes

    def follow_log_start(self, log_start_offset: int) -> bool:
        """Forget what retention or DeleteRecords removed from the log; True if moved."""
        if log_start_offset <= self.start_offset:
            return False
        while self._records and next(iter(self._records)) < log_start_offset:
            self._records.popitem(last=False)
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)
        self._advance_start()
        return True

    def acquire(
        self,
        member: str,
        now_ms: int,
        max_records: int,
        new_batches: Iterable[tuple[int, int] | tuple[int, int, bool]] = (),
        *,
        record_limit: bool = False,
    ) -> list[Acquired]:
        """Lock records for ``member`` until ``now + lock duration``.

        Steps: expire overdue locks; take AVAILABLE records from the start on (archiving
        any that reached the delivery limit); then take new records from ``new_batches``
        (the (first, last) offsets of the log's batches from ``end_offset`` on), whole
        batches at a time, while the in-flight bound allows; a batch given as
        (first, last, False) is never delivered (a control batch, an aborted
        transaction's records under read_committed) and goes straight to ARCHIVED (at least one batch when
        nothing is in flight, so a batch larger than the bound still moves). Stops once
        ``max_records`` are taken, except to finish a batch; with ``record_limit``
        (ShareFetch v2's record-limit mode) never more, even within a batch.
        """
        self.expire(now_ms)
        deadline = now_ms + self.rules.lock_duration_ms
        limit = self.rules.delivery_count_limit
        taken: list[tuple[int, int]] = []  # (offset, delivery count)
        for offset, record in self._records.items():
            if len(taken) >= max_records:
                break
            if record.state is not RecordState.AVAILABLE:
                continue
            if record.delivery_count >= limit:
                record.state = RecordState.ARCHIVED
                continue
            self._lock(record, member, deadline)
            taken.append((offset, record.delivery_count))
        for span in new_batches:
            if len(taken) >= max_records:
                break
            first, last = span[0], span[1]
            first = max(first, self.end_offset)
            if len(span) == 3 and not span[2]:
                if last >= first:
                    for offset in range(first, last + 1):
                        self._records[offset] = _InFlight(RecordState.ARCHIVED, 0)
                    self.end_offset = last + 1
                continue
            if record_limit:
                last = min(last, first + max_records - len(taken) - 1)
            if last < first:
                continue
            size = last - first + 1
            if self._records and size > self.room():
                break
            for offset in range(first, last + 1):
                record = _InFlight(RecordState.AVAILABLE, 0)
                self._lock(record, member, deadline)
                self._records[offset] = record
                taken.append((offset, 1))
            self.end_offset = last + 1
        self._advance_start()
        return _runs(taken)

    def _lock(self, record: _InFlight, member: str, deadline: int) -> None:
        record.state = RecordState.ACQUIRED
        record.delivery_count += 1
        record.owner = member
        record.deadline_ms = deadline
        if self._earliest_deadline is None or deadline < self._earliest_deadline:
            self._earliest_deadline = deadline

    def acknowledge(
        self, member: str, first: int, last: int, types: tuple[int, ...], now_ms: int
    ) -> None:
        """Apply one acknowledgement batch: one type for the whole range, or one per offset.

        All or nothing: every tracked record in the range must be ACQUIRED by
        ``member``, and a RENEW needs the group's ``share.renew.acknowledge.enable``
        (else InvalidRecordStateError and nothing changes).
        """
        if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
            raise InvalidRecordStateError(f"malformed acknowledgement {first}..{last}")
        try:
            kinds = [AckType(t) for t in types]
        except ValueError:
            raise InvalidRecordStateError(f"unknown acknowledge type in {types}") from None
        if first < self.start_offset or last >= self.end_offset:
            raise InvalidRecordStateError(
                f"offsets {first}..{last} are not in flight"
                f" ({self.start_offset}..{self.end_offset - 1})"
            )
        if AckType.RENEW in kinds and not self.rules.renew_enabled:
            raise InvalidRecordStateError(
                "renew acknowledgements are off for this group (share.renew.acknowledge.enable)"
            )
        chosen = list(self._tracked(first, last))
        for _, record in chosen:
            if record.state is not RecordState.ACQUIRED or record.owner != member:
                raise InvalidRecordStateError(
                    f"records {first}..{last} are not all acquired by this member"
                )
        for offset, record in chosen:
            kind = kinds[0] if len(kinds) == 1 else kinds[offset - first]
            if kind is AckType.RENEW:
                record.deadline_ms = now_ms + self.rules.lock_duration_ms
            elif kind is AckType.RELEASE:
                self._make_available(record)
            elif kind is AckType.REJECT or kind is AckType.GAP:
                self._finish(record, RecordState.ARCHIVED)
            else:
                self._finish(record, RecordState.ACKNOWLEDGED)
        self._advance_start()

    def _tracked(self, first: int, last: int) -> Iterator[tuple[int, _InFlight]]:
        if last - first + 1 <= len(self._records):
            for offset in range(first, last + 1):
                record = self._records.get(offset)
                if record is not None:
                    yield offset, record
        else:
            for offset, record in self._records.items():
                if first <= offset <= last:
                    yield offset, record

    def _make_available(self, record: _InFlight) -> None:
        if record.delivery_count >= self.rules.delivery_count_limit:
            self._finish(record, RecordState.ARCHIVED)
            return
        record.state = RecordState.AVAILABLE
        record.owner = None
        record.deadline_ms = 0

    @staticmethod
    def _finish(record: _InFlight, state: RecordState) -> None:
        record.state = state
        record.owner = None
        record.deadline_ms = 0

    def expire(self, now_ms: int) -> bool:
        """Return records whose lock ran out; True if any did."""
        if self._earliest_deadline is None or self._earliest_deadline > now_ms:
            return False
        changed = False
        earliest: int | None = None
        for record in self._records.values():
            if record.state is not RecordState.ACQUIRED:
                continue
            if record.deadline_ms <= now_ms:
                self._make_available(record)
                changed = True
            elif earliest is None or record.deadline_ms < earliest:
                earliest = record.deadline_ms
        self._earliest_deadline = earliest
        self._advance_start()
        return changed

    def release_member(self, member: str) -> bool:
        """Release every record ``member`` holds (its session closed); True if any."""
        changed = False
        for record in self._records.values():
            if record.state is RecordState.ACQUIRED and record.owner == member:
                self._make_available(record)
                changed = True
        self._advance_start()
        return changed

    def _advance_start(self) -> None:
        records = self._records
        while records:
            offset, record = next(iter(records.items()))
            if record.state not in FINAL:
                self.start_offset = offset
                return
            records.popitem(last=False)
        self.start_offset = self.end_offset

    # ------------------------------------------------------------------ persistence

    def snapshot(self) -> Snapshot:
        """The state to persist. Locks are not: after a restart what was ACQUIRED is
        AVAILABLE again, with its delivery count kept."""
        ranges: list[StateRange] = []
        run: list[int] = []  # first, last, state, count
        for offset, record in self._records.items():
            state = RecordState.AVAILABLE if record.state is RecordState.ACQUIRED else record.state
            if run and run[1] == offset - 1 and run[2] == state and run[3] == record.delivery_count:
                run[1] = offset
                continue
            if run:
                ranges.append(StateRange(run[0], run[1], RecordState(run[2]), run[3]))
            run = [offset, offset, state, record.delivery_count]
        if run:
            ranges.append(StateRange(run[0], run[1], RecordState(run[2]), run[3]))
        return Snapshot(self.start_offset, self.end_offset, tuple(ranges))

    @classmethod
    def restore(cls, snapshot: Snapshot, rules: PartitionRules) -> SharePartition:
        partition = cls(snapshot.start_offset, rules)
        partition.end_offset = snapshot.end_offset
        for r in snapshot.ranges:
            state = RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state
            for offset in range(r.first_offset, r.last_offset + 1):
                partition._records[offset] = _InFlight(state, r.delivery_count)
        partition._advance_start()
        return partition


def _runs(taken: list[tuple[int, int]]) -> list[Acquired]:
    """Consecutive offsets with one delivery count, merged into ranges."""
    runs: list[Acquired] = []
    for offset, count in taken:
        if runs and runs[-1].last_offset == offset - 1 and runs[-1].delivery_count == count:
            last = runs[-1]
            runs[-1] = Acquired(last.first_offset, offset, count)
        else:
            runs.append(Acquired(offset, offset, count))
    return runs
