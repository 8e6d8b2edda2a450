"""What every client command shares: connection options, errors, output.

The client commands (topics, produce, consume, groups, configs, records) talk to any
Kafka-protocol cluster. Three things they must do alike live here:

- ``client_options(args)``: the keyword arguments every Kafka client the CLI opens is
  built with. Connection settings (servers, and whatever security a cluster needs) are
  added here and nowhere else.
- errors: a Kafka error code is shown by its name (``TOPIC_ALREADY_EXISTS``), never as a
  bare number; a ``UsageError`` exits with status 2 like argparse's own, anything else
  with 1 (``headrace.cli.main`` prints either as one line).
- output: ``-o table`` (the default, for people) or ``-o json`` (for scripts) on every
  listing and description.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from headrace.base import PLAINTEXT, ClientSecurity, read_properties
from headrace.base.table import render_table

Command = Callable[[argparse.Namespace], Coroutine[Any, Any, int | None]]


class UsageError(ValueError):
    """Options that do not make sense together; exits with status 2 as argparse does."""

    exit_status = 2


class KafkaRequestError(RuntimeError):
    """A broker answered a request with an error code."""

    def __init__(self, what: str, code: int, message: str | None = None) -> None:
        self.code = code
        detail = f" ({message})" if message else ""
        super().__init__(f"{what}: {error_name(code)}{detail}")


def error_name(code: int) -> str:
    """Kafka's name for an error code: ``error_name(36) == "TOPIC_ALREADY_EXISTS"``."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


def check(what: str, code: int, message: str | None = None) -> None:
    if code:
        raise KafkaRequestError(what, code, message)


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for every aiokafka client a command opens: the brokers, and the
    security options of ``--command-config`` (Kafka's client properties) when given."""
    return {"bootstrap_servers": args.bootstrap_servers, **client_security(args).aiokafka_options()}


def client_security(args: argparse.Namespace) -> ClientSecurity:
    """The security of ``--command-config`` (Kafka's client properties), or plaintext."""
    if not getattr(args, "command_config", None):
        return PLAINTEXT
    return ClientSecurity.from_properties(read_properties(args.command_config))


def run_client(command: Command) -> Callable[[argparse.Namespace], int]:
    """Run a client command's coroutine; translate the client library's errors into one
    line: an unreachable cluster says so, a Kafka error says its name."""

    def handler(args: argparse.Namespace) -> int:
        from aiokafka.errors import KafkaConnectionError, KafkaError

        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
        try:
            return int(asyncio.run(command(args)) or 0)
        except KafkaConnectionError:
            # aiokafka reports a refused login the same way as an unreachable broker.
            hint = (
                "is one running, and do --command-config's credentials hold?"
                if getattr(args, "command_config", None)
                else "is one running?"
            )
            raise ConnectionError(
                f"cannot reach a broker at {args.bootstrap_servers} ({hint})"
            ) from None
        except KafkaError as exc:
            errno = getattr(exc, "errno", None)
            detail = ", ".join(str(a) for a in exc.args if a)
            if isinstance(errno, int) and errno > 0:
                raise KafkaRequestError(detail or type(exc).__name__, errno) from None
            if type(exc).__name__ == "IncompatibleBrokerVersion":
                raise RuntimeError(f"the cluster does not offer this request ({detail})") from None
            # Not a broker's error code (-1: one the client library does not know).
            raise RuntimeError(f"{type(exc).__name__}{': ' if detail else ''}{detail}") from None

    return handler


async def log_offsets(
    args: argparse.Namespace, partitions: Sequence[Any]
) -> tuple[dict[Any, int], dict[Any, int]]:
    """(log start, log end) offset of each aiokafka ``TopicPartition`` given."""
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(**client_options(args))
    await consumer.start()
    try:
        return (
            await consumer.beginning_offsets(partitions),
            await consumer.end_offsets(partitions),
        )
    finally:
        await consumer.stop()


# ---------------------------------------------------------------------- parsing


def key_value(text: str) -> tuple[str, str]:
    """argparse type for ``KEY=VALUE``."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


class _OneTopic(argparse.Action):
    """Stores the topic, from ``TOPIC`` or ``--topic TOPIC``; refuses two different ones."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = getattr(namespace, self.dest, None)
        if given is not None and given != values:
            raise argparse.ArgumentError(self, f"two topics given: {given!r} and {values!r}")
        setattr(namespace, self.dest, values)


def add_topic_argument(parser: argparse.ArgumentParser) -> None:
    """The topic a command acts on, as ``TOPIC`` or, as Kafka's tools spell it,
    ``--topic TOPIC``; ``args.topic`` is None when neither is given (``required_topic``).

    The positional's default is SUPPRESS so that, left out, it does not overwrite the
    value ``--topic`` stored."""
    parser.add_argument(
        "topic", nargs="?", default=argparse.SUPPRESS, action=_OneTopic, metavar="TOPIC"
    )
    parser.add_argument(
        "--topic",
        dest="topic",
        action=_OneTopic,
        metavar="TOPIC",
        help="the topic, spelt as Kafka's tools spell it (instead of TOPIC)",
    )


def required_topic(args: argparse.Namespace) -> str:
    topic: str | None = args.topic
    if topic is None:
        raise UsageError("give the topic: TOPIC or --topic TOPIC")
    return topic


def add_output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=("table", "json"),
        default="table",
        help="table for people (default), json for scripts",
    )


def emit(
    args: argparse.Namespace,
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    data: Any,
    *,
    title: str | None = None,
) -> None:
    """Print ``rows`` under ``headers`` (``-o table``) or ``data`` as JSON (``-o json``)."""
    if getattr(args, "output", "table") == "json":
        json.dump(data, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return
    if title:
        print(title)
    print(render_table(headers, rows))


def dash(value: object) -> object:
    return "-" if value is None else value


def parse_time(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 time (local time when it names no zone), as ms."""
    stripped = text.strip()
    if stripped.lstrip("-").isdigit():
        return int(stripped)
    try:
        when = datetime.fromisoformat(stripped)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected epoch milliseconds or an ISO-8601 time, got {text!r}"
        ) from None
    # Integer arithmetic: a float of seconds times 1000 can land a millisecond short.
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    return (when.astimezone() - epoch) // timedelta(milliseconds=1)
