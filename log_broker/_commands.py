"""The broker-side subcommands: broker, topics, produce, consume, groups.

``broker`` runs the built-in broker in the foreground. The others are Kafka clients
(aiokafka, and for groups a small kio client), so they work against any
Kafka-protocol broker; ``groups`` lives with the group coordinator in ``groups``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import Any

from ._broker import Broker
from ._table import render_table
from .groups import register_commands as register_group_commands

DEFAULT_SOURCE = 5  # DescribeConfigs' ConfigSource.DEFAULT_CONFIG


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    broker = subparsers.add_parser("broker", help="run the built-in Kafka-protocol broker")
    broker.add_argument("--data-dir", required=True, help="directory for logs and metadata")
    broker.add_argument("--listen", default="127.0.0.1:9092", metavar="HOST:PORT")
    broker.add_argument("--fsync", choices=("always", "never"), default="always",
                        help="fsync before acknowledging acks=1/all produces (default always)")
    broker.add_argument("--num-partitions", type=int, default=1,
                        help="partitions of auto-created topics")
    broker.add_argument("--no-auto-create-topics", action="store_true")
    broker.add_argument("--group-initial-rebalance-delay-ms", type=int, default=3000)
    broker.add_argument("--log-cleaner-backoff-ms", type=int, default=15_000,
                        help="pause between log cleaner passes over compacted topics")
    broker.add_argument("--group-min-session-timeout-ms", type=int, default=6000)
    broker.add_argument("--transaction-max-timeout-ms", type=int, default=900_000,
                        help="longest transaction.timeout.ms a producer may ask for")
    limits = broker.add_argument_group("limits (Kafka's broker settings of the same names)")
    limits.add_argument("--fetch-max-bytes", type=int, default=55 * 1024 * 1024,
                        help="largest Fetch response, whatever the client asks for")
    limits.add_argument("--socket-request-max-bytes", type=int, default=100 * 1024 * 1024)
    limits.add_argument("--max-connections", type=int,
                        help="default: a quarter of the open-file limit")
    limits.add_argument("--max-connections-per-ip", type=int,
                        help="default: --max-connections")
    limits.add_argument("--connections-max-idle-ms", type=int, default=600_000)
    limits.add_argument("--socket-request-read-timeout-ms", type=int, default=30_000,
                        help="time for the rest of a request once its size has arrived")
    limits.add_argument("--max-broker-partitions", type=int,
                        help="partitions in all topics together; default from the open-file"
                             " limit")
    broker.set_defaults(handler=_run_broker)

    topics = subparsers.add_parser("topics", help="create, list, describe, delete topics")
    actions = topics.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser("create", parents=[broker_options], help="create a topic")
    create.add_argument("topic")
    create.add_argument("--partitions", type=int, default=1)
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    create.set_defaults(handler=_client(_topics_create))
    listing = actions.add_parser("list", parents=[broker_options], help="list topics")
    listing.set_defaults(handler=_client(_topics_list))
    describe = actions.add_parser("describe", parents=[broker_options],
                                  help="partitions, offsets and configs of a topic")
    describe.add_argument("topic")
    describe.set_defaults(handler=_client(_topics_describe))
    delete = actions.add_parser("delete", parents=[broker_options], help="delete a topic")
    delete.add_argument("topic")
    delete.set_defaults(handler=_client(_topics_delete))

    produce = subparsers.add_parser("produce", parents=[broker_options],
                                    help="send lines from stdin as records")
    produce.add_argument("topic")
    produce.add_argument("--key-separator", metavar="SEP",
                         help="split each line into key and value at the first SEP")
    produce.add_argument("--partition", type=int)
    produce.add_argument("--acks", choices=("0", "1", "all"), default="all")
    produce.set_defaults(handler=_client(_produce))

    consume = subparsers.add_parser("consume", parents=[broker_options],
                                    help="print records of a topic")
    consume.add_argument("topic")
    consume.add_argument("--group", help="consumer group (commits offsets)")
    consume.add_argument("--from-beginning", action="store_true")
    consume.add_argument("--max-messages", type=int)
    consume.add_argument("--timeout-ms", type=int,
                         help="stop after this long without a record")
    consume.add_argument("--print-key", action="store_true")
    consume.add_argument("--print-partition", action="store_true",
                         help="prefix each record with partition and offset")
    consume.add_argument("--key-separator", default="\t", metavar="SEP")
    consume.set_defaults(handler=_client(_consume))

    register_group_commands(subparsers, broker_options)


def _parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen expects HOST:PORT, got {listen!r}")
    return host or "127.0.0.1", int(port)


def _run_broker(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    host, port = _parse_listen(args.listen)
    broker = Broker(args.data_dir, host=host, port=port, fsync=args.fsync == "always",
                    num_partitions=args.num_partitions,
                    auto_create_topics_enable=not args.no_auto_create_topics,
                    group_initial_rebalance_delay_ms=args.group_initial_rebalance_delay_ms,
                    log_cleaner_backoff_ms=args.log_cleaner_backoff_ms,
                    group_min_session_timeout_ms=args.group_min_session_timeout_ms,
                    transaction_max_timeout_ms=args.transaction_max_timeout_ms,
                    fetch_max_bytes=args.fetch_max_bytes,
                    socket_request_max_bytes=args.socket_request_max_bytes,
                    max_connections=args.max_connections,
                    max_connections_per_ip=args.max_connections_per_ip,
                    connections_max_idle_ms=args.connections_max_idle_ms,
                    socket_request_read_timeout_ms=args.socket_request_read_timeout_ms,
                    max_broker_partitions=args.max_broker_partitions)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        async with broker:
            print(f"headrace broker listening on {broker.bootstrap_servers}",
                  file=sys.stderr, flush=True)
            await stop.wait()
            logging.getLogger("headrace.broker").info("shutting down")

    asyncio.run(run())
    return 0


def _client(command: Any) -> Any:
    """Run a client command; a broker that cannot be reached is one line, not a log dump."""

    def handler(args: argparse.Namespace) -> int:
        from aiokafka.errors import KafkaConnectionError

        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
        try:
            return int(asyncio.run(command(args)) or 0)
        except KafkaConnectionError:
            raise ConnectionError(
                f"cannot reach a broker at {args.bootstrap_servers} (is one running?)"
            ) from None

    return handler


def _parse_configs(items: list[str]) -> dict[str, str]:
    configs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--config expects KEY=VALUE, got {item!r}")
        configs[key] = value
    return configs


async def _admin(args: argparse.Namespace) -> Any:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=args.bootstrap_servers)
    await admin.start()
    return admin


async def _topics_create(args: argparse.Namespace) -> int:
    from aiokafka.admin import NewTopic

    admin = await _admin(args)
    try:
        topic = NewTopic(args.topic, args.partitions, 1,
                         topic_configs=_parse_configs(args.config))
        response = await admin.create_topics([topic])
        for name, code, message in _topic_errors(response):
            if code:
                raise RuntimeError(f"cannot create {name!r}: {message or f'error {code}'}")
        print(f"created topic {args.topic} with {args.partitions} partition(s)")
    finally:
        await admin.close()
    return 0


def _topic_errors(response: Any) -> list[tuple[str, int, str | None]]:
    errors = []
    for entry in response.topic_errors:
        name, code = entry[0], entry[1]
        message = entry[2] if len(entry) > 2 else None
        errors.append((name, code, message))
    return errors


async def _topics_list(args: argparse.Namespace) -> int:
    admin = await _admin(args)
    try:
        names = sorted(await admin.list_topics())
        described = await admin.describe_topics(names) if names else []
    finally:
        await admin.close()
    rows = [(t["topic"], len(t["partitions"])) for t in described]
    print(render_table(("TOPIC", "PARTITIONS"), sorted(rows)))
    return 0


async def _topics_describe(args: argparse.Namespace) -> int:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = await _admin(args)
    try:
        names = await admin.list_topics()
        if args.topic not in names:
            raise RuntimeError(f"topic {args.topic!r} does not exist")
        resource = ConfigResource(ConfigResourceType.TOPIC, args.topic)
        config_responses = await admin.describe_configs([resource])
        [described] = await admin.describe_topics([args.topic])
    finally:
        await admin.close()
    partitions = sorted(p["partition"] for p in described["partitions"])
    tps = [TopicPartition(args.topic, p) for p in partitions]
    consumer = AIOKafkaConsumer(bootstrap_servers=args.bootstrap_servers)
    await consumer.start()
    try:
        starts = await consumer.beginning_offsets(tps)
        ends = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
    print(f"Topic: {args.topic}  Partitions: {len(tps)}")
    print(render_table(("PARTITION", "START OFFSET", "END OFFSET", "RECORDS"),
                       [(tp.partition, starts[tp], ends[tp], ends[tp] - starts[tp])
                        for tp in tps]))
    print()
    rows = []
    for response in config_responses:
        for result in response.resources:
            for entry in result[4]:
                # v0 carries is_default (bool) where v1+ carry config_source (5: default)
                name, value, source = entry[0], entry[1], entry[3]
                is_default = source if isinstance(source, bool) else source == DEFAULT_SOURCE
                rows.append((name, value, "default" if is_default else "override"))
    print(render_table(("CONFIG", "VALUE", "SOURCE"), sorted(rows)))
    return 0


async def _topics_delete(args: argparse.Namespace) -> int:
    admin = await _admin(args)
    try:
        response = await admin.delete_topics([args.topic])
        for name, code in response.topic_error_codes:
            if code:
                raise RuntimeError(f"cannot delete {name!r}: error {code}")
    finally:
        await admin.close()
    print(f"deleted topic {args.topic}")
    return 0


async def _produce(args: argparse.Namespace) -> int:
    from aiokafka import AIOKafkaProducer

    acks: int | str = "all" if args.acks == "all" else int(args.acks)
    producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap_servers, acks=acks)
    await producer.start()
    count = 0
    try:
        pending = []
        for line in sys.stdin:
            line = line.rstrip("\n")
            key: bytes | None = None
            if args.key_separator is not None and args.key_separator in line:
                raw_key, _, line = line.partition(args.key_separator)
                key = raw_key.encode()
            pending.append(await producer.send(args.topic, line.encode(), key=key,
                                               partition=args.partition))
            count += 1
        for fut in pending:
            await fut
    finally:
        await producer.stop()
    print(f"produced {count} record(s) to {args.topic}", file=sys.stderr)
    return 0


async def _consume(args: argparse.Namespace) -> int:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        args.topic, bootstrap_servers=args.bootstrap_servers, group_id=args.group,
        auto_offset_reset="earliest" if args.from_beginning else "latest",
        enable_auto_commit=args.group is not None)
    await consumer.start()
    # SIGINT/SIGTERM end the loop so the consumer leaves its group cleanly; a
    # KeyboardInterrupt raised wherever the loop happens to be could skip that.
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    stop_wait = asyncio.ensure_future(stopping.wait())
    seen = 0
    timeout = args.timeout_ms / 1000 if args.timeout_ms else None
    try:
        while args.max_messages is None or seen < args.max_messages:
            fetch = asyncio.ensure_future(consumer.getone())
            done, _ = await asyncio.wait({fetch, stop_wait}, timeout=timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
            if fetch not in done:
                fetch.cancel()
                break
            record = fetch.result()
            parts = []
            if args.print_partition:
                parts.append(f"{record.partition}:{record.offset}")
            if args.print_key:
                parts.append("" if record.key is None else record.key.decode(errors="replace"))
            parts.append("" if record.value is None else record.value.decode(errors="replace"))
            print(args.key_separator.join(parts), flush=True)
            seen += 1
    finally:
        stop_wait.cancel()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await consumer.stop()
    return 0
