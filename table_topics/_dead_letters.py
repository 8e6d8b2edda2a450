"""The records a topic's table could not take, kept in a Delta table of their own.

``DeadLetterTable(location, topic).append(dead, ends)`` appends to
``<location>/_dead_letters/<topic>``, one row per record::

    topic string, partition int32, offset int64, timestamp timestamp[ms, UTC],
    key binary, value binary, headers list<struct<key: string, value: binary>>,
    reason string, schema_id int32 (the id in the value's registry framing; null when
    the value is not framed)

``topic`` is there because the exactly-once bookkeeping is spark_bridge's ``DeltaSink``
by offsets, which keys each partition by topic: every commit records, as the
application transaction ``{app_id}/{topic}/{partition}``, the next offset it covers, and
a replayed batch's letters below it are dropped. So a writer that crashes after this
commit and before its own re-reads the batch and adds no letter twice. The app id is
not the table writer's: the two tables are committed one after the other, each exactly
once by itself.

A batch with no dead letters commits nothing here (an empty commit per batch would only
grow the log): a replay of it has none to add either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pyarrow as pa

from headrace.schema_registry import SchemaRegistryError
from headrace.schema_registry._wire import split
from headrace.spark_bridge._delta import DeltaSink
from headrace.spark_bridge._offsets import TopicPartition

from ._rows import key_value_rows, record_schema
from ._schema_rows import DeadLetter

DEFAULT_APP_ID = "headrace-dead-letters"
_OWN = record_schema(with_value=True)
_FROM_RECORD = ("partition", "offset", "timestamp", "key", "value", "headers")
SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string()),
        *(_OWN.field(name) for name in _FROM_RECORD),
        pa.field("reason", pa.string()),
        pa.field("schema_id", pa.int32()),
    ]
)


def dead_letters_path(location: str, topic: str) -> str:
    return f"{location.rstrip('/')}/_dead_letters/{topic}"


def _schema_id(value: bytes | None) -> int | None:
    if value is None:
        return None
    try:
        schema_id, _payload = split(value)
    except SchemaRegistryError:
        return None
    # The framing's id is unsigned; a value of garbage can claim one past int32.
    return schema_id if schema_id < 2**31 else None


class DeadLetterTable:
    """The dead letters of ``topic``'s table under ``location``."""

    def __init__(
        self,
        location: str,
        topic: str,
        *,
        app_id: str = DEFAULT_APP_ID,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        self.topic = topic
        self.path = dead_letters_path(location, topic)
        self._sink = DeltaSink(self.path, app_id=app_id, storage_options=storage_options)

    def letters(self, dead: list[DeadLetter]) -> pa.Table:
        """``dead`` as rows of ``SCHEMA``."""
        records = [d.record for d in dead]
        own = key_value_rows(records)
        return pa.Table.from_arrays(
            [
                pa.repeat(pa.scalar(self.topic, pa.string()), len(dead)),
                *(own[name] for name in _FROM_RECORD),
                pa.array([d.reason for d in dead], pa.string()),
                pa.array([_schema_id(r.value) for r in records], pa.int32()),
            ],
            schema=SCHEMA,
        )

    def append(self, dead: list[DeadLetter], ends: Mapping[int, int] | None = None) -> int:
        """Append ``dead`` once; returns the letters written (0 for a replay).

        ``ends``: the next offset per partition of the batch the letters came from. Given,
        it is what the commit records (a later replay of the whole batch then adds
        nothing, even a letter the first pass did not make); otherwise each partition's
        last letter's offset + 1.
        """
        if not dead:
            return 0
        covered = {TopicPartition(self.topic, p): end for p, end in (ends or {}).items()}
        return self._sink.append_records(self.letters(dead), covered)

    def committed_offsets(self, partitions: Iterable[int]) -> dict[int, int]:
        """The next offset per partition, for the partitions the table has a record of."""
        tps = [TopicPartition(self.topic, p) for p in partitions]
        return {tp.partition: end for tp, end in self._sink.committed_offsets(tps).items()}
