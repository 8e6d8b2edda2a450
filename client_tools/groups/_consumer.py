"""``headrace groups describe`` for a consumer-protocol group (KIP-848): its epochs and
assignor, each member's epoch with its current and target assignment, then committed
offsets and lag as for a classic group."""

from __future__ import annotations

import argparse
from typing import Any

from headrace.base import TopicPartition

from .._common import dash, emit
from ._admin_client import GroupAdminClient
from ._offsets import emit_offsets, offsets_and_lag


def _partitions(assignment: Any) -> list[TopicPartition]:
    return sorted(
        TopicPartition(tp.topic_name, p)
        for tp in assignment.topic_partitions
        for p in tp.partitions
    )


def _as_json(tps: list[TopicPartition]) -> list[dict[str, object]]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in tps]


def _short(tps: list[TopicPartition]) -> str:
    by_topic: dict[str, list[str]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(str(tp.partition))
    return " ".join(f"{t}:{','.join(ps)}" for t, ps in by_topic.items()) or "-"


async def describe_consumer_group(
    args: argparse.Namespace, admin: GroupAdminClient, described: Any
) -> int:
    members = [
        {
            "member_id": m.member_id,
            "member_epoch": m.member_epoch,
            "instance_id": m.instance_id,
            "client_id": m.client_id,
            "host": m.client_host or None,
            "rack": m.rack_id,
            "assignment": _partitions(m.assignment),
            "target_assignment": _partitions(m.target_assignment),
        }
        for m in described.members
    ]
    holders = {tp: {"member_id": m["member_id"]} for m in members for tp in m["assignment"]}
    offsets = await offsets_and_lag(admin, args, holders, ("member_id",))
    if args.output == "json":
        emit(
            args,
            (),
            [],
            {
                "group": args.group,
                "type": "consumer",
                "state": described.group_state,
                "group_epoch": described.group_epoch,
                "assignment_epoch": described.assignment_epoch,
                "assignor": described.assignor_name,
                "members": [
                    {
                        **m,
                        "assignment": _as_json(m["assignment"]),
                        "target_assignment": _as_json(m["target_assignment"]),
                    }
                    for m in members
                ],
                "offsets": offsets,
            },
        )
        return 0
    emit(
        args,
        ("MEMBER-ID", "EPOCH", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNED", "TARGET"),
        [
            (
                m["member_id"],
                m["member_epoch"],
                dash(m["instance_id"]),
                m["client_id"],
                dash(m["host"]),
                _short(m["assignment"]),
                _short(m["target_assignment"]),
            )
            for m in members
        ],
        None,
        title=f"Group: {args.group}  Type: consumer  State: {described.group_state}  "
        f"Group epoch: {described.group_epoch}  Assignment epoch: "
        f"{described.assignment_epoch}  Assignor: {described.assignor_name}  "
        f"Members: {len(members)}",
    )
    print()
    emit_offsets(args, offsets, ("member_id",))
    return 0
