"""``headrace groups describe`` and ``list`` on a consumer-protocol group (KIP-848)."""

from __future__ import annotations

import json
import time

import confluent_kafka as ck
import pytest
from brokerproc import BrokerProcess
from clirun import headrace, table


def test_describe_shows_epochs_and_assignments(
    capsys: pytest.CaptureFixture[str], broker_process: BrokerProcess
) -> None:
    bs = ["--bootstrap-servers", broker_process.bootstrap]
    headrace(capsys, "topics", "create", "orders848", "--partitions", "3", *bs)
    # Three records into each partition: unkeyed records pick partitions at random, and a
    # partition left empty has no position to commit, so its lag would read "-".
    for partition in range(3):
        lines = "".join(f"o{partition}-{i}\n" for i in range(3))
        headrace(capsys, "produce", "orders848", "--partition", str(partition), *bs, stdin=lines)
    consumer = ck.Consumer(
        {
            "bootstrap.servers": broker_process.bootstrap,
            "group.id": "shipping848",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe(["orders848"])
        seen, deadline = 0, time.monotonic() + 30
        while seen < 9 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen += 1
        assert seen == 9
        consumer.commit(asynchronous=False)

        out = headrace(capsys, "groups", "describe", "shipping848", *bs).out
        assert "Type: consumer  State: Stable" in out
        [member] = table(out, "MEMBER-ID")
        assert member[0] == consumer.memberid()
        assert int(member[1]) >= 1
        assert member[5] == member[6] == "orders848:0,1,2"
        offsets = table(out, "TOPIC")
        assert [(r[1], r[4], r[5]) for r in offsets] == [
            (str(p), "0", consumer.memberid()) for p in range(3)
        ]
        data = json.loads(
            headrace(capsys, "groups", "describe", "shipping848", "-o", "json", *bs).out
        )
        assert data["type"] == "consumer" and data["assignor"] == "uniform"
        assert data["group_epoch"] == data["assignment_epoch"] >= 1
        [described] = data["members"]
        assert described["member_epoch"] == data["assignment_epoch"]
        assert len(described["assignment"]) == 3

        listing = table(headrace(capsys, "groups", "list", *bs).out, "GROUP")
        assert ["shipping848", "Stable", "1", "consumer"] in listing
    finally:
        consumer.close()
