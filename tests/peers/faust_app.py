"""A faust-streaming application, written the way its users write one: an agent plus a table.

It counts page views per user. For every view it reads from the input topic it adds one
to the user's entry in a table (kept in memory and backed by a compacted changelog
topic, faust's default) and sends ``user -> count`` to the output topic, so the output
for each user is the running sequence 1, 2, 3, ...

Run under the peers' virtualenv (it imports faust, not headrace)::

    .venv-peers/bin/python tests/peers/faust_app.py --bootstrap HOST:PORT --app-id ID \
        --input T --output T --state-dir DIR [--exactly-once] [--delay-ms N]

``--delay-ms`` sleeps in the agent after each event, so a test can stop the process
while a run is still under way.

A record keyed ``tick`` is skipped: no table write, no output. Under exactly once the
tests send one to each partition before a clean stop, so that faust commits the
transaction holding table writes it sent after its last offset commit (see
``test_faust_on_headrace.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

PARTITIONS = 3
TICK = b"tick"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--app-id", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--exactly-once", action="store_true")
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument(
        "--segment-bytes",
        type=int,
        default=0,
        help="segment.bytes of the table's changelog topic (0: broker default)",
    )
    # info: the tests wait for the worker's "Ready" line before sending it input.
    parser.add_argument("--loglevel", default="info")
    args = parser.parse_args()

    import faust

    app = faust.App(
        args.app_id,
        broker=f"kafka://{args.bootstrap}",
        store="memory://",
        datadir=args.state_dir,
        web_enabled=False,
        topic_partitions=PARTITIONS,
        consumer_auto_offset_reset="earliest",
        broker_commit_interval=0.5,
        # A restarted worker should not wait a minute for its killed predecessor's
        # session to expire before the group rebalances.
        broker_session_timeout=6,
        broker_heartbeat_interval=1,
        processing_guarantee="exactly_once" if args.exactly_once else "at_least_once",
    )
    views = app.topic(
        args.input, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw"
    )
    counts_out = app.topic(args.output, key_serializer="raw", value_serializer="raw")
    extra = {"segment.bytes": str(args.segment_bytes)} if args.segment_bytes else {}
    counts = app.Table(
        "views-per-user",
        default=int,
        partitions=PARTITIONS,
        key_type=str,
        value_type=int,
        extra_topic_configs=extra,
    )
    delay = args.delay_ms / 1000

    @app.agent(views)  # type: ignore[untyped-decorator]  # faust ships no annotations
    async def count_views(stream: Any) -> None:
        async for key, _value in stream.items():
            if key == TICK:
                continue
            user = key.decode()
            counts[user] += 1
            await counts_out.send(key=key, value=str(counts[user]).encode())
            if delay:
                await asyncio.sleep(delay)

    sys.argv = [sys.argv[0], "worker", "--loglevel", args.loglevel, "--without-web"]
    app.main()


if __name__ == "__main__":
    main()
