"""One commit's worth of fetched records, kept as confluent-kafka fetched them.

The writer holds the consumer's messages as they are and turns them into rows only when
it commits, column by column: each column is one pass in C (``map`` over an unbound
accessor of ``Message``), with no Python frame and no object per record. That is most of
what a table writer costs in the broker's process (a ``TopicRecord`` and a row built per
record took three quarters of its time). The modes that need each record on its own
(a value decoded with the registry) get ``TopicRecord`` objects.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate
from operator import add, itemgetter, length_hint
from typing import Any

import pyarrow as pa

from ._records import TopicRecord
from ._rows import record_schema

_SECOND = itemgetter(1)


class Fetched:
    """Records fetched since the last commit, and their bytes of keys and values."""

    __slots__ = ("messages", "size")

    def __init__(self) -> None:
        self.messages: list[Any] = []  # confluent_kafka.Message, none with an error
        self.size = 0

    def __len__(self) -> int:
        return len(self.messages)

    def take(self, messages: list[Any], limit: int) -> int:
        """Add ``messages`` in order until the size reaches ``limit`` (the message that
        reaches it is added); returns how many were added.

        The bytes are counted over the whole list in C (``length_hint`` gives 0 for a
        null key), with no Python frame per message. Most lists fit whole; one that
        reaches the limit is counted again as a running total, bisected for the message
        that reaches it, so the bound holds to the message.
        """
        from confluent_kafka import Message

        values = sum(map(len, messages))  # len(): the value's bytes
        after = self.size + values + sum(map(length_hint, map(Message.key, messages)))
        if after < limit:
            self.messages += messages
            self.size = after
            return len(messages)
        sizes = map(add, map(len, messages), map(length_hint, map(Message.key, messages)))
        totals = list(accumulate(sizes, initial=self.size))  # totals[i]: before message i
        taken = bisect_left(totals, limit, lo=1)  # totals[-1] == after >= limit
        self.messages += messages[:taken]
        self.size = totals[taken]
        return taken

    def ends(self) -> dict[int, int]:
        """Next offset per partition (offsets rise within one: the last one is the top)."""
        from confluent_kafka import Message

        m = self.messages
        # set on every fetched message (None only on events, which never get here)
        partitions: list[Any] = list(map(Message.partition, m))
        offsets: list[Any] = list(map(Message.offset, m))
        return {p: o + 1 for p, o in zip(partitions, offsets, strict=True)}

    def newest_ms(self) -> int:
        from confluent_kafka import Message

        newest: int = max(map(_SECOND, map(Message.timestamp, self.messages)))
        return newest

    def records(self) -> list[TopicRecord]:
        from confluent_kafka import Message

        m = self.messages
        return list(
            map(
                TopicRecord,
                map(Message.partition, m),
                map(Message.offset, m),
                map(_SECOND, map(Message.timestamp, m)),
                map(Message.key, m),
                map(Message.value, m),
                map(_headers, map(Message.headers, m)),
            )
        )

    def key_value_rows(self) -> Any:
        """The rows of a ``key_value`` table (``_rows.record_schema(with_value=True)``)."""
        from confluent_kafka import Message

        m = self.messages
        schema = record_schema(with_value=True)
        return pa.Table.from_arrays(
            [
                pa.array(list(map(Message.key, m)), pa.binary()),
                pa.array(list(map(Message.partition, m)), pa.int32()),
                pa.array(list(map(Message.offset, m)), pa.int64()),
                pa.array(list(map(_SECOND, map(Message.timestamp, m))), pa.int64()).cast(
                    schema.field("timestamp").type
                ),
                # a (name, value) tuple converts to the header struct as it is
                pa.array([h or [] for h in map(Message.headers, m)], schema.field("headers").type),
                pa.array(list(map(Message.value, m)), pa.binary()),
            ],
            schema=schema,
        )


def _headers(headers: Any) -> list[tuple[str, bytes]]:
    # a null header value is kept as empty bytes (TopicRecord's headers are bytes)
    return [(name, value or b"") for name, value in headers] if headers else []
