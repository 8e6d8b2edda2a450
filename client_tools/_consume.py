"""``headrace consume TOPIC``: print records, as kafka-console-consumer.sh and kcat do.

Where reading starts:

- ``--partition``, ``--offset``, ``--from-time``: the partitions given (default all) are
  assigned, not subscribed, and each starts at the offset (``beginning``, ``end``, N, or
  -N: N before the end), at the first record at or
  after the time, or at the beginning with ``--from-beginning``;
- otherwise the topic is subscribed: with ``--group``, from the group's committed
  offsets (``--from-beginning`` where it has none); without, from the end (or the
  beginning).

With ``--group``, only the offsets of records already printed are committed (every few
seconds and at the end), so a record that fails to decode is read again next time.
Reading is ``read_committed`` by default: records of open or aborted transactions are
not shown. ``--until-end`` stops at the ends the partitions had when reading began;
with records going to a file or a pipe, a terminal's stderr shows the dump's progress
(``_dump``).

Output: ``--format`` is a template like kcat's (%t topic, %p partition, %o offset, %k key,
%v value, %T timestamp, %h headers, %K/%S key/value sizes, %% a percent sign; \\n \\t \\\\
escapes); ``-o json`` prints one JSON object per record; otherwise the value, with
``--print-key`` and ``--print-partition`` in front.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from ._common import (
    UsageError,
    add_topic_argument,
    client_options,
    parse_time,
    required_topic,
    run_client,
)
from ._configs import open_admin
from ._dump import EndWatch, bound, dump_bar
from ._formats import FORMATS, FormatError, Target, decodable, formats_help
from ._topics import topic_partitions

COMMIT_INTERVAL_S = 5.0
END_POLL_S = 0.5  # --until-end: how often the positions are compared with the ends
BEGINNING, END = "beginning", "end"  # --offset's named positions
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}
_TEMPLATE = re.compile(r"%(.)|\\(.)")


def _partitions(text: str) -> list[int]:
    try:
        return [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected partition numbers, got {text!r}") from None


def _start_offset(text: str) -> int | str:
    """``--offset``: ``beginning`` or ``end`` (kcat; ``earliest``/``latest`` as Kafka's
    console consumer), or an offset, negative counting back from the end."""
    named = {"beginning": BEGINNING, "earliest": BEGINNING, "end": END, "latest": END}
    found = named.get(text.strip().lower())
    if found is not None:
        return found
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected beginning, end or an offset, got {text!r}"
        ) from None


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    consume = subparsers.add_parser(
        "consume", parents=[broker_options], help="print records of a topic"
    )
    add_topic_argument(consume)
    consume.add_argument("--group", help="consumer group (commits offsets of printed records)")
    consume.add_argument("--from-beginning", action="store_true")
    consume.add_argument(
        "--partition",
        action="append",
        type=_partitions,
        metavar="P[,P...]",
        help="read only these partitions (repeatable)",
    )
    start = consume.add_mutually_exclusive_group()
    start.add_argument(
        "--offset",
        type=_start_offset,
        metavar="beginning|end|N",
        help="start each partition at its beginning, its end, offset N, or -N: N before "
        "the end (kcat's -o values; earliest and latest too, as kafka-console-consumer)",
    )
    start.add_argument(
        "--from-time",
        type=parse_time,
        metavar="TIME",
        help="start at the first record at or after TIME (epoch ms or ISO-8601)",
    )
    consume.add_argument("--max-messages", type=int)
    consume.add_argument(
        "--until-end",
        action="store_true",
        help="stop at the end the partitions had when reading began",
    )
    consume.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (drawn on a terminal's stderr while records go to a file)",
    )
    consume.add_argument("--timeout-ms", type=int, help="stop after this long without a record")
    consume.add_argument(
        "--isolation-level",
        choices=("read_committed", "read_uncommitted"),
        default="read_committed",
    )
    consume.add_argument(
        "--key-format",
        choices=decodable(keys=True),
        default="string",
        help=formats_help(decodable(keys=True)),
    )
    consume.add_argument("--value-format", choices=decodable(keys=False), default="string")
    consume.add_argument(
        "--format",
        metavar="TEMPLATE",
        help="kcat-style template: %%t %%p %%o %%k %%v %%T %%h %%K %%S, "
        "\\n \\t (no newline is added)",
    )
    consume.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default="text",
        help="json: one JSON object per record",
    )
    consume.add_argument("--print-key", action="store_true")
    consume.add_argument(
        "--print-partition",
        action="store_true",
        help="prefix each record with partition and offset",
    )
    consume.add_argument("--key-separator", default="\t", metavar="SEP")
    consume.set_defaults(handler=run_client(_consume))


class _Printer:
    """Turns a record into the text the options ask for."""

    def __init__(self, args: argparse.Namespace) -> None:
        key_format, value_format = FORMATS[args.key_format], FORMATS[args.value_format]
        self.decode_key = key_format.decoder(Target(args.topic, True, args))
        self.decode_value = value_format.decoder(Target(args.topic, False, args))
        self.key_text, self.value_text = key_format.text, value_format.text
        self.args = args
        self.render: Callable[[Any, Any, Any], str]
        if args.output == "json":
            self.render = self._json
        elif args.format is not None:
            self.render = self._template
        else:
            self.render = self._plain

    def __call__(self, record: Any) -> str:
        try:
            key = None if record.key is None else self.decode_key(record.key)
        except FormatError as exc:
            raise FormatError(
                f"partition {record.partition} offset {record.offset}: key: {exc}"
            ) from None
        try:
            value = None if record.value is None else self.decode_value(record.value)
        except FormatError as exc:
            raise FormatError(
                f"partition {record.partition} offset {record.offset}: value: {exc}"
            ) from None
        return self.render(record, key, value)

    def _text(self, show: Callable[[Any], str], value: Any) -> str:
        return "" if value is None else show(value)

    def _plain(self, record: Any, key: Any, value: Any) -> str:
        parts = []
        if self.args.print_partition:
            parts.append(f"{record.partition}:{record.offset}")
        if self.args.print_key:
            parts.append(self._text(self.key_text, key))
        parts.append(self._text(self.value_text, value))
        separator: str = self.args.key_separator
        return separator.join(parts) + "\n"

    def _json(self, record: Any, key: Any, value: Any) -> str:
        return (
            json.dumps(
                {
                    "topic": record.topic,
                    "partition": record.partition,
                    "offset": record.offset,
                    "timestamp": record.timestamp,
                    "key": key,
                    "value": value,
                    "headers": [
                        [k, v.decode(errors="replace") if v is not None else None]
                        for k, v in record.headers
                    ],
                }
            )
            + "\n"
        )

    def _template(self, record: Any, key: Any, value: Any) -> str:
        fields: dict[str, Callable[[], str]] = {
            "t": lambda: str(record.topic),
            "p": lambda: str(record.partition),
            "o": lambda: str(record.offset),
            "T": lambda: str(record.timestamp),
            "k": lambda: self._text(self.key_text, key),
            "v": lambda: self._text(self.value_text, value),
            "K": lambda: str(-1 if record.key is None else len(record.key)),
            "S": lambda: str(-1 if record.value is None else len(record.value)),
            "h": lambda: ",".join(
                f"{k}={'' if v is None else v.decode(errors='replace')}" for k, v in record.headers
            ),
            "%": lambda: "%",
        }

        def replace(match: re.Match[str]) -> str:
            field, escape = match.group(1), match.group(2)
            if escape is not None:
                return _ESCAPES.get(escape, match.group(0))
            return fields[field]() if field in fields else match.group(0)

        template: str = self.args.format
        return _TEMPLATE.sub(replace, template)


def _chosen(args: argparse.Namespace, known: set[int]) -> list[int]:
    wanted = sorted({p for group in args.partition or [] for p in group}) or sorted(known)
    missing = [p for p in wanted if p not in known]
    if missing:
        raise UsageError(
            f"topic {args.topic!r} has no partition {missing[0]} (it has {len(known)})"
        )
    return wanted


async def _start_positions(consumer: Any, args: argparse.Namespace, known: set[int]) -> None:
    """Assign the chosen partitions and seek each to where reading starts."""
    from aiokafka import TopicPartition

    tps = [TopicPartition(args.topic, p) for p in _chosen(args, known)]
    consumer.assign(tps)
    if args.from_time is not None:
        found = await consumer.offsets_for_times({tp: args.from_time for tp in tps})
        ends = await consumer.end_offsets(tps)
        for tp in tps:
            consumer.seek(tp, found[tp].offset if found.get(tp) else ends[tp])
    elif args.offset == BEGINNING:
        await consumer.seek_to_beginning(*tps)
    elif args.offset == END:
        await consumer.seek_to_end(*tps)
    elif args.offset is not None:
        starts = await consumer.beginning_offsets(tps)
        ends = await consumer.end_offsets(tps)
        for tp in tps:
            target = args.offset if args.offset >= 0 else ends[tp] + args.offset
            consumer.seek(tp, min(max(target, starts[tp]), ends[tp]))
    elif args.from_beginning:
        await consumer.seek_to_beginning(*tps)
    elif args.group is None:
        await consumer.seek_to_end(*tps)


async def _topic_partitions(args: argparse.Namespace) -> set[int]:
    """The topic's partitions; an error if it does not exist (asking never creates it)."""
    admin = await open_admin(args)
    try:
        return {p["partition"] for p in await topic_partitions(admin, args.topic)}
    finally:
        await admin.close()


