"""``headrace broker``: the built-in broker in the foreground.

The commands that talk to a broker as its clients (topics, produce, consume, groups,
configs, records, users, acls) work against any Kafka-protocol cluster, so they live in
``headrace.client_tools``, not here.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import Any

from headrace.base import read_properties

from ._broker import Broker
from ._config import BROKER_SETTINGS
from ._metrics_http import MetricsEndpoint
from ._server_properties import broker_settings
from ._setting_table import add_flags, from_flags


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    broker = subparsers.add_parser("broker", help="run the built-in Kafka-protocol broker")
    # Defaults are None so that only flags actually given override --config's file. The
    # flags of plain settings come from BrokerConfig's rows (``_setting_table``).
    broker.add_argument(
        "--config",
        metavar="FILE",
        help="server.properties with Kafka's key names (listeners, ssl.*,"
        " sasl.enabled.mechanisms, authorizer.class.name, ...)",
    )
    broker.add_argument("--data-dir", help="directory for logs and metadata (log.dirs)")
    broker.add_argument(
        "--listen", metavar="HOST:PORT", help="one PLAINTEXT listener (default 127.0.0.1:9092)"
    )
    broker.add_argument(
        "--fsync",
        choices=("always", "never"),
        default="always",
        help="fsync before acknowledging acks=1/all produces (default always)",
    )
    limits = broker.add_argument_group("limits (Kafka's broker settings of the same names)")
    add_flags(BROKER_SETTINGS, broker, limits)
    broker.add_argument(
        "--metrics-listen",
        metavar="HOST:PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics",
    )
    broker.set_defaults(handler=_run_broker)


def _parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen expects HOST:PORT, got {listen!r}")
    return host or "127.0.0.1", int(port)


def _run_broker(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    settings = broker_settings(read_properties(args.config)) if args.config else {}
    settings.update(from_flags(BROKER_SETTINGS, args))
    if args.data_dir is not None:
        settings["data_dir"] = args.data_dir
    if args.listen is not None or "listeners" not in settings:
        settings["host"], settings["port"] = _parse_listen(args.listen or "127.0.0.1:9092")
        settings.pop("listeners", None)
    if "data_dir" not in settings:
        raise ValueError("give --data-dir (or log.dirs in --config)")
    broker = Broker(settings.pop("data_dir"), fsync=args.fsync == "always", **settings)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        async with broker:
            listening = ", ".join(
                f"{listener.name}://{listener.host}:{listener.port}"
                for listener in broker.config.bound_listeners()
            )
            print(f"headrace broker listening on {listening}", file=sys.stderr, flush=True)
            # What runs beside the broker (``headrace._beside_broker``) hears of it here.
            for started in getattr(args, "broker_started", ()):
                started(broker)
            served = (
                await _serve_metrics(broker, args.metrics_listen) if args.metrics_listen else None
            )
            try:
                await stop.wait()
            finally:
                if served is not None:
                    await served.stop()
                # What runs beside the broker stops first, while the broker still answers
                # its clients' goodbyes (a consumer's LeaveGroup, a final fetch).
                for stopping in getattr(args, "broker_stopping", ()):
                    await stopping()
            logging.getLogger("headrace.broker").info("shutting down")

    asyncio.run(run())
    return 0


async def _serve_metrics(broker: Broker, listen: str) -> MetricsEndpoint:
    """The broker's Prometheus text on the broker's own loop (``_metrics_http``)."""
    host, port = _parse_listen(listen)
    endpoint = MetricsEndpoint(broker.metrics.exposition, host, port)
    await endpoint.start()
    print(
        f"headrace broker metrics on http://{host}:{endpoint.port}/metrics",
        file=sys.stderr,
        flush=True,
    )
    return endpoint
