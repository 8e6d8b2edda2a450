"""A Quix Streams application, written the way its users write one: a StreamingDataFrame
with state and a windowed count.

Input: page views keyed by user, JSON values ``{"page": ...}``, event time in the
record timestamp. Two branches of one StreamingDataFrame:

- ``--totals``: a stateful ``apply`` keeps each user's running number of views in the
  dataframe's state store and emits ``{"user", "views"}``: the sequence 1, 2, 3, ...
- ``--windows``: a tumbling one-minute window counts views per user; every update is
  emitted (``.current()``) keyed ``user@window_start`` with the count so far.

Both stores are backed by changelog topics that Quix creates, compacted.

Run under the peers' virtualenv (it imports quixstreams, not headrace)::

    .venv-peers/bin/python tests/peers/quix_app.py --bootstrap HOST:PORT --app-id ID \
        --input T --totals T --windows T --state-dir DIR [--exactly-once] [--delay-ms N] \
        [--transaction-timeout-ms N]

``--delay-ms`` sleeps after each record, so a test can stop the process while a run is
still under way. ``--transaction-timeout-ms`` is the producer's ``transaction.timeout.ms``:
Quix gives each process a random transactional id, so a transaction left open by a
killed process ends only when the broker times it out, and until then read_committed
readers of its partitions wait.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

WINDOW_MS = 60_000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--app-id", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--totals", required=True)
    parser.add_argument("--windows", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--exactly-once", action="store_true")
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--transaction-timeout-ms", type=int, default=0)
    args = parser.parse_args()

    from quixstreams import Application, State

    producer_config = (
        {"transaction.timeout.ms": args.transaction_timeout_ms}
        if args.transaction_timeout_ms
        else {}
    )
    app = Application(
        broker_address=args.bootstrap,
        consumer_group=args.app_id,
        auto_offset_reset="earliest",
        commit_interval=0.5,
        state_dir=args.state_dir,
        processing_guarantee="exactly-once" if args.exactly_once else "at-least-once",
        loglevel="WARNING",
        # A restarted process should not wait 45 s for its killed predecessor's
        # session to expire before the group rebalances.
        consumer_extra_config={"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000},
        producer_extra_config=producer_config,
    )
    views = app.topic(args.input, key_deserializer="str", value_deserializer="json")
    totals_topic = app.topic(args.totals, key_serializer="str", value_serializer="json")
    windows_topic = app.topic(args.windows, key_serializer="str", value_serializer="json")
    delay = args.delay_ms / 1000

    def tally(
        value: dict[str, Any], key: str, _ts: int, _headers: Any, state: State
    ) -> dict[str, Any]:
        views_so_far = state.get("views", 0) + 1
        state.set("views", views_so_far)
        if delay:
            time.sleep(delay)
        return {"user": key, "views": views_so_far}

    sdf = app.dataframe(views)
    totals = sdf.apply(tally, stateful=True, metadata=True)
    totals.to_topic(totals_topic)

    windows = sdf.tumbling_window(WINDOW_MS).count().current()
    windows = windows.apply(
        lambda w, key, _ts, _headers: {"window": f"{key}@{w['start']}", "count": w["value"]},
        metadata=True,
    )
    windows.to_topic(windows_topic, key=lambda row: row["window"])

    app.run()


if __name__ == "__main__":
    main()
