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
from ._metrics_http import MetricsEndpoint
from ._server_properties import broker_settings


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    broker = subparsers.add_parser("broker", help="run the built-in Kafka-protocol broker")
    # Defaults are None so that only flags actually given override --config's file.
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
    broker.add_argument(
        "--num-partitions", type=int, help="partitions of auto-created topics (default 1)"
    )
    broker.add_argument("--no-auto-create-topics", action="store_true")
    broker.add_argument("--group-initial-rebalance-delay-ms", type=int)
    broker.add_argument(
        "--log-cleaner-backoff-ms",
        type=int,
        help="pause between log cleaner passes over compacted topics",
    )
    broker.add_argument("--group-min-session-timeout-ms", type=int)
    broker.add_argument("--group-consumer-session-timeout-ms", type=int, help="default 45000")
    broker.add_argument("--group-consumer-heartbeat-interval-ms", type=int, help="default 5000")
    broker.add_argument(
        "--transaction-max-timeout-ms",
        type=int,
        help="longest transaction.timeout.ms a producer may ask for",
    )
    limits = broker.add_argument_group("limits (Kafka's broker settings of the same names)")
    limits.add_argument(
        "--fetch-max-bytes",
        type=int,
        help="largest Fetch response, whatever the client asks for (55 MiB)",
    )
    limits.add_argument(
        "--fetch-response-max-memory-bytes",
        type=int,
        help="memory all Fetch responses in flight may hold together (default 256 MiB)",
    )
    limits.add_argument("--socket-request-max-bytes", type=int, help="default 100 MiB")
    limits.add_argument(
        "--connection-failed-authentication-delay-ms",
        type=int,
        help="wait before answering a failed SASL authentication (default 100)",
    )
    limits.add_argument(
        "--sasl-server-max-receive-size",
        type=int,
        help="largest request before a SASL client has authenticated (default 512 KiB)",
    )
    limits.add_argument(
        "--max-connections", type=int, help="default: a quarter of the open-file limit"
    )
    limits.add_argument("--max-connections-per-ip", type=int, help="default: --max-connections")
    limits.add_argument("--connections-max-idle-ms", type=int, help="default 600000")
    limits.add_argument(
        "--socket-request-read-timeout-ms",
        type=int,
        help="time for the rest of a request once its size has arrived (default 30000)",
    )
    limits.add_argument(
        "--max-broker-partitions",
        type=int,
        help="partitions in all topics together; default from the open-file limit",
    )
    limits.add_argument(
        "--max-partitions-per-request",
        type=int,
        help="topics plus partitions one request may name (default twice the above)",
    )
    limits.add_argument(
        "--max-in-flight-requests-per-connection",
        type=int,
        help="requests read ahead of their answers on one connection (default 64)",
    )
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
    flags = {
        "data_dir": args.data_dir,
        "num_partitions": args.num_partitions,
        "group_initial_rebalance_delay_ms": args.group_initial_rebalance_delay_ms,
        "log_cleaner_backoff_ms": args.log_cleaner_backoff_ms,
        "group_min_session_timeout_ms": args.group_min_session_timeout_ms,
        "group_consumer_session_timeout_ms": args.group_consumer_session_timeout_ms,
        "group_consumer_heartbeat_interval_ms": args.group_consumer_heartbeat_interval_ms,
        "transaction_max_timeout_ms": args.transaction_max_timeout_ms,
        "fetch_max_bytes": args.fetch_max_bytes,
        "fetch_response_max_memory_bytes": args.fetch_response_max_memory_bytes,
        "socket_request_max_bytes": args.socket_request_max_bytes,
        "sasl_server_max_receive_size": args.sasl_server_max_receive_size,
        "connection_failed_authentication_delay_ms": args.connection_failed_authentication_delay_ms,
        "max_connections": args.max_connections,
        "max_connections_per_ip": args.max_connections_per_ip,
        "connections_max_idle_ms": args.connections_max_idle_ms,
        "socket_request_read_timeout_ms": args.socket_request_read_timeout_ms,
        "max_broker_partitions": args.max_broker_partitions,
        "max_partitions_per_request": args.max_partitions_per_request,
        "max_in_flight_per_connection": args.max_in_flight_requests_per_connection,
    }
    settings.update({k: v for k, v in flags.items() if v is not None})
    if args.no_auto_create_topics:
        settings["auto_create_topics_enable"] = False
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
