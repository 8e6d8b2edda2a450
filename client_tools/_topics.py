"""``headrace topics create|list|describe|alter|delete``, as kafka-topics.sh."""

from __future__ import annotations

import argparse
from typing import Any

from kio.schema.errors import ErrorCode

from ._common import (
    KafkaRequestError,
    UsageError,
    add_output_option,
    add_topic_argument,
    check,
    dash,
    emit,
    key_value,
    log_offsets,
    required_topic,
    run_client,
)
from ._configs import alter_configs, config_keys, describe_configs, open_admin, parse_config_list
from ._log_dirs import partition_sizes

BROKER_DEFAULT = -1  # CreateTopics: "use the broker's default" for partitions and replicas
TOPIC = 2


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    topics = subparsers.add_parser("topics", help="create, list, describe, alter, delete topics")
    actions = topics.add_subparsers(dest="action", metavar="ACTION", required=True)

    create = actions.add_parser("create", parents=[broker_options], help="create a topic")
    add_topic_argument(create)
    create.add_argument(
        "--partitions",
        type=int,
        default=BROKER_DEFAULT,
        help="number of partitions (default: the broker's num.partitions)",
    )
    create.add_argument(
        "--replication-factor",
        type=int,
        default=BROKER_DEFAULT,
        help="copies of each partition (default: the broker's default.replication.factor)",
    )
    create.add_argument(
        "--config",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="a topic config override (repeatable)",
    )
    create.add_argument(
        "--if-not-exists", action="store_true", help="succeed if the topic already exists"
    )
    create.set_defaults(handler=run_client(_create))

    listing = actions.add_parser("list", parents=[broker_options], help="list topics")
    listing.add_argument(
        "--exclude-internal",
        action="store_true",
        help="leave out internal topics (__consumer_offsets, __transaction_state, ...)",
    )
    add_output_option(listing)
    listing.set_defaults(handler=run_client(_list))

    describe = actions.add_parser(
        "describe", parents=[broker_options], help="partitions, offsets and configs of a topic"
    )
    add_topic_argument(describe)
    add_output_option(describe)
    describe.set_defaults(handler=run_client(_describe))

    alter = actions.add_parser(
        "alter", parents=[broker_options], help="add partitions, set or remove config overrides"
    )
    add_topic_argument(alter)
    alter.add_argument(
        "--partitions", type=int, metavar="N", help="grow the topic to N partitions (never shrinks)"
    )
    alter.add_argument(
        "--config",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="set a config override (repeatable)",
    )
    alter.add_argument(
        "--add-config",
        action="append",
        default=[],
        metavar="K=V[,K=V...]",
        help="set config overrides, as kafka-configs (a list value in brackets: k=[a,b])",
    )
    alter.add_argument(
        "--delete-config",
        action="append",
        default=[],
        metavar="KEY[,KEY...]",
        help="remove config overrides (repeatable)",
    )
    alter.set_defaults(handler=run_client(_alter))

    delete = actions.add_parser("delete", parents=[broker_options], help="delete a topic")
    add_topic_argument(delete)
    delete.add_argument(
        "--if-exists", action="store_true", help="succeed if the topic does not exist"
    )
    delete.set_defaults(handler=run_client(_delete))


async def _create(args: argparse.Namespace) -> int:
    from aiokafka.admin import NewTopic

    required_topic(args)
    if args.partitions == 0 or args.partitions < BROKER_DEFAULT:
        raise UsageError(f"--partitions must be at least 1, got {args.partitions}")
    admin = await open_admin(args)
    try:
        topic = NewTopic(args.topic, 1, 1, topic_configs=dict(args.config))
        # NewTopic refuses -1 ("the broker's default", CreateTopics v4) without a replica
        # assignment; its fields are plain attributes, set after the check.
        topic.num_partitions, topic.replication_factor = (args.partitions, args.replication_factor)
        response = await admin.create_topics([topic])
    finally:
        await admin.close()
    for entry in response.topic_errors:
        name, code = entry[0], entry[1]
        message = entry[2] if len(entry) > 2 else None
        if code == ErrorCode.topic_already_exists and args.if_not_exists:
            print(f"topic {name} already exists")
            return 0
        if args.replication_factor == BROKER_DEFAULT and code in (
            ErrorCode.invalid_replication_factor,
            ErrorCode.invalid_request,
        ):
            message = (f"{message}; " if message else "") + (
                "this cluster did not take its default replication factor: "
                "give --replication-factor"
            )
        check(f"cannot create topic {name!r}", code, message)
    given = f" with {args.partitions} partition(s)" if args.partitions > 0 else ""
    print(f"created topic {args.topic}{given}")
    return 0


