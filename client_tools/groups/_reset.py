"""``headrace groups reset-offsets``, with kafka-consumer-groups.sh's flags.

1. Scope: ``--topic T`` (every partition) or ``--topic T:0,2`` (those), repeatable, or
   ``--all-topics`` (every topic the group has committed offsets for). A topic or
   partition that does not exist is refused, never created.
2. The group must be empty (no member would overwrite the new offsets).
3. Plan: each partition's current committed offset and the new one, from
   ``--to-earliest``, ``--to-latest``, ``--to-offset N``, ``--shift-by N``,
   ``--to-datetime ISO`` or ``--by-duration PnDTnHnMnS``; every new offset is clamped to
   what the partition holds.
4. Without ``--execute`` the plan is printed and nothing changes (a dry run, as in
   Kafka's tool); with it, the new offsets are committed.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import timedelta

from headrace.base import TopicPartition

from .._common import UsageError, client_options, client_security, emit, log_offsets, parse_time
from ._admin_client import GroupAdminClient

_DURATION = re.compile(
    r"P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?"
)


def parse_duration(text: str) -> timedelta:
    """An ISO-8601 duration (``PT1H``, ``P1DT30M``, ``P2W``) without years or months."""
    match = _DURATION.fullmatch(text.strip().upper())
    if match is None or text.strip().upper() in ("P", "PT") or text.strip().endswith("T"):
        raise argparse.ArgumentTypeError(
            f"expected an ISO-8601 duration such as PT1H or P1DT30M, got {text!r}"
        )
    parts = {k: float(v) for k, v in match.groupdict().items() if v}
    return timedelta(**parts)


def _scope(text: str) -> tuple[str, tuple[int, ...]]:
    topic, sep, partitions = text.partition(":")
    if not topic:
        raise argparse.ArgumentTypeError(f"expected TOPIC or TOPIC:P[,P...], got {text!r}")
    try:
        chosen = tuple(int(p) for p in partitions.split(",") if p.strip()) if sep else ()
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected TOPIC:P[,P...], got {text!r}") from None
    if sep and not chosen:
        raise argparse.ArgumentTypeError(f"no partitions after ':' in {text!r}")
    return topic, chosen


def add_reset_options(parser: argparse.ArgumentParser) -> None:
    scope = parser.add_mutually_exclusive_group(required=True)
    scope.add_argument(
        "--topic",
        action="append",
        type=_scope,
        metavar="TOPIC[:P,...]",
        help="a topic, or some of its partitions (repeatable)",
    )
    scope.add_argument(
        "--all-topics", action="store_true", help="every topic the group has committed offsets for"
    )
    spec = parser.add_mutually_exclusive_group(required=True)
    spec.add_argument("--to-earliest", action="store_true")
    spec.add_argument("--to-latest", action="store_true")
    spec.add_argument("--to-offset", type=int, metavar="N")
    spec.add_argument(
        "--shift-by",
        type=int,
        metavar="N",
        help="move by N (negative: back) from the committed offset",
    )
    spec.add_argument(
        "--to-datetime",
        type=parse_time,
        metavar="ISO",
        help="first offset at or after this time (local time without a zone)",
    )
    spec.add_argument(
        "--by-duration",
        type=parse_duration,
        metavar="DURATION",
        help="first offset at or after this long ago (PT1H, P1D)",
    )
    run = parser.add_mutually_exclusive_group()
    run.add_argument("--dry-run", action="store_true", help="print the plan only (default)")
    run.add_argument("--execute", action="store_true", help="commit the new offsets")


async def topic_offsets(
    admin: GroupAdminClient, args: argparse.Namespace, topics: set[str]
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """(log start, log end) offsets of every partition of ``topics`` that exist."""
    from aiokafka import TopicPartition as AioTP

    tps = [AioTP(tp.topic, tp.partition) for tp in await admin.partitions(topics)]
    if not tps:
        return {}, {}
    starts, ends = await log_offsets(args, tps)
    return (
        {TopicPartition(tp.topic, tp.partition): o for tp, o in starts.items()},
        {TopicPartition(tp.topic, tp.partition): o for tp, o in ends.items()},
    )


async def _partitions(
    admin: GroupAdminClient, args: argparse.Namespace, committed: dict[TopicPartition, int]
) -> list[TopicPartition]:
    if args.all_topics:
        if not committed:
            raise UsageError(f"group {args.group!r} has no committed offsets; name --topic")
        return sorted(committed)
    wanted = {topic for topic, _ in args.topic}
    existing = await admin.partitions(wanted)
    by_topic: dict[str, set[int]] = {}
    for tp in existing:
        by_topic.setdefault(tp.topic, set()).add(tp.partition)
    chosen: set[TopicPartition] = set()
    for topic, partitions in args.topic:
        if topic not in by_topic:
            raise UsageError(f"topic {topic!r} does not exist")
        for p in partitions:
            if p not in by_topic[topic]:
                raise UsageError(f"topic {topic!r} has no partition {p}")
        chosen.update(TopicPartition(topic, p) for p in partitions or by_topic[topic])
    return sorted(chosen)


async def _times(
    args: argparse.Namespace, tps: list[TopicPartition], timestamp: int
) -> dict[TopicPartition, int | None]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as AioTP

    consumer = AIOKafkaConsumer(**client_options(args))
    await consumer.start()
    try:
        found = await consumer.offsets_for_times(
            {AioTP(tp.topic, tp.partition): timestamp for tp in tps}
        )
    finally:
        await consumer.stop()
    return {
        tp: (
            found[AioTP(tp.topic, tp.partition)].offset
            if found.get(AioTP(tp.topic, tp.partition))
            else None
        )
        for tp in tps
    }


async def _plan(
    admin: GroupAdminClient,
    args: argparse.Namespace,
    tps: list[TopicPartition],
    committed: dict[TopicPartition, int],
) -> dict[TopicPartition, int]:
    starts, ends = await topic_offsets(admin, args, {tp.topic for tp in tps})
    if args.to_earliest:
        wanted: dict[TopicPartition, int | None] = {tp: starts[tp] for tp in tps}
    elif args.to_latest:
        wanted = {tp: ends[tp] for tp in tps}
    elif args.to_offset is not None:
        wanted = dict.fromkeys(tps, args.to_offset)
    elif args.shift_by is not None:
        # A partition with nothing committed shifts from its start.
        wanted = {tp: committed.get(tp, starts[tp]) + args.shift_by for tp in tps}
    else:
        when = (
            args.to_datetime
            if args.to_datetime is not None
            else int((time.time() - args.by_duration.total_seconds()) * 1000)
        )
        wanted = await _times(args, tps, when)
    # Partitions with nothing that late go to their end, as Kafka's tool does.
    return {
        tp: min(max(ends[tp] if o is None else o, starts[tp]), ends[tp]) for tp, o in wanted.items()
    }


async def reset_offsets(args: argparse.Namespace) -> int:
    async with GroupAdminClient(args.bootstrap_servers, security=client_security(args)) as admin:
        described = await admin.describe(args.group)
        if described.group_state not in ("Empty", "Dead"):
            raise RuntimeError(
                f"group {args.group!r} is {described.group_state} with "
                f"{len(described.members)} member(s); offsets can be reset only while it is "
                "empty (stop its consumers first)"
            )
        committed = await admin.committed(args.group)
        tps = await _partitions(admin, args, committed)
        plan = await _plan(admin, args, tps, committed)
        if args.execute:
            await admin.commit(args.group, plan)
    rows = [
        (tp.topic, tp.partition, committed.get(tp, "-"), offset)
        for tp, offset in sorted(plan.items())
    ]
    emit(
        args,
        ("TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"),
        rows,
        {
            "group": args.group,
            "executed": bool(args.execute),
            "offsets": [
                {
                    "topic": t,
                    "partition": p,
                    "current_offset": None if c == "-" else c,
                    "new_offset": n,
                }
                for t, p, c, n in rows
            ],
        },
    )
    if not args.execute:
        print("dry run: nothing changed; add --execute to commit these offsets", file=sys.stderr)
    return 0
