"""``headrace console``: the web console, against any Kafka-compatible cluster."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from typing import Any

from headrace.base import PLAINTEXT, ClientSecurity, read_properties

from ._charts import metrics_at
from ._web import Console


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    console = subparsers.add_parser(
        "console", parents=[broker_options], help="a web console of a cluster and its applications"
    )
    console.add_argument(
        "--listen",
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="where the console serves (default: %(default)s)",
    )
    add_options(console)
    console.set_defaults(handler=_run)


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options of the console itself."""
    parser.add_argument(
        "--apps",
        default="",
        metavar="URL[,URL...]",
        help="HTTP addresses of application instances to show (their --http-port)",
    )
    parser.add_argument(
        "--schema-registry",
        metavar="URL",
        default=os.environ.get("HEADRACE_SCHEMA_REGISTRY_URL"),
        help="schema registry to decode values in its wire format with"
        " (default: $HEADRACE_SCHEMA_REGISTRY_URL; none when unset)",
    )
    parser.add_argument(
        "--broker-metrics",
        metavar="URL",
        help="the broker's Prometheus metrics (headrace broker --metrics-listen), which the"
        " charts of produce and consume rates and lag are drawn from, and /metrics serves",
    )
    parser.add_argument(
        "--chart-every",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how often the charts read the broker's metrics (default: %(default)s)",
    )
    parser.add_argument(
        "--admin",
        action="store_true",
        help="allow creating topics and resetting group offsets (read-only without it); "
        "the console then prints an address with a sign-in token, and only a browser "
        "that opened it may use the console",
    )
    parser.add_argument(
        "--table-location",
        metavar="DIR_OR_URL",
        help="where the broker keeps the tables of table topics (its --table-location):"
        " the topic pages then show each table's mode, last commit and how far it is behind",
    )
    parser.add_argument(
        "--allowed-hosts",
        default="",
        metavar="NAME,...",
        help="host names the console answers to besides its listen address "
        "(requests naming any other are refused: DNS rebinding)",
    )


def parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen expects HOST:PORT, got {listen!r}")
    return host or "127.0.0.1", int(port)


def console_from(args: argparse.Namespace, bootstrap_servers: str) -> Console:
    apps = [url if "://" in url else f"http://{url}" for url in args.apps.split(",") if url.strip()]
    security = PLAINTEXT
    if getattr(args, "command_config", None):  # Kafka client properties: TLS, SASL
        security = ClientSecurity.from_properties(read_properties(args.command_config))
    return Console(
        bootstrap_servers,
        apps=apps,
        admin=args.admin,
        security=security,
        schema_registry=args.schema_registry or None,
        allowed_host_names=tuple(args.allowed_hosts.split(",")),
        metrics=metrics_at(args.broker_metrics) if args.broker_metrics else None,
        chart_every_s=args.chart_every,
        table_location=args.table_location or None,
    )


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    host, port = parse_listen(args.listen)

    async def run() -> None:
        console = console_from(args, args.bootstrap_servers)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await console.start(host, port)
        try:
            print(
                f"headrace console on http://{console.address} ({args.bootstrap_servers}"
                + (f"; schema registry {args.schema_registry}" if args.schema_registry else "")
                + ")",
                file=sys.stderr,
                flush=True,
            )
            if console.sign_in_address is not None:
                print(
                    f"admin mode: sign in at {console.sign_in_address}",
                    file=sys.stderr,
                    flush=True,
                )
            await stop.wait()
        finally:
            await console.stop()

    asyncio.run(run())
    return 0
