"""One confluent-kafka group member in its own process, reporting on stdout as JSON lines.

Usage: kip848_member.py BOOTSTRAP TOPIC GROUP NAME [--protocol consumer|classic]
[--strategy range|cooperative-sticky] [--instance-id ID]. Events: ``{"e": "member", "id"}`` once joined, ``{"e": "assign" |
"revoke" | "lost", "p": [partitions], "t": wall time}`` from the rebalance callbacks,
``{"e": "rec", "p", "o", "t"}`` per record, ``{"e": "error", "code", "name"}`` for errors
polled or a refused commit. A line ``leave`` on stdin closes the consumer (it leaves the
group) and exits; SIGKILL leaves nothing behind.
"""

from __future__ import annotations

import argparse
import json
import select
import sys
import time
from typing import Any

import confluent_kafka as ck


def say(**event: Any) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("bootstrap", "topic", "group", "name"):
        parser.add_argument(name)
    parser.add_argument("--protocol", default="consumer")
    parser.add_argument("--instance-id")
    parser.add_argument("--strategy", help="classic protocol: partition.assignment.strategy")
    parser.add_argument("--heartbeat-ms", type=int, default=500, help="classic protocol")
    parser.add_argument("--debug", help="librdkafka debug contexts, logged to stderr")
    args = parser.parse_args()
    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.name,
        "group.protocol": args.protocol,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "error_cb": lambda err: say(e="error", code=err.code(), name=err.name(), s=err.str()),
    }
    if args.protocol == "classic":
        config["session.timeout.ms"] = 6000
        config["heartbeat.interval.ms"] = args.heartbeat_ms
    if args.strategy:
        config["partition.assignment.strategy"] = args.strategy
    if args.debug:
        config["debug"] = args.debug
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consumer = ck.Consumer(config)
    announced = False

    def assigned(c: Any, partitions: list[Any]) -> None:
        say(e="assign", p=[tp.partition for tp in partitions], t=time.time())

    def revoked(c: Any, partitions: list[Any]) -> None:
        # Commit what was consumed before giving the partitions up.
        try:
            c.commit(asynchronous=False)
        except ck.KafkaException as exc:
            if exc.args[0].code() != ck.KafkaError._NO_OFFSET:  # nothing new to commit
                say(e="error", code=exc.args[0].code(), name=exc.args[0].name())
        say(e="revoke", p=[tp.partition for tp in partitions], t=time.time())

    def lost(c: Any, partitions: list[Any]) -> None:
        say(e="lost", p=[tp.partition for tp in partitions], t=time.time())

    consumer.subscribe([args.topic], on_assign=assigned, on_revoke=revoked, on_lost=lost)
    while True:
        readable, _, _ = select.select([sys.stdin], [], [], 0)
        if readable and sys.stdin.readline().strip() == "leave":
            consumer.close()
            say(e="closed", t=time.time())
            return
        messages = consumer.consume(100, 0.2)
        if not announced and consumer.memberid():
            announced = True
            say(e="member", id=consumer.memberid())
        for m in messages:
            error = m.error()
            if error is not None:
                say(e="error", code=error.code(), name=error.name())
            else:
                say(e="rec", p=m.partition(), o=m.offset(), t=time.time())
        if any(not m.error() for m in messages):
            try:
                consumer.commit(asynchronous=False)
            except ck.KafkaException as exc:
                say(e="error", code=exc.args[0].code(), name=exc.args[0].name())


if __name__ == "__main__":
    main()
