"""``headrace groups list|describe`` for share groups (KIP-932).

A client like the rest of ``headrace groups``: ShareGroupDescribe for members and their
assignments, DescribeShareGroupOffsets for each share partition's start offset and lag
(the records not finished with yet), as Kafka's ``kafka-share-groups.sh`` shows them.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
)
from kio.schema.errors import ErrorCode
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.types import GroupId

from .._common import client_security, dash, emit
from ._admin_client import AdminRequestError, GroupAdminClient

SHARE_PROTOCOL_TYPE = "share"


@dataclass(frozen=True, slots=True)
class ShareGroupView:
    group_id: str
    state: str
    epoch: int
    members: tuple[Any, ...]
    # (topic, partition, start offset, lag)
    offsets: tuple[tuple[str, int, int, int], ...]


class ShareAdminClient(GroupAdminClient):
    async def describe_share(self, group: str) -> ShareGroupView | None:
        """The share group, or None when no share group has that id."""
        described = await self._on_coordinator(
            group,
            ShareGroupDescribeRequest(
                group_ids=(GroupId(group),), include_authorized_operations=False
            ),
        )
        entry = described.groups[0]
        if entry.error_code == ErrorCode.group_id_not_found:
            return None
        if entry.error_code != ErrorCode.none:
            code = ErrorCode(entry.error_code)
            raise AdminRequestError(
                f"describing share group {group!r}", int(code), code.name, code.retriable
            )
        offsets = await self._on_coordinator(
            group,
            DescribeShareGroupOffsetsRequest(
                groups=(
                    DescribeShareGroupOffsetsRequestGroup(group_id=GroupId(group), topics=None),
                )
            ),
        )
        rows = tuple(
            (t.topic_name, p.partition_index, p.start_offset, p.lag)
            for g in offsets.groups
            for t in g.topics
            for p in t.partitions
        )
        return ShareGroupView(group, entry.group_state, entry.group_epoch, entry.members, rows)


async def share_group_summary(args: argparse.Namespace, group: str) -> tuple[str, int]:
    """(state, member count) of a share group, for ``headrace groups list``."""
    async with ShareAdminClient(args.bootstrap_servers, security=client_security(args)) as admin:
        view = await admin.describe_share(group)
    return ("Dead", 0) if view is None else (view.state, len(view.members))


async def describe_share_group(args: argparse.Namespace) -> bool:
    """Print ``args.group`` if it is a share group; False (nothing printed) otherwise."""
    async with ShareAdminClient(args.bootstrap_servers, security=client_security(args)) as admin:
        view = await admin.describe_share(args.group)
    if view is None:
        return False
    members = [
        {
            "member_id": m.member_id,
            "client_id": m.client_id,
            "host": m.client_host or None,
            "member_epoch": m.member_epoch,
            "assignment": [
                {"topic": t.topic_name, "partition": p}
                for t in m.assignment.topic_partitions
                for p in t.partitions
            ],
        }
        for m in view.members
    ]
    offsets = [
        {"topic": topic, "partition": partition, "start_offset": start, "lag": lag}
        for topic, partition, start, lag in view.offsets
    ]
    if args.output == "json":
        emit(
            args,
            (),
            [],
            {
                "group": view.group_id,
                "type": SHARE_PROTOCOL_TYPE,
                "state": view.state,
                "group_epoch": view.epoch,
                "members": members,
                "offsets": offsets,
            },
        )
        return True
    emit(
        args,
        ("TOPIC", "PARTITION", "START-OFFSET", "LAG"),
        [(o["topic"], o["partition"], o["start_offset"], dash(o["lag"])) for o in offsets],
        None,
        title=f"Share group: {view.group_id}  State: {view.state}  "
        f"Epoch: {view.epoch}  Members: {len(members)}",
    )
    print()
    emit(
        args,
        ("MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT"),
        [
            (
                m["member_id"],
                m["client_id"],
                dash(m["host"]),
                m["member_epoch"],
                ",".join(f"{a['topic']}-{a['partition']}" for a in m["assignment"]) or "-",
            )
            for m in members
        ],
        None,
    )
    return True
