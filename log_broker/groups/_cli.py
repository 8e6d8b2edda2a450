"""``headrace groups``: list, describe, reset offsets of, and delete consumer groups.

These are clients: group requests go through ``GroupAdminClient`` (any Kafka-protocol
broker), topic offsets through aiokafka. Offsets are reset only while the group is
empty, as Kafka's own tool insists, so no running member overwrites them.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import struct
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from headrace.base import PLAINTEXT, ClientSecurity, read_properties

from .._table import render_table
from ._admin_client import GroupAdminClient
from ._errors import AdminRequestError
from ._offsets import TopicPartition

Command = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    groups = subparsers.add_parser("groups", help="list, describe, reset and delete groups")
    actions = groups.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", parents=[broker_options], help="list groups")
    listing.set_defaults(handler=_run(_list))
    describe = actions.add_parser("describe", parents=[broker_options],
                                  help="state, members, committed offsets and lag")
    describe.add_argument("group")
    describe.set_defaults(handler=_run(_describe))
    reset = actions.add_parser("reset-offsets", parents=[broker_options],
                               help="move an empty group's committed offsets")
    reset.add_argument("group")
    reset.add_argument("--topic", required=True)
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-datetime", metavar="ISO",
                        help="first offset at or after this time (local time without a zone)")
    target.add_argument("--to-offset", type=int, metavar="N",
                        help="this offset in every partition (clamped to what exists)")
    reset.set_defaults(handler=_run(_reset))
    delete = actions.add_parser("delete", parents=[broker_options],
                                help="delete an empty group and its offsets")
    delete.add_argument("group")
    delete.set_defaults(handler=_run(_delete))


def _run(command: Command) -> Callable[[argparse.Namespace], int]:
    """Run a command; an unreachable broker is one line, not a log dump."""

    def handler(args: argparse.Namespace) -> int:
        from aiokafka.errors import KafkaConnectionError

        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
        try:
            return asyncio.run(command(args))
        except KafkaConnectionError:
            raise ConnectionError(
                f"cannot reach a broker at {args.bootstrap_servers} (is one running?)"
            ) from None

    return handler


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



def _security(args: argparse.Namespace) -> ClientSecurity:
    """Client security from ``--command-config`` (Kafka client properties), or none."""
    if not getattr(args, "command_config", None):
        return PLAINTEXT
    return ClientSecurity.from_properties(read_properties(args.command_config))


async def _topic_offsets(admin: GroupAdminClient, bootstrap: str, topics: set[str]
                         ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """(log start, log end) offsets of every partition of ``topics`` that exist."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as AioTP

    tps = [AioTP(tp.topic, tp.partition) for tp in await admin.partitions(topics)]
    if not tps:
        return {}, {}
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap,
                                **admin.security.aiokafka_options())
    await consumer.start()
    try:
        starts = await consumer.beginning_offsets(tps)
        ends = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
    return ({TopicPartition(tp.topic, tp.partition): o for tp, o in starts.items()},
            {TopicPartition(tp.topic, tp.partition): o for tp, o in ends.items()})


async def _list(args: argparse.Namespace) -> int:
    async with GroupAdminClient(args.bootstrap_servers, security=_security(args)) as admin:
        rows = []
        for group, protocol_type in await admin.list_groups():
            described = await admin.describe(group)
            rows.append((group, described.group_state, len(described.members),
                         protocol_type or "-"))
    print(render_table(("GROUP", "STATE", "MEMBERS", "PROTOCOL TYPE"), rows))
    return 0


async def _describe(args: argparse.Namespace) -> int:
    async with GroupAdminClient(args.bootstrap_servers, security=_security(args)) as admin:
        described = await admin.describe(args.group)
        if described.group_state == "Dead":
            raise RuntimeError(f"group {args.group!r} does not exist")
        committed = await admin.committed(args.group)
        owner: dict[TopicPartition, Any] = {}
        for member in described.members:
            for tp in decode_assignment(member.member_assignment):
                owner[tp] = member
        partitions = sorted(set(committed) | set(owner))
        _, ends = await _topic_offsets(admin, args.bootstrap_servers,
                                       {tp.topic for tp in partitions})
    protocol = "/".join(x for x in (described.protocol_type, described.protocol_data) if x)
    print(f"Group: {args.group}  State: {described.group_state}  "
          f"Protocol: {protocol or '-'}  Members: {len(described.members)}")
    rows = []
    for tp in partitions:
        current, end, member = committed.get(tp), ends.get(tp), owner.get(tp)
        lag = end - current if current is not None and end is not None else "-"
        rows.append((tp.topic, tp.partition, _dash(current), _dash(end), lag,
                     member.member_id if member else "-",
                     (member.client_host or "-") if member else "-",
                     member.client_id if member else "-"))
    print(render_table(("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                        "CONSUMER-ID", "HOST", "CLIENT-ID"), rows))
    if not described.members:
        print(f"\nGroup {args.group!r} has no active members.")
    return 0


def _dash(value: int | None) -> object:
    return "-" if value is None else value


async def _targets(admin: GroupAdminClient, args: argparse.Namespace
                   ) -> dict[TopicPartition, int]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as AioTP

    starts, ends = await _topic_offsets(admin, args.bootstrap_servers, {args.topic})
    if not ends:
        raise RuntimeError(f"topic {args.topic!r} does not exist")
    if args.to_earliest:
        return starts
    if args.to_latest:
        return ends
    if args.to_offset is not None:
        return {tp: min(max(args.to_offset, starts[tp]), ends[tp]) for tp in ends}
    try:
        when = datetime.fromisoformat(args.to_datetime)
    except ValueError:
        raise ValueError(f"--to-datetime expects an ISO 8601 time, got {args.to_datetime!r}"
                         ) from None
    timestamp = int(when.astimezone().timestamp() * 1000)
    consumer = AIOKafkaConsumer(bootstrap_servers=args.bootstrap_servers,
                                **admin.security.aiokafka_options())
    await consumer.start()
    try:
        found = await consumer.offsets_for_times(
            {AioTP(tp.topic, tp.partition): timestamp for tp in ends})
    finally:
        await consumer.stop()
    # Partitions with nothing that late go to their end, as Kafka's tool does.
    return {tp: (found[AioTP(tp.topic, tp.partition)].offset
                 if found.get(AioTP(tp.topic, tp.partition)) else ends[tp]) for tp in ends}


async def _reset(args: argparse.Namespace) -> int:
    async with GroupAdminClient(args.bootstrap_servers, security=_security(args)) as admin:
        described = await admin.describe(args.group)
        if described.group_state not in ("Empty", "Dead"):
            raise RuntimeError(
                f"group {args.group!r} is {described.group_state} with "
                f"{len(described.members)} member(s); offsets can be reset only while it is "
                "empty (stop its consumers first)")
        targets = await _targets(admin, args)
        await admin.commit(args.group, targets)
    print(render_table(("TOPIC", "PARTITION", "NEW-OFFSET"),
                       [(tp.topic, tp.partition, offset)
                        for tp, offset in sorted(targets.items())]))
    return 0


async def _delete(args: argparse.Namespace) -> int:
    async with GroupAdminClient(args.bootstrap_servers, security=_security(args)) as admin:
        try:
            await admin.delete(args.group)
        except AdminRequestError as exc:
            if exc.error_code == ErrorCode.non_empty_group:
                raise RuntimeError(f"group {args.group!r} has active members; it can be "
                                   "deleted only when empty") from None
            if exc.error_code == ErrorCode.group_id_not_found:
                raise RuntimeError(f"group {args.group!r} does not exist") from None
            raise
    print(f"deleted group {args.group}")
    return 0
