"""Every page's template, rendered without a cluster: a name a user chose (a topic,
a group, a subject, a header) is text on every page, never markup, because the
templates escape by default; and numbers are separated only where they are
quantities."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import TopicPartition

from headrace.console import _views as views
from headrace.console._charts import Sample
from headrace.console._cluster import Browsed, Message
from headrace.console._frame import page
from headrace.console._schemas import schema_diff
from headrace.console._templates import render

HOSTILE = '<img src=x onerror="alert(1)">'


def _topic() -> dict[str, Any]:
    return {
        "name": HOSTILE,
        "partitions": [
            {
                "partition": 0,
                "leader": 1001,
                "replicas": [1001],
                "isr": [1001],
                "start_offset": 0,
                "end_offset": 12345,
                "records": 12345,
                "size": 2048,
            }
        ],
        "configs": [{"name": "cleanup.policy", "value": HOSTILE, "source": "override"}],
        "size": 2048,
    }


def _group() -> dict[str, Any]:
    return {
        "group": HOSTILE,
        "state": "Empty",
        "members": [
            {
                "member_id": HOSTILE,
                "client_id": "c",
                "client_host": "/127.0.0.1",
                "assignment": [TopicPartition(HOSTILE, 0)],
            }
        ],
        "offsets": [
            {
                "topic": HOSTILE,
                "partition": 0,
                "committed": 5,
                "end_offset": 12345,
                "lag": 12340,
                "member": None,
            }
        ],
        "lag": 12340,
    }


PAGES: dict[str, Callable[[], object]] = {
    "overview": lambda: views.overview(
        {"brokers": [{}], "cluster_id": HOSTILE, "controller": 1},
        [{"name": HOSTILE, "internal": False, "partitions": 1, "records": 5}],
        [],
        [],
    ),
    "brokers": lambda: views.brokers_page(
        {
            "brokers": [{"id": 1001, "host": HOSTILE, "port": 19092, "rack": None}],
            "controller": 1001,
        }
    ),
    "topics": lambda: views.topics_page(
        [
            {
                "name": HOSTILE,
                "internal": False,
                "partitions": 1,
                "records": 12345,
                "end_offset": 12345,
                "size": 2048,
            }
        ],
        "token",
        HOSTILE,
    ),
    "topic": lambda: views.topic_page(_topic()),
    "messages": lambda: views.messages_page(
        _topic(),
        Browsed([Message(0, 12345, 1_700_000_000_000, HOSTILE, HOSTILE, [(HOSTILE, HOSTILE)])]),
        {"offset": HOSTILE},
        None,
    ),
    "groups": lambda: views.groups_page(
        [{"group": HOSTILE, "state": "Empty", "members": 0, "protocol": HOSTILE}]
    ),
    "group": lambda: views.group_page(
        _group(),
        "token",
        [
            {
                "topic": HOSTILE,
                "partition": 0,
                "current": 5,
                "new": 0,
                "request": {"to": "earliest", "topic": HOSTILE, "offset": ""},
            }
        ],
        "seal",
        HOSTILE,
    ),
    "transactions": lambda: views.transactions_page(
        [
            {
                "transactional_id": HOSTILE,
                "state": "Ongoing",
                "producer_id": 4001,
                "producer_epoch": 0,
                "coordinator": 1001,
                "started_ms": 1_700_000_000_000,
                "age_s": 1.5,
                "timeout_ms": 60000,
                "partitions": [HOSTILE],
            }
        ]
    ),
    "apps": lambda: views.apps_page(
        [
            {
                "index": 0,
                "url": HOSTILE,
                "reachable": True,
                "health": {"application_id": HOSTILE, "state": "running", "tasks": ["0_0"]},
                "metrics": {"consumed": 12345},
            }
        ]
    ),
    "app": lambda: views.app_page(
        {
            "url": HOSTILE,
            "reachable": True,
            "health": {"state": "running", "tasks": [HOSTILE], "restoring": []},
            "metrics": {"stores": {HOSTILE: {"keys": 3.0}}},
            "topology": {
                "subtopologies": [
                    {
                        "id": 0,
                        "nodes": [
                            {
                                "name": HOSTILE,
                                "kind": "Source",
                                "topics": [HOSTILE],
                                "stores": [],
                                "predecessors": [],
                                "successors": [],
                            }
                        ],
                    }
                ],
                "text": HOSTILE,
            },
        }
    ),
    "schemas": lambda: render(
        "schemas.html",
        url=HOSTILE,
        compatibility="BACKWARD",
        subjects=[
            {
                "subject": HOSTILE,
                "versions": 2,
                "latest": 2,
                "id": 1001,
                "type": "AVRO",
                "compatibility": "NONE",
            }
        ],
    ),
    "schema diff": lambda: render(
        "schema_diff.html",
        subject=HOSTILE,
        lines=schema_diff(HOSTILE, "x", "1", "2"),
        older=1,
        newer=2,
    ),
    "users": lambda: render(
        "users.html",
        rows=[{"user": HOSTILE, "mechanism": "SCRAM-SHA-256", "iterations": 8192}],
        refused=None,
    ),
    "acls": lambda: render(
        "acls.html",
        rows=[
            {
                "resource_type": "TOPIC",
                "resource_name": HOSTILE,
                "pattern_type": "LITERAL",
                "principal": HOSTILE,
                "host": "*",
                "operation": "READ",
                "permission": "ALLOW",
            }
        ],
        refused=HOSTILE,
    ),
    "search": lambda: render(
        "search.html",
        topic=HOSTILE,
        partitions=[0],
        query={"key": HOSTILE},
        found=None,
        error=HOSTILE,
        max_scanned=100_000,
        max_matches=500,
    ),
    "charts": lambda: render(
        "charts.html",
        history=type("History", (), {"problem": HOSTILE, "interval_s": 5.0, "samples": _Kept()})(),
        produce_chart="",
        consume_chart="",
        lag_charts=[],
        totals=[
            {
                "topic": HOSTILE,
                "produced": 1,
                "consumed": 1,
                "produce_rate": 0.0,
                "consume_rate": 0.0,
                "produced_total": 1,
            }
        ],
    ),
    "frame": lambda: page(HOSTILE, "", active="/", cluster=HOSTILE),
}


class _Kept(list[Sample]):
    maxlen = 180


@pytest.mark.parametrize("name", sorted(PAGES))
def test_names_are_text_on_every_page(name: str) -> None:
    html = str(PAGES[name]())
    assert "<img" not in html, name
    assert "&lt;img src=x onerror=" in html, name


def test_ports_and_ids_have_no_thousands_separators_and_quantities_do() -> None:
    brokers = str(PAGES["brokers"]())
    assert ">19092<" in brokers and "19,092" not in brokers and "1,001" not in brokers
    topic = str(PAGES["topic"]())
    assert ">1001<" in topic and "12,345" in topic
    transactions = str(PAGES["transactions"]())
    assert ">4001<" in transactions and "4,001" not in transactions