async def _consume(args: argparse.Namespace) -> int:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    required_topic(args)
    if args.format is not None and args.output == "json":
        raise UsageError("--format and -o json are two outputs: give one")
    printer = _Printer(args)
    known = await _topic_partitions(args)
    _chosen(args, known)  # refused before a consumer starts
    manual = args.partition is not None or args.offset is not None or args.from_time is not None
    consumer = AIOKafkaConsumer(
        **client_options(args),
        group_id=args.group,
        enable_auto_commit=False,
        auto_offset_reset="earliest" if args.from_beginning else "latest",
        isolation_level=args.isolation_level,
    )
    await consumer.start()
    # SIGINT/SIGTERM end the loop so the consumer leaves its group cleanly; a
    # KeyboardInterrupt raised wherever the loop happens to be could skip that.
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    stop_wait = asyncio.ensure_future(stopping.wait())
    printed: dict[Any, int] = {}  # the next offset to commit, per partition
    last_commit = time.monotonic()

    async def commit() -> None:
        if args.group is not None and printed:
            await consumer.commit({tp: OffsetAndMetadata(o, "") for tp, o in printed.items()})
            printed.clear()

    seen = 0
    timeout = args.timeout_ms / 1000 if args.timeout_ms else None
    bar = dump_bar(args)
    try:
        watch = await EndWatch.of(consumer, args.topic, known) if args.until_end else None
        if manual:
            await _start_positions(consumer, args, known)
        else:
            consumer.subscribe([args.topic])
        # With an end to reach, a wait is cut short to look at the positions again.
        poll = END_POLL_S if watch is not None else timeout
        idle_since = time.monotonic()
        while args.max_messages is None or seen < args.max_messages:
            if watch is not None:
                at_end = await watch.reached(consumer)
                bound(bar, watch, args.max_messages)
                if at_end:
                    break
            fetch = asyncio.ensure_future(consumer.getone())
            done, _ = await asyncio.wait(
                {fetch, stop_wait}, timeout=poll, return_when=asyncio.FIRST_COMPLETED
            )
            if fetch not in done:
                fetch.cancel()
                idle = timeout is not None and time.monotonic() - idle_since >= timeout
                if watch is None or stop_wait.done() or idle:
                    break
                continue
            idle_since = time.monotonic()
            record = fetch.result()
            sys.stdout.write(printer(record))
            sys.stdout.flush()
            printed[TopicPartition(record.topic, record.partition)] = record.offset + 1
            seen += 1
            if bar is not None:
                bar.advance(1)
            if time.monotonic() - last_commit > COMMIT_INTERVAL_S:
                await commit()
                last_commit = time.monotonic()
    except BaseException:
        with contextlib.suppress(Exception):
            await commit()  # what was printed before a record failed to decode
        raise
    else:
        await commit()
    finally:
        if bar is not None:
            bar.finish()
        stop_wait.cancel()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await consumer.stop()
    return 0