async def _list(args: argparse.Namespace) -> int:
    admin = await open_admin(args)
    try:
        names = sorted(await admin.list_topics())
        described = await admin.describe_topics(names) if names else []
    finally:
        await admin.close()
    rows = sorted(
        (t["topic"], len(t["partitions"]))
        for t in described
        if not (args.exclude_internal and t.get("is_internal"))
    )
    emit(
        args,
        ("TOPIC", "PARTITIONS"),
        rows,
        [{"topic": name, "partitions": count} for name, count in rows],
    )
    return 0


async def topic_partitions(admin: Any, topic: str) -> list[dict[str, Any]]:
    """Metadata of each partition of ``topic``; an error if it does not exist.

    The topic is looked for in the list of all topics first: a Metadata request naming
    it would create it on a cluster that auto-creates topics."""
    if topic not in await admin.list_topics():
        raise KafkaRequestError(
            f"topic {topic!r} does not exist", ErrorCode.unknown_topic_or_partition
        )
    [described] = await admin.describe_topics([topic])
    check(f"cannot describe topic {topic!r}", described["error_code"])
    return sorted(described["partitions"], key=lambda p: p["partition"])


async def _describe(args: argparse.Namespace) -> int:
    from aiokafka import TopicPartition

    required_topic(args)
    admin = await open_admin(args)
    try:
        partitions = await topic_partitions(admin, args.topic)
        configs = await describe_configs(admin, TOPIC, args.topic)
    finally:
        await admin.close()
    tps = [TopicPartition(args.topic, p["partition"]) for p in partitions]
    starts, ends = await log_offsets(args, tps)
    sizes = await partition_sizes(args, args.topic, [tp.partition for tp in tps]) or {}
    rows = [
        {
            "partition": tp.partition,
            "start_offset": starts[tp],
            "end_offset": ends[tp],
            "records": ends[tp] - starts[tp],
            "size_bytes": sizes.get(tp.partition),
            "leader": p["leader"],
            "replicas": p["replicas"],
            "isr": p["isr"],
        }
        for tp, p in zip(tps, partitions, strict=True)
    ]
    config_rows = [{"name": c.name, "value": c.value, "source": c.source} for c in configs]
    if args.output == "json":
        emit(args, (), [], {"topic": args.topic, "partitions": rows, "configs": config_rows})
        return 0
    emit(
        args,
        (
            "PARTITION",
            "START OFFSET",
            "END OFFSET",
            "RECORDS",
            "BYTES",
            "LEADER",
            "REPLICAS",
            "ISR",
        ),
        [
            (
                r["partition"],
                r["start_offset"],
                r["end_offset"],
                r["records"],
                dash(r["size_bytes"]),
                r["leader"],
                ",".join(map(str, r["replicas"])),
                ",".join(map(str, r["isr"])),
            )
            for r in rows
        ],
        None,
        title=f"Topic: {args.topic}  Partitions: {len(rows)}",
    )
    print()
    emit(
        args,
        ("CONFIG", "VALUE", "SOURCE"),
        [(c["name"], c["value"], c["source"]) for c in config_rows],
        None,
    )
    return 0


async def _alter(args: argparse.Namespace) -> int:
    from aiokafka.admin import NewPartitions

    required_topic(args)
    add = {**dict(args.config), **parse_config_list(args.add_config)}
    delete = config_keys(args.delete_config)
    if args.partitions is None and not add and not delete:
        raise UsageError("give --partitions, --add-config (or --config) or --delete-config")
    admin = await open_admin(args)
    try:
        current = await topic_partitions(admin, args.topic)
        if args.partitions is not None:
            if args.partitions <= len(current):
                raise UsageError(
                    f"topic {args.topic!r} has {len(current)} partition(s); "
                    "--partitions can only increase it"
                )
            await admin.create_partitions({args.topic: NewPartitions(args.partitions)})
            print(f"topic {args.topic} now has {args.partitions} partition(s)")
        if add or delete:
            await alter_configs(admin, TOPIC, args.topic, add, delete)
            print(f"altered configs of topic {args.topic}")
    finally:
        await admin.close()
    return 0


async def _delete(args: argparse.Namespace) -> int:
    required_topic(args)
    admin = await open_admin(args)
    try:
        response = await admin.delete_topics([args.topic])
    finally:
        await admin.close()
    for name, code, *_ in response.topic_error_codes:
        if code == ErrorCode.unknown_topic_or_partition and args.if_exists:
            print(f"topic {name} does not exist")
            return 0
        check(f"cannot delete topic {name!r}", code)
    print(f"deleted topic {args.topic}")
    return 0
