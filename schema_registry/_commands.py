"""``headrace schema-registry``: run the registry against any Kafka-protocol cluster."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._server import SchemaRegistryServer


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    command = subparsers.add_parser(
        "schema-registry",
        parents=[broker_options],
        help="run a Confluent-compatible schema registry stored in the _schemas topic",
    )
    command.add_argument("--listen", default="127.0.0.1:8081", metavar="HOST:PORT")
    add_registry_options(command)
    command.set_defaults(handler=_run)


def add_registry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--schema-registry-users",
        metavar="FILE",
        help="turn on basic auth: a file of NAME:PASSWORD lines",
    )
    parser.add_argument("--schema-registry-topic", default="_schemas", metavar="TOPIC")
    parser.add_argument(
        "--schema-registry-allowed-hosts",
        default="",
        metavar="NAME,...",
        help="host names the registry answers to besides its listen address "
        "(requests naming any other are refused: DNS rebinding)",
    )


def parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {listen!r}")
    return host or "127.0.0.1", int(port)


def read_users(path: str | None) -> dict[str, str] | None:
    if path is None:
        return None
    users = {}
    with open(path) as lines:
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, sep, password = line.partition(":")
            if not sep or not name:
                raise ValueError(f"{path}:{number}: expected NAME:PASSWORD")
            users[name] = password
    return users


def server_from_args(args: argparse.Namespace, listen: str, bootstrap: str) -> SchemaRegistryServer:
    from ._server import SchemaRegistryServer

    host, port = parse_listen(listen)
    return SchemaRegistryServer(
        bootstrap,
        host=host,
        port=port,
        users=read_users(args.schema_registry_users),
        allowed_hosts=args.schema_registry_allowed_hosts.split(","),
        topic=args.schema_registry_topic,
    )


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    server = server_from_args(args, args.listen, args.bootstrap_servers)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        async with server:
            print(
                f"headrace schema registry listening on {server.url}", file=sys.stderr, flush=True
            )
            await stop.wait()

    asyncio.run(run())
    return 0
