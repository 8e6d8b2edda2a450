"""Every console page, in a real browser, against a broker with data, a lagging group,
an open transaction and a running application; the numbers on the pages are checked
against what the broker reports to another client (confluent-kafka)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from console_browsing import figure as _figure
from console_browsing import nav_links, table_text, wait_for
from console_browsing import open_page as _open
from console_browsing import table as _table
from console_scene import (
    AVRO_TOPIC,
    COMMITTED,
    ORDERS,
    ORDERS_PER_PARTITION,
    PAYMENTS,
    PENDING,
    PENDING_RECORDS,
    Scene,
    screenshot,
)

pytestmark = pytest.mark.slow


def _watermarks(bootstrap: str, topic: str, partitions: int) -> list[tuple[int, int]]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "console-check"})
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            for p in range(partitions)
        ]
    finally:
        consumer.close()


def _sizes_reported(bootstrap: str, topic: str) -> dict[int, int]:
    """Bytes per partition as DescribeLogDirs answers another client (kafka-python)."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        [answer] = admin.describe_log_dirs([topic])  # one broker
    finally:
        admin.close()
    return {
        p["partition_index"]: p["partition_size"]
        for log_dir in answer["log_dirs"]
        for t in log_dir["topics"]
        if t["name"] == topic
        for p in t["partitions"]
    }


def _sizes_on_disk(data_dir: Path, topic: str, partitions: int) -> dict[int, int]:
    return {
        p: sum(f.stat().st_size for f in (data_dir / f"{topic}-{p}").glob("*.log"))
        for p in range(partitions)
    }


def test_brokers_page(scene: Scene, browser: Any) -> None:
    _open(browser, f"{scene.console_url}/brokers", "brokers")
    [row] = table_text(browser, "brokers")
    assert row[1:3] == scene.bootstrap.split(":")  # a port as it is written: no "19,092"
    _open(browser, f"{scene.console_url}/brokers/{row[0]}", "broker-config")
    assert any(r[0] == "log.dirs" for r in _table(browser, "configs"))


def test_overview_and_topics_match_the_broker(scene: Scene, browser: Any) -> None:
    marks = _watermarks(scene.bootstrap, ORDERS, 3)
    _open(browser, f"{scene.console_url}/", "overview")
    assert _figure(browser, "brokers") == "1"
    _open(browser, f"{scene.console_url}/topics", "topics")
    rows = {r[0]: r for r in _table(browser, "topics")}
    assert rows[ORDERS][1:3] == ["3", str(sum(high - low for low, high in marks))]
    sizes = _sizes_reported(scene.bootstrap, ORDERS)
    assert sizes == _sizes_on_disk(scene.data_dir, ORDERS, 3) and all(sizes.values())
    assert rows[ORDERS][4] == str(sum(sizes.values()))
    _open(browser, f"{scene.console_url}/topics/{ORDERS}", "topic")
    table = _table(browser, "partitions")
    shown = [(int(r[0]), int(r[4]), int(r[5])) for r in table]
    assert shown == [(p, low, high) for p, (low, high) in enumerate(marks)]
    assert {int(r[0]): int(r[7]) for r in table} == sizes
    assert _figure(browser, "bytes") == str(sum(sizes.values()))
    assert [high for _low, high in marks] == list(ORDERS_PER_PARTITION)
    assert {r[0] for r in _table(browser, "configs")} >= {"cleanup.policy", "retention.ms"}


def test_message_browser_decodes_and_honours_isolation(scene: Scene, browser: Any) -> None:
    _open(
        browser,
        f"{scene.console_url}/topics/{ORDERS}/messages?partition=1&offset=2&limit=3&value_format=json",
        "messages",
    )
    rows = _table(browser, "messages")
    assert [(r[0], r[1], r[3]) for r in rows] == [("1", str(o), f"order-1-{o}") for o in (2, 3, 4)]
    assert '"n": 2' in rows[0][4]
    # The open transaction's records: hidden from read_committed, shown otherwise.
    _open(browser, f"{scene.console_url}/topics/{PENDING}/messages", "messages-read-committed")
    assert _table(browser, "messages")[0][0] == "none"
    _open(
        browser,
        f"{scene.console_url}/topics/{PENDING}/messages?isolation=read_uncommitted&value_format=long",
        "messages-read-uncommitted",
    )
    assert [r[4] for r in _table(browser, "messages")] == [str(i) for i in range(PENDING_RECORDS)]


def test_message_browser_decodes_schema_registry_avro(scene: Scene, browser: Any) -> None:
    """Values written by confluent-kafka's Avro serializer, decoded through the registry:
    by default (the magic byte says so) and when asked for by name."""
    for query, name in (
        ("", "messages-avro"),
        ("?value_format=schema-registry", "messages-avro-by-name"),
    ):
        _open(browser, f"{scene.console_url}/topics/{AVRO_TOPIC}/messages{query}", name)
        rows = _table(browser, "messages")
        assert [r[3] for r in rows] == [p["payer"] for p in PAYMENTS]
        # the shown JSON, as the table reads it (without its commas)
        assert [r[4] for r in rows] == [json.dumps(p, indent=2).replace(",", "") for p in PAYMENTS]
    # Asked to read plain JSON, the same bytes do not fit: hex, and the page says why.
    _open(
        browser,
        f"{scene.console_url}/topics/{AVRO_TOPIC}/messages?value_format=json",
        "messages-avro-as-json",
    )
    assert all(r[4].startswith("hex:00") for r in _table(browser, "messages"))
    assert "did not decode" in browser.find_element("css selector", "p.error").text


