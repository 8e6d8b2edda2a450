"""The offsets part of ``headrace groups describe``: each partition a group has committed
or a member holds, with its committed offset, log end offset, lag and holder, the same
for a classic group and a consumer-protocol (KIP-848) one."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

from headrace.base import TopicPartition

from .._common import dash, emit
from ._admin_client import GroupAdminClient
from ._reset import topic_offsets

_OFFSET_FIELDS = ("topic", "partition", "current_offset", "log_end_offset", "lag")
_HEADERS = {
    "topic": "TOPIC",
    "partition": "PARTITION",
    "current_offset": "CURRENT-OFFSET",
    "log_end_offset": "LOG-END-OFFSET",
    "lag": "LAG",
    "member_id": "CONSUMER-ID",
    "host": "HOST",
    "client_id": "CLIENT-ID",
}

Holder = Mapping[str, object]
"""What is shown of the member holding a partition, by field (``member_id``, ``host``,
``client_id``)."""


async def offsets_and_lag(
    admin: GroupAdminClient,
    args: argparse.Namespace,
    holders: Mapping[TopicPartition, Holder],
    holder_fields: Sequence[str],
) -> list[dict[str, object]]:
    """A row per partition ``args.group`` has committed or a member holds, in order:
    its offsets and lag, then ``holder_fields`` of its holder (``None`` when no member
    holds it)."""
    committed = await admin.committed(args.group)
    partitions = sorted(set(committed) | set(holders))
    _, ends = await topic_offsets(admin, args, {tp.topic for tp in partitions})
    rows: list[dict[str, object]] = []
    for tp in partitions:
        current, end, holder = committed.get(tp), ends.get(tp), holders.get(tp, {})
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "current_offset": current,
                "log_end_offset": end,
                "lag": end - current if current is not None and end is not None else None,
                **{field: holder.get(field) for field in holder_fields},
            }
        )
    return rows


def emit_offsets(
    args: argparse.Namespace,
    offsets: Sequence[Mapping[str, object]],
    holder_fields: Sequence[str],
    *,
    title: str | None = None,
) -> None:
    """Print ``offsets`` (from :func:`offsets_and_lag`) as a table, ``-`` for unknowns."""
    fields = (*_OFFSET_FIELDS, *holder_fields)
    emit(
        args,
        tuple(_HEADERS[field] for field in fields),
        [tuple(dash(row[field]) for field in fields) for row in offsets],
        None,
        title=title,
    )
