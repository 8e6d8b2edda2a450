"""``headrace produce TOPIC``: one record per line of stdin or a file.

The producer is idempotent by default (with ``--acks all``, which idempotence needs), so
a retried send is never written twice; on a cluster that grants no producer id it falls
back to a plain producer and says so. With ``--transactional-id`` every line goes in one
transaction, committed after the last line and aborted on any error: all or nothing.

A line that does not encode in the chosen format (not JSON, or a value its Avro,
Protobuf or JSON schema does not take) stops the command with its line number, before
anything of that line is sent. Without a transaction, the lines before it have been
sent and acknowledged, and the error says how many: a rerun from the bad line (``tail -n
+N``) duplicates nothing. With ``--transactional-id`` nothing is committed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import nullcontext
from typing import IO, Any

from ._common import (
    UsageError,
    add_topic_argument,
    client_options,
    key_value,
    parse_time,
    required_topic,
    run_client,
)
from ._formats import Encode, FormatError, Target, encodable, encoder, formats_help

# Sends awaited at once: the producer batches them; the bound keeps the futures of a
# large file from piling up in memory.
IN_FLIGHT = 10_000


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    produce = subparsers.add_parser(
        "produce", parents=[broker_options], help="send lines of stdin or a file as records"
    )
    add_topic_argument(produce)
    produce.add_argument("--file", metavar="FILE", help="read lines from FILE (default stdin)")
    produce.add_argument(
        "--key-separator", metavar="SEP", help="split each line into key and value at the first SEP"
    )
    produce.add_argument(
        "--key-format",
        choices=encodable(keys=True),
        default="string",
        help=formats_help(encodable(keys=True)),
    )
    produce.add_argument("--value-format", choices=encodable(keys=False), default="string")
    produce.add_argument(
        "--null-marker",
        metavar="STR",
        help="a key or value equal to STR is sent as null (a tombstone)",
    )
    produce.add_argument(
        "--header",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="a header on every record (repeatable)",
    )
    produce.add_argument(
        "--timestamp",
        type=parse_time,
        metavar="TIME",
        help="record timestamp: epoch ms or ISO-8601 (default: now)",
    )
    produce.add_argument("--partition", type=int, help="write to this partition only")
    produce.add_argument("--acks", choices=("0", "1", "all"), default="all")
    produce.add_argument(
        "--no-idempotence",
        action="store_true",
        help="plain producer (idempotence is on with --acks all)",
    )
    produce.add_argument(
        "--transactional-id",
        metavar="ID",
        help="send every line in one transaction (all or nothing)",
    )
    produce.set_defaults(handler=run_client(_produce))


async def _lines(stream: IO[str]) -> AsyncIterator[str]:
    """Lines without their ending, read in a thread: waiting for a person typing at a
    terminal must not stop the producer from sending what it already has."""
    while line := await asyncio.to_thread(stream.readline):
        yield line[:-2] if line.endswith("\r\n") else line.removesuffix("\n")


def _producer(args: argparse.Namespace, idempotent: bool) -> Any:
    from aiokafka import AIOKafkaProducer

    if args.transactional_id is not None:
        if args.acks != "all" or args.no_idempotence:
            raise UsageError("--transactional-id needs --acks all and idempotence")
        return AIOKafkaProducer(
            **client_options(args), acks="all", transactional_id=args.transactional_id
        )
    acks: int | str = "all" if args.acks == "all" else int(args.acks)
    return AIOKafkaProducer(**client_options(args), acks=acks, enable_idempotence=idempotent)


async def _started_producer(args: argparse.Namespace) -> Any:
    """A started producer: idempotent by default, and plain when the cluster grants no
    producer id for the default (as Kafka's Java producer does when idempotence was not
    asked for explicitly), saying so on stderr. A transactional one is never weakened."""
    from aiokafka.errors import KafkaConnectionError, KafkaError

    idempotent = args.acks == "all" and not args.no_idempotence
    producer = _producer(args, idempotent)
    try:
        await producer.start()
        return producer
    except KafkaError as exc:
        await producer.stop()
        if isinstance(exc, KafkaConnectionError) or not idempotent or args.transactional_id:
            raise
        print(
            f"headrace produce: warning: the cluster gave no producer id ({exc}); "
            "sending without idempotence",
            file=sys.stderr,
        )
    producer = _producer(args, False)
    try:
        await producer.start()
    except BaseException:
        await producer.stop()
        raise
    return producer


async def _produce(args: argparse.Namespace) -> int:
    required_topic(args)
    encode_key = encoder(args.key_format, Target(args.topic, True, args))
    encode_value = encoder(args.value_format, Target(args.topic, False, args))
    headers = [(k, v.encode()) for k, v in args.header] or None
    stream = (
        await asyncio.to_thread(open, args.file, encoding="utf-8")
        if args.file
        else nullcontext(sys.stdin)
    )
    with stream as lines:
        count = await _send_lines(args, lines, encode_key, encode_value, headers)
    print(f"produced {count} record(s) to {args.topic}", file=sys.stderr)
    return 0


def _parser(
    args: argparse.Namespace, encode_key: Encode, encode_value: Encode
) -> Callable[[str], tuple[bytes | None, bytes | None]]:
    """A function from one line to the record's (key, value) bytes."""
    separator, null = args.key_separator, args.null_marker

    def parse(line: str) -> tuple[bytes | None, bytes | None]:
        key_text, value_text = None, line
        if separator is not None and separator in line:
            key_text, _, value_text = line.partition(separator)
        key = None if key_text is None or key_text == null else encode_key(key_text)
        return key, None if value_text == null else encode_value(value_text)

    return parse


async def _send_lines(
    args: argparse.Namespace,
    lines: IO[str],
    encode_key: Encode,
    encode_value: Encode,
    headers: list[tuple[str, bytes]] | None,
) -> int:
    parse = _parser(args, encode_key, encode_value)
    producer = await _started_producer(args)
    count = 0
    try:
        transaction = producer.transaction() if args.transactional_id is not None else nullcontext()
        async with transaction:
            pending: list[asyncio.Future[Any]] = []
            async for line in _lines(lines):
                try:
                    key, value = parse(line)
                except FormatError as exc:
                    if args.transactional_id is not None:
                        sent = "nothing was committed"
                    else:
                        # Acknowledged before the count is told: it must be exact, so a
                        # rerun can start after it.
                        await asyncio.gather(*pending)
                        sent = f"{count} record(s) before it were produced"
                    raise FormatError(f"line {count + 1}: {exc}; {sent}") from None
                pending.append(
                    await producer.send(
                        args.topic,
                        value,
                        key=key,
                        partition=args.partition,
                        timestamp_ms=args.timestamp,
                        headers=headers,
                    )
                )
                count += 1
                if len(pending) >= IN_FLIGHT:
                    await asyncio.gather(*pending)
                    pending.clear()
            await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return count
