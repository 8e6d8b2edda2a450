"""Replay of ``__consumer_offsets``: record batches in log order in, latest state out.

Later records win; a null value deletes. Offsets inside a transactional batch are held
per producer id until that producer's commit marker (a control batch) arrives; an
abort marker drops them. A transaction's offset loses to a plain commit written after
it (a higher log offset), as in Kafka, so replaying a compacted log gives the same
result as replaying the whole one. What is still held at the end belongs to
transactions that are open, and is handed over as pending.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from headrace.base import TopicPartition

from ..records._batches import BatchHeader, Record, parse_control_record
from ..storage import StorageError
from ._codec import (
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
)
from ._errors import OffsetsRecordError

log = logging.getLogger("headrace.broker.groups")

Offsets = dict[str, dict[TopicPartition, OffsetValue]]


class OffsetsReplay:
    def __init__(self) -> None:
        self.groups: dict[str, GroupValue] = {}
        self.offsets: Offsets = {}
        self.pending: dict[int, Offsets] = {}
        # Log offset of the record behind each committed and each staged offset.
        self._committed_at: dict[tuple[str, TopicPartition], int] = {}
        self._staged_at: dict[tuple[int, str, TopicPartition], int] = {}
        self.records = 0
        self.unreadable = 0

    def apply(self, header: BatchHeader, records: Sequence[Record]) -> None:
        if header.is_control:
            for record in records:
                try:
                    marker = parse_control_record(record)
                except StorageError as exc:
                    self._unreadable(record, exc)
                    continue
                self._end_transaction(header.producer_id, marker.commit)
            return
        for record in records:
            self.records += 1
            try:
                self._apply_record(header, record)
            except OffsetsRecordError as exc:
                self._unreadable(record, exc)

    def _apply_record(self, header: BatchHeader, record: Record) -> None:
        if record.key is None:
            raise OffsetsRecordError("record without a key")
        key = decode_key(record.key)
        if isinstance(key, OffsetKey):
            tp = TopicPartition(key.topic, key.partition)
            if header.is_transactional:
                target = self.pending.setdefault(header.producer_id, {})
                self._staged_at[(header.producer_id, key.group, tp)] = record.offset
            else:
                target = self.offsets
                self._committed_at[(key.group, tp)] = record.offset
            if record.value is None:
                target.get(key.group, {}).pop(tp, None)
            else:
                target.setdefault(key.group, {})[tp] = decode_offset_value(record.value)
        elif isinstance(key, GroupKey):
            if record.value is None:
                # Offsets have tombstones of their own; deleting a group writes both.
                self.groups.pop(key.group, None)
            else:
                self.groups[key.group] = decode_group_value(record.value)

    def _end_transaction(self, producer_id: int, commit: bool) -> None:
        staged = self.pending.pop(producer_id, None)
        if not staged or not commit:
            return
        for group, offsets in staged.items():
            for tp, value in offsets.items():
                at = self._staged_at.pop((producer_id, group, tp), -1)
                if at > self._committed_at.get((group, tp), -1):
                    self.offsets.setdefault(group, {})[tp] = value
                    self._committed_at[(group, tp)] = at

    def still_pending(self) -> dict[int, Offsets]:
        """Offsets of open transactions that a later plain commit has not overtaken."""
        kept: dict[int, Offsets] = {}
        for producer_id, staged in self.pending.items():
            for group, offsets in staged.items():
                for tp, value in offsets.items():
                    at = self._staged_at.get((producer_id, group, tp), -1)
                    if at > self._committed_at.get((group, tp), -1):
                        kept.setdefault(producer_id, {}).setdefault(group, {})[tp] = value
        return kept

    def _unreadable(self, record: Record, exc: Exception) -> None:
        # One unreadable record must not keep the broker from starting; say so loudly.
        self.unreadable += 1
        log.warning(
            "skipping unreadable __consumer_offsets record at offset %d: %s", record.offset, exc
        )