def test_group_page_shows_members_and_lag(scene: Scene, browser: Any) -> None:
    _open(browser, f"{scene.console_url}/groups", "groups")
    groups = {r[0]: r for r in _table(browser, "groups")}
    assert groups["billing"][1:3] == ["Empty", "0"]
    assert groups["page-views"][1] == "Stable" and int(groups["page-views"][2]) == 1
    _open(browser, f"{scene.console_url}/groups/billing", "group")
    lags = {int(r[1]): (int(r[2]), int(r[3]), int(r[4])) for r in _table(browser, "offsets")}
    assert lags == {
        p: (c, n, n - c)
        for p, (c, n) in enumerate(zip(COMMITTED, ORDERS_PER_PARTITION, strict=True))
    }
    assert _figure(browser, "lag") == str(sum(ORDERS_PER_PARTITION) - sum(COMMITTED))
    _open(browser, f"{scene.console_url}/groups/page-views", "group-of-app")
    [member] = _table(browser, "members")
    assert "page-views-0" in member[3] and "page-views-1" in member[3]


def test_application_pages_show_tasks_stores_and_topology(scene: Scene, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, f"{scene.console_url}/apps", "apps")
    rows = {r[0]: r for r in _table(browser, "apps")}
    assert rows["page-views"][2] == "running"
    _open(browser, f"{scene.console_url}/apps/0", "app")
    with urllib.request.urlopen(f"{scene.app_url}/health", timeout=5) as response:
        import json

        health = json.load(response)
    assert sorted(r[0] for r in _table(browser, "tasks") if r[1] == "running") == sorted(
        health["tasks"]
    )
    assert "page-views-per-minute" in {r[0] for r in _table(browser, "stores")}
    nodes = browser.find_elements(By.CSS_SELECTOR, "svg.topology g.node")
    with urllib.request.urlopen(f"{scene.app_url}/topology", timeout=5) as response:
        topology = json.load(response)
    assert len(nodes) == sum(len(s["nodes"]) for s in topology["subtopologies"]) > 0


def test_values_refresh_without_reloading(scene: Scene, browser: Any) -> None:
    from confluent_kafka import Producer

    _open(browser, f"{scene.console_url}/topics/{ORDERS}", "topic-before-refresh")
    browser.execute_script("window.sameDocument = true;")
    before = int(_figure(browser, "records"))
    producer = Producer({"bootstrap.servers": scene.bootstrap})
    for i in range(7):
        producer.produce(ORDERS, key=f"late-{i}", value="{}", partition=2)
    producer.flush(10)
    deadline = time.monotonic() + 20
    while int(_figure(browser, "records")) != before + 7:
        assert time.monotonic() < deadline, "the records figure did not refresh"
        time.sleep(0.5)
    assert browser.execute_script("return window.sameDocument === true;")
    screenshot(browser, "topic-after-refresh")


def test_transactions_page_shows_the_open_transaction(scene: Scene, browser: Any) -> None:
    _open(browser, f"{scene.console_url}/transactions", "transactions")
    rows = {r[0]: r for r in _table(browser, "transactions")}
    txn = rows["console-open-txn"]
    assert txn[1] == "Ongoing" and txn[8] == f"{PENDING}-0"
    assert float(txn[6].split()[0]) > 0 and txn[7] == "600 s"
    assert _figure(browser, "open transactions") == str(len(rows))


def _topic_names(bootstrap: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    listed = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    return set(listed.topics)


def test_unknown_topic_keeps_the_navigation(scene: Scene, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, f"{scene.console_url}/topics/no-such-topic", "topic-unknown")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Not found"
    assert "'no-such-topic' does not exist" in browser.find_element(By.TAG_NAME, "main").text
    assert nav_links(browser)[:3] == ["Overview", "Brokers", "Topics"]
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{scene.console_url}/topics/no-such-topic", timeout=10)
    assert missing.value.code == 404
    missing.value.close()


def test_topics_filter_box_and_internal_topics_last(scene: Scene, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, f"{scene.console_url}/topics", "topics-all")
    names = [r[0] for r in _table(browser, "topics")]
    assert set(names) == _topic_names(scene.bootstrap)
    internal = [n for n in names if n.startswith("_")]
    assert {"__consumer_offsets", "_schemas"} <= set(internal)
    assert names[-len(internal) :] == internal, names  # user topics first, internal last
    box = browser.find_element(By.CSS_SELECTOR, "form[role=search] input[name=q]")
    box.send_keys("PAGE-views")  # no JavaScript needed: the form asks the server
    box.submit()
    wait_for(browser, "#show-all")  # the filtered page
    screenshot(browser, "topics-filtered")
    shown = [r[0] for r in _table(browser, "topics")]
    assert shown == sorted(n for n in _topic_names(scene.bootstrap) if "page-views" in n)
    assert "page-views" in shown and ORDERS not in shown
