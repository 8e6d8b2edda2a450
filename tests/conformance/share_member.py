"""One confluent-kafka ShareConsumer, run as its own process so a test can SIGKILL it.

    python share_member.py BOOTSTRAP TOPIC GROUP

Polls in explicit acknowledgement mode until a poll returns records, accepts the first
half of them (by offset) and commits those synchronously, then keeps the rest acquired
without acknowledging them and waits to be killed. Writes one JSON object per line:

    {"e": "accepted", "o": [offsets]}    after the broker answered the commit
    {"e": "holding", "o": [offsets]}     records acquired and never acknowledged
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from confluent_kafka import AcknowledgeType, Message, ShareConsumer


def say(event: str, offsets: list[int]) -> None:
    print(json.dumps({"e": event, "o": offsets}), flush=True)


def offset_of(message: Message) -> int:
    offset = message.offset()
    assert offset is not None  # a polled record always has one
    return offset


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("group")
    args = parser.parse_args()
    consumer = ShareConsumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([args.topic])
    held: list[Message] = []
    deadline = time.monotonic() + 30
    while not held and time.monotonic() < deadline:
        held = [m for m in consumer.poll(1.0) if m.error() is None]
    if len(held) < 2:
        print(f"{len(held)} record(s) polled, 2 or more needed", file=sys.stderr)
        return 1
    held.sort(key=offset_of)
    half = len(held) // 2
    accepted, holding = held[:half], held[half:]
    for message in accepted:
        consumer.acknowledge(message, AcknowledgeType.ACCEPT)
    results = consumer.commit_sync(30)
    failed = [str(tp) for tp, error in results.items() if error is not None]
    if failed:
        print(f"commit failed: {failed}", file=sys.stderr)
        return 1
    say("accepted", [offset_of(m) for m in accepted])
    say("holding", [offset_of(m) for m in holding])
    time.sleep(600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
