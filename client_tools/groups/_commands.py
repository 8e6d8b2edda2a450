"""``headrace groups``: list, describe, reset offsets of, and delete consumer groups.

These are clients: group requests go through ``GroupAdminClient`` (any Kafka-protocol
broker), topic offsets through aiokafka. Offsets are reset only while the group is
empty, as Kafka's own tool insists, so no running member overwrites them; a reset is a
dry run that prints its plan unless ``--execute`` is given.
"""

from __future__ import annotations

import argparse
import struct
from typing import Any

from kio.schema.errors import ErrorCode

from headrace.base import TopicPartition

from .._common import add_output_option, client_security, emit, run_client
from ._admin_client import AdminRequestError, GroupAdminClient
from ._consumer import describe_consumer_group
from ._offsets import Holder, emit_offsets, offsets_and_lag
from ._reset import add_reset_options, reset_offsets
from ._share import SHARE_PROTOCOL_TYPE, describe_share_group, share_group_summary

# Kafka's group states (GroupState), which ``groups list --state`` filters by.
GROUP_STATES = (
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Empty",
    "Assigning",
    "Reconciling",
    "NotReady",
)

# What the offsets table shows of the member holding a partition.
_HOLDER_FIELDS = ("member_id", "host", "client_id")


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    groups = subparsers.add_parser("groups", help="list, describe, reset and delete groups")
    actions = groups.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", parents=[broker_options], help="list groups")
    listing.add_argument(
        "--state",
        type=_states,
        nargs="?",
        metavar="STATE[,STATE...]",
        help="only groups in these states, in any case (Stable, Empty, PreparingRebalance, "
        "CompletingRebalance, Dead, ...), as kafka-consumer-groups --list --state",
    )
    add_output_option(listing)
    listing.set_defaults(handler=run_client(_list))
    describe = actions.add_parser(
        "describe",
        parents=[broker_options],
        help="state, members, assignment, committed offsets and lag",
    )
    describe.add_argument("group")
    add_output_option(describe)
    describe.set_defaults(handler=run_client(_describe))
    reset = actions.add_parser(
        "reset-offsets",
        parents=[broker_options],
        help="move an empty group's committed offsets (a dry run without --execute)",
    )
    reset.add_argument("group")
    add_reset_options(reset)
    add_output_option(reset)
    reset.set_defaults(handler=run_client(reset_offsets))
    delete = actions.add_parser(
        "delete", parents=[broker_options], help="delete an empty group and its offsets"
    )
    delete.add_argument("group")
    delete.set_defaults(handler=run_client(_delete))


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """The partitions in a consumer-protocol assignment (any version; user data ignored)."""
    if len(data) < 6:
        return []
    pos = 2  # version
    (topics,) = struct.unpack_from(">i", data, pos)
    pos += 4
    found = []
    for _ in range(max(topics, 0)):
        (length,) = struct.unpack_from(">h", data, pos)
        topic = data[pos + 2 : pos + 2 + length].decode()
        pos += 2 + length
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for partition in struct.unpack_from(f">{max(count, 0)}i", data, pos):
            found.append(TopicPartition(topic, partition))
        pos += 4 * max(count, 0)
    return found


def _states(text: str) -> frozenset[str]:
    """``--state stable,EMPTY``: Kafka's state names, read in any case, as its tool does."""
    known = {state.lower(): state for state in GROUP_STATES}
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [part for part in wanted if part.lower() not in known]
    if unknown or not wanted:
        raise argparse.ArgumentTypeError(
            f"invalid state list {text!r}; valid states are {', '.join(GROUP_STATES)}"
        )
    return frozenset(part.lower() for part in wanted)


async def _list(args: argparse.Namespace) -> int:
    states: frozenset[str] | None = args.state  # None: every group (a bare --state too)
    async with GroupAdminClient(args.bootstrap_servers, security=client_security(args)) as admin:
        rows = []
        for group, protocol_type in await admin.list_groups():
            if protocol_type == SHARE_PROTOCOL_TYPE:
                state, members = await share_group_summary(args, group)
                row = (group, state, members, protocol_type)
            else:
                described = await admin.describe(group)
                row = (group, described.group_state, len(described.members), protocol_type or "-")
            if states is None or str(row[1]).lower() in states:
                rows.append(row)
    emit(
        args,
        ("GROUP", "STATE", "MEMBERS", "PROTOCOL TYPE"),
        rows,
        [
            {
                "group": g,
                "state": state,
                "members": members,
                "protocol_type": None if kind == "-" else kind,
            }
            for g, state, members, kind in rows
        ],
    )
    return 0


async def _describe(args: argparse.Namespace) -> int:
    async with GroupAdminClient(args.bootstrap_servers, security=client_security(args)) as admin:
        consumer = await admin.describe_consumer(args.group)
        if consumer is not None:
            return await describe_consumer_group(args, admin, consumer)
        described = await admin.describe(args.group)
        if described.group_state == "Dead":
            if await describe_share_group(args):
                return 0
            raise RuntimeError(f"group {args.group!r} does not exist")
        assignments: dict[str, list[TopicPartition]] = {}
        holders: dict[TopicPartition, Holder] = {}
        for member in described.members:
            assignments[member.member_id] = decode_assignment(member.member_assignment)
            for tp in assignments[member.member_id]:
                holders[tp] = {
                    "member_id": member.member_id,
                    "host": member.client_host or None,
                    "client_id": member.client_id,
                }
        offsets = await offsets_and_lag(admin, args, holders, _HOLDER_FIELDS)
    if args.output == "json":
        emit(
            args,
            (),
            [],
            {
                "group": args.group,
                "state": described.group_state,
                "protocol_type": described.protocol_type or None,
                "protocol": described.protocol_data or None,
                "members": [
                    {
                        "member_id": m.member_id,
                        "client_id": m.client_id,
                        "host": m.client_host or None,
                        "assignment": [
                            {"topic": tp.topic, "partition": tp.partition}
                            for tp in assignments[m.member_id]
                        ],
                    }
                    for m in described.members
                ],
                "offsets": offsets,
            },
        )
        return 0
    protocol = "/".join(x for x in (described.protocol_type, described.protocol_data) if x)
    emit_offsets(
        args,
        offsets,
        _HOLDER_FIELDS,
        title=f"Group: {args.group}  State: {described.group_state}  "
        f"Protocol: {protocol or '-'}  Members: {len(described.members)}",
    )
    if not described.members:
        print(f"\nGroup {args.group!r} has no active members.")
    return 0


async def _delete(args: argparse.Namespace) -> int:
    async with GroupAdminClient(args.bootstrap_servers, security=client_security(args)) as admin:
        try:
            await admin.delete(args.group)
        except AdminRequestError as exc:
            if exc.error_code == ErrorCode.non_empty_group:
                raise RuntimeError(
                    f"group {args.group!r} has active members; it can be deleted only when empty"
                ) from None
            if exc.error_code == ErrorCode.group_id_not_found:
                raise RuntimeError(f"group {args.group!r} does not exist") from None
            raise
    print(f"deleted group {args.group}")
    return 0
