"""The console's pages for the schema registry, users and ACLs, message search and
produce, and the broker's charts, in a real browser; every figure is checked against
what another client reads (confluent-kafka's AdminClient and registry client, the
registry's REST API)."""

from __future__ import annotations

import difflib
import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from console_browsing import figure, nav_links, open_page, table, table_text, wait_for
from console_scene import AVRO_TOPIC, PAYMENT, Scene, screenshot

pytestmark = pytest.mark.slow

SUBJECT = f"{AVRO_TOPIC}-value"
PAYMENT_V2 = {
    **PAYMENT,
    "fields": [*PAYMENT["fields"], {"name": "note", "type": "string", "default": ""}],
}


def _rest(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


@pytest.fixture(scope="module")
def registry(scene: Scene) -> Any:
    """The registry with a second version of the Avro subject, a JSON Schema subject
    checked at its own level, and the global level set, all through confluent-kafka."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    client = SchemaRegistryClient({"url": scene.registry_url})
    client.register_schema(SUBJECT, Schema(json.dumps(PAYMENT_V2), "AVRO"))
    schema = {"type": "object", "properties": {"id": {"type": "integer"}}}
    client.register_schema("orders-value", Schema(json.dumps(schema), "JSON"))
    client.set_compatibility("orders-value", "FULL")
    client.set_compatibility(level="BACKWARD_TRANSITIVE")
    try:
        yield client
    finally:
        client.close()


def test_schemas_list_subjects_as_the_registry_does(
    scene: Scene, browser: Any, registry: Any
) -> None:
    open_page(browser, f"{scene.console_url}/schemas", "schemas")
    rows = {r[0]: r for r in table(browser, "subjects")}
    assert set(rows) == set(registry.get_subjects())
    for subject, row in rows.items():
        latest = registry.get_latest_version(subject)
        config = _rest(f"{scene.registry_url}/config/{subject}?defaultToGlobal=true")
        assert row[1:] == [
            str(len(registry.get_versions(subject))),
            str(latest.version),
            str(latest.schema_id),
            latest.schema.schema_type,
            config["compatibilityLevel"],
        ]
    assert rows["orders-value"][5] == "FULL"
    assert figure(browser, "global compatibility") == "BACKWARD_TRANSITIVE"


def test_a_subject_its_versions_and_a_diff_between_two(
    scene: Scene, browser: Any, registry: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    open_page(browser, f"{scene.console_url}/schemas/{SUBJECT}", "schemas-subject")
    versions = [registry.get_version(SUBJECT, v) for v in registry.get_versions(SUBJECT)]
    assert [r[:3] for r in table(browser, "versions")] == [
        [str(v.version), str(v.schema_id), "AVRO"] for v in versions
    ]
    assert figure(browser, "compatibility") == "BACKWARD_TRANSITIVE"  # the global level
    pretty = [json.dumps(json.loads(v.schema.schema_str), indent=2) for v in versions]
    assert browser.find_element(By.ID, "schema").text == pretty[-1]
    # The diff, chosen in the page's own form: version 1 to version 2.
    Select(browser.find_element(By.NAME, "from")).select_by_value("1")
    Select(browser.find_element(By.NAME, "to")).select_by_value("2")
    browser.find_element(By.CSS_SELECTOR, "form[action$='/diff'] button").click()
    wait_for(browser, "#diff")
    screenshot(browser, "schemas-diff")
    shown = [line.text for line in browser.find_elements(By.CSS_SELECTOR, "#diff span")]
    expected = difflib.unified_diff(
        pretty[0].splitlines(), pretty[1].splitlines(), "version 1", "version 2", lineterm=""
    )
    assert [s.strip() for s in shown] == [e.strip() for e in expected]
    added = [s.text for s in browser.find_elements(By.CSS_SELECTOR, "#diff span.add")]
    assert any('"name": "note"' in a for a in added)
    # One version on its own page.
    open_page(browser, f"{scene.console_url}/schemas/{SUBJECT}/versions/1", "schemas-version")
    assert figure(browser, "schema id") == str(versions[0].schema_id)
    assert browser.find_element(By.ID, "schema").text == pretty[0]
    open_page(browser, f"{scene.console_url}/schemas/orders-value", "schemas-subject-json")
    assert figure(browser, "compatibility") == "FULL" and figure(browser, "type") == "JSON"


def test_an_unknown_subject_is_a_404_inside_the_frame(scene: Scene, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    open_page(browser, f"{scene.console_url}/schemas/no-such-subject", "schemas-unknown")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Not found"
    assert "Schemas" in nav_links(browser)
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{scene.console_url}/schemas/no-such-subject", timeout=10)
    assert missing.value.code == 404
    missing.value.close()


@pytest.fixture(scope="module")
def security(scene: Scene) -> Any:
    """SCRAM users and ACLs, made with confluent-kafka's AdminClient. The ACLs name
    resources nothing else in the scene uses (the broker allows what no ACL names)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialAlteration,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": scene.bootstrap})
    upserts: list[UserScramCredentialAlteration] = [
        UserScramCredentialUpsertion(
            "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"alice-secret"
        ),
        UserScramCredentialUpsertion(
            "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"alice-secret"
        ),
        UserScramCredentialUpsertion(
            "bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 10000), b"bob-secret"
        ),
    ]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(30)
    acls = [
        AclBinding(
            ResourceType.TOPIC,
            "ledger",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        ),
        AclBinding(
            ResourceType.GROUP,
            "audit-",
            ResourcePatternType.PREFIXED,
            "User:bob",
            "127.0.0.1",
            AclOperation.READ,
            AclPermissionType.DENY,
        ),
    ]
    for future in admin.create_acls(acls).values():
        future.result(30)
    return admin


def test_users_page_shows_the_scram_credentials(scene: Scene, browser: Any, security: Any) -> None:
    open_page(browser, f"{scene.console_url}/users", "users")
    shown = table(browser, "users")
    assert {row[0] for row in shown} == {"alice", "bob"}  # the scene's only users
    # Asked by name: librdkafka sends "all users" as an empty list, which the built-in
    # broker answers with none (Kafka reads null or empty as all).
    described = {
        user: future.result(30)
        for user, future in security.describe_user_scram_credentials(["alice", "bob"]).items()
    }
    assert shown == sorted(
        [user, info.mechanism.name.replace("_", "-"), str(info.iterations)]
        for user, answer in described.items()
        for info in answer.scram_credential_infos
    )
    assert len(shown) == 3 and figure(browser, "users") == "2"


def test_acls_page_shows_every_binding(scene: Scene, browser: Any, security: Any) -> None:
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    anything: Any = None  # a filter's None matches any name, principal or host
    everything = AclBindingFilter(
        ResourceType.ANY,
        anything,
        ResourcePatternType.ANY,
        anything,
        anything,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    described = security.describe_acls(everything).result(30)
    expected = sorted(
        [
            b.restype.name,
            b.name,
            b.resource_pattern_type.name,
            b.principal,
            b.host,
            b.operation.name,
            b.permission_type.name,
        ]
        for b in described
    )
    assert len(expected) == 2
    open_page(browser, f"{scene.console_url}/acls", "acls")
    assert sorted(table(browser, "acls")) == expected
    assert figure(browser, "acls") == "2"


def _broker_counter(metrics_url: str, name: str, topic: str) -> float:
    """A per-topic counter as the broker's metrics endpoint gives it to any scraper."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(metrics_url, timeout=10) as response:
        text = response.read().decode()
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and s.labels.get("topic") == topic
    )


def _group_lag(bootstrap: str, group: str, topic: str, partitions: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committed = consumer.committed(
            [TopicPartition(topic, p) for p in range(partitions)], timeout=10
        )
        ends = [consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in committed]
    finally:
        consumer.close()
    return sum(end - tp.offset for tp, end in zip(committed, ends, strict=True) if tp.offset >= 0)


def test_charts_of_rates_and_lag_from_the_broker_metrics(scene: Scene, browser: Any) -> None:
    """Records produced and consumed while the console samples every second: the page's
    counts over its window match the broker's own counters, read by another scraper,
    and the lag chart ends at the lag confluent-kafka computes."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from selenium.webdriver.common.by import By

    topic, count = "charted", 400
    admin = AdminClient({"bootstrap.servers": scene.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    time.sleep(2.5)  # samples from before the first record: the window starts at zero
    producer = Producer({"bootstrap.servers": scene.bootstrap, "linger.ms": 50})
    for i in range(count):
        producer.produce(topic, key=str(i), value="x" * 20)
    producer.flush(30)
    consumer = Consumer(
        {
            "bootstrap.servers": scene.bootstrap,
            "group.id": "chart-readers",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    read = 0
    deadline = time.monotonic() + 30
    while read < count // 2 and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is not None and message.error() is None:
            read += 1
            if read == count // 2:
                consumer.commit(message=message, asynchronous=False)
    consumer.close()
    produced = _broker_counter(scene.metrics_url, "headrace_broker_records_in_total", topic)
    assert produced == count
    lag = _group_lag(scene.bootstrap, "chart-readers", topic, 1)
    assert lag == count - count // 2
    deadline = time.monotonic() + 20
    while True:  # until a sample after the commit is on the page
        open_page(browser, f"{scene.console_url}/charts", "charts")
        charts = browser.find_elements(By.CSS_SELECTOR, "figure#chart-lag-chart-readers")
        rows = {r[0]: r for r in table(browser, "rates")}
        if charts and charts[0].get_attribute("data-last") == str(lag) and topic in rows:
            break
        assert time.monotonic() < deadline, "the charts did not catch up with the broker"
        time.sleep(1)
    assert rows[topic][1] == str(count) == rows[topic][5]
    consumed = _broker_counter(scene.metrics_url, "headrace_broker_records_out_total", topic)
    assert consumed >= read and rows[topic][2] == str(int(consumed))
    produced_chart = browser.find_element(By.ID, "chart-produced")
    assert float(produced_chart.get_attribute("data-max")) > 0
    assert len(produced_chart.find_elements(By.TAG_NAME, "circle")) >= 2
    screenshot(browser, "charts")


SEARCHED, SEARCH_RECORDS, SEARCH_BASE_MS = "searched", 300, 1_700_000_000_000


@pytest.fixture(scope="module")
def searched(scene: Scene) -> dict[str, tuple[int, int]]:
    """300 JSON records over 3 partitions, a second apart from a known time; returns
    each key's (partition, offset) as confluent-kafka's delivery reports give them."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": scene.bootstrap})
    admin.create_topics([NewTopic(SEARCHED, 3, 1)])[SEARCHED].result(30)
    where: dict[str, tuple[int, int]] = {}

    def delivered(error: Any, message: Any) -> None:
        assert error is None, error
        where[message.key().decode()] = (message.partition(), message.offset())

    producer = Producer({"bootstrap.servers": scene.bootstrap})
    for i in range(SEARCH_RECORDS):
        value = json.dumps({"user": {"id": i % 10}, "n": i})
        producer.produce(
            SEARCHED,
            key=f"k{i}",
            value=value,
            partition=i % 3,
            timestamp=SEARCH_BASE_MS + i * 1000,
            on_delivery=delivered,
        )
    assert producer.flush(30) == 0
    return where


def _every_record(bootstrap: str, topic: str) -> list[Any]:
    """The topic read whole by confluent-kafka's consumer."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "search-check"})
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        tps = [TopicPartition(topic, p, 0) for p in metadata.partitions]
        total = sum(consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in tps)
        consumer.assign(tps)
        records: list[Any] = []
        deadline = time.monotonic() + 30
        while len(records) < total and time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                records.append(message)
        return records
    finally:
        consumer.close()


def _search(browser: Any, scene: Scene, query: str, name: str) -> list[list[str]]:
    open_page(browser, f"{scene.console_url}/topics/{SEARCHED}/search?go=1&{query}", name)
    return table(browser, "matches")


def test_message_search_by_key_value_json_path_and_time(
    scene: Scene, browser: Any, searched: dict[str, tuple[int, int]]
) -> None:
    from urllib.parse import quote

    from selenium.webdriver.common.by import By

    everything = _every_record(scene.bootstrap, SEARCHED)
    assert len(everything) == SEARCH_RECORDS
    # By key: the one record, where the producer was told it went.
    [row] = _search(browser, scene, "key=k42", "search-key")
    assert (int(row[0]), int(row[1])) == searched["k42"] and row[3] == "k42"
    # By JSON path: the records confluent-kafka's consumer finds with the same test.
    rows = _search(browser, scene, "path=" + quote("$.user.id == 5") + "&limit=500", "search-path")
    expected = {m.key().decode() for m in everything if json.loads(m.value())["user"]["id"] == 5}
    assert {r[3] for r in rows} == expected and len(expected) == SEARCH_RECORDS // 10
    # By a substring of the value.
    [row] = _search(browser, scene, "value=" + quote('"n": 7}'), "search-value")
    assert row[3] == "k7"
    # By time, typed in the page's form: records 100 to 199 by their timestamps.
    open_page(browser, f"{scene.console_url}/topics/{SEARCHED}/search", "search-form")
    form = browser.find_element(By.ID, "search-form")
    form.find_element(By.NAME, "from").send_keys("2023-11-14T22:15:00Z")  # base + 100 s
    form.find_element(By.NAME, "to").send_keys(str(SEARCH_BASE_MS + 199_000))
    limit = form.find_element(By.NAME, "limit")
    limit.clear()
    limit.send_keys("500")
    form.find_element(By.TAG_NAME, "button").click()
    wait_for(browser, "table#matches")
    screenshot(browser, "search-time")
    in_time = {
        m.key().decode()
        for m in everything
        if SEARCH_BASE_MS + 100_000 <= m.timestamp()[1] <= SEARCH_BASE_MS + 199_000
    }
    assert {r[3] for r in table(browser, "matches")} == in_time and len(in_time) == 100
    assert figure(browser, "matched") == "100" and figure(browser, "in range") == "100"
    # Bounded: the scan stops where it is told to, and says so.
    rows = _search(browser, scene, "max_scanned=50", "search-bounded")
    assert figure(browser, "scanned") == "50" and len(rows) == 50
    assert "50 records were scanned" in browser.find_element(By.ID, "stopped").text
    # A path that is not one is an error on the page, not a failed page.
    _search(browser, scene, "path=user.id", "search-bad-path")
    assert "starts with $" in browser.find_element(By.CSS_SELECTOR, "p.error").text


@pytest.fixture(scope="module")
def admin_console(scene: Scene, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """An admin console (with the registry) as its own process: its address and the
    address that signs a browser in."""
    import re

    from brokerproc import free_port
    from console_scene import spawn, stop

    port = free_port()
    log = tmp_path_factory.mktemp("admin-console") / "console.log"
    console = spawn(
        [
            "console",
            "--bootstrap-servers",
            scene.bootstrap,
            "--listen",
            f"127.0.0.1:{port}",
            "--schema-registry",
            scene.registry_url,
            "--admin",
        ],
        log,
    )
    try:
        deadline = time.monotonic() + 30
        while not (found := re.search(r"sign in at (\S+)", log.read_text())):
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", found.group(1)
    finally:
        stop(console)


def _consumed_at(bootstrap: str, topic: str, partition: int, offset: int) -> Any:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "produce-check"})
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                return message
        raise AssertionError(f"nothing at {topic}-{partition}@{offset}")
    finally:
        consumer.close()


def _produce_in_form(browser: Any, base: str, topic: str, fields: dict[str, str]) -> list[str]:
    """Fill the topic page's produce form, submit it, and read the record shown after."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    open_page(browser, f"{base}/topics/{topic}", f"produce-form-{topic}")
    form = browser.find_element(By.ID, "produce-form")
    for name, value in fields.items():
        element = form.find_element(By.NAME, name)
        if element.tag_name == "select":
            Select(element).select_by_value(value)
        else:
            element.send_keys(value)
    form.find_element(By.TAG_NAME, "button").click()
    wait_for(browser, "table#messages")
    screenshot(browser, f"produced-{topic}")
    [row] = table_text(browser, "messages")
    return row


def test_admin_console_produces_records_with_headers_and_schemas(
    scene: Scene, browser: Any, admin_console: Any, registry: Any, searched: Any
) -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    base, sign_in = admin_console
    browser.get(sign_in)  # the cookie that lets this browser use the admin console
    row = _produce_in_form(
        browser,
        base,
        SEARCHED,
        {"partition": "1", "key": "typed", "value": "hello", "headers": "a=1\nb=two"},
    )
    partition, offset = int(row[0]), int(row[1])
    message = _consumed_at(scene.bootstrap, SEARCHED, partition, offset)
    assert partition == 1 and message.key() == b"typed" and message.value() == b"hello"
    assert message.headers() == [("a", b"1"), ("b", b"two")]
    # With the latest schema of avro-payments-value (version 2), through the registry.
    payment = {"payer": "console", "cents": 1234, "settled": True, "note": "typed in"}
    row = _produce_in_form(
        browser,
        base,
        AVRO_TOPIC,
        {"key": "console", "schema": "latest", "value": json.dumps(payment)},
    )
    message = _consumed_at(scene.bootstrap, AVRO_TOPIC, int(row[0]), int(row[1]))
    value = message.value()
    latest = registry.get_latest_version(SUBJECT)
    assert value[0] == 0 and int.from_bytes(value[1:5], "big") == latest.schema_id
    decode = AvroDeserializer(registry)
    assert decode(value, SerializationContext(AVRO_TOPIC, MessageField.VALUE)) == payment
    assert json.loads(row[4]) == payment  # the page decodes it through the registry


def test_a_value_that_does_not_fit_the_schema_is_refused(
    scene: Scene, browser: Any, admin_console: Any, registry: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base, sign_in = admin_console
    browser.get(sign_in)
    open_page(browser, f"{base}/topics/{AVRO_TOPIC}", "produce-refused-form")
    form = browser.find_element(By.ID, "produce-form")
    Select(form.find_element(By.NAME, "schema")).select_by_value("latest")
    form.find_element(By.NAME, "value").send_keys('{"payer": 5}')
    form.find_element(By.TAG_NAME, "button").click()
    wait_for(browser, "main p.error")
    screenshot(browser, "produce-refused")
    assert "does not fit" in browser.find_element(By.CSS_SELECTOR, "main p.error").text


def test_topology_links_sub_topologies_and_reads_at_1400_px(scene: Scene, browser: Any) -> None:
    """The click-enrichment application: its repartition topic drawn from the sink of
    one sub-topology to the source of the other, its table's store linked to the table
    and to the join, as the application's own /topology says; the drawing fits a 1,400
    px window at its own size, so its text is not shrunk."""
    from selenium.webdriver.common.by import By

    topology = _rest(f"{scene.join_app_url}/topology")
    nodes = [n for sub in topology["subtopologies"] for n in sub["nodes"]]
    assert len(topology["subtopologies"]) == 2
    open_page(browser, f"{scene.console_url}/apps/1", "topology-join")
    svg = browser.find_element(By.CSS_SELECTOR, "svg.topology")
    browser.execute_script("arguments[0].scrollIntoView();", svg)
    screenshot(browser, "topology-join-drawing")
    shown = {g.get_attribute("data-name") for g in svg.find_elements(By.CSS_SELECTOR, "g.node")}
    assert shown == {n["name"] for n in nodes}
    sources = {t: n["name"] for n in nodes if n["kind"] == "Source" for t in n["topics"]}
    expected_links = {
        (t, n["name"], sources[t])
        for n in nodes
        if n["kind"] == "Sink"
        for t in n["topics"]
        if t in sources
    }
    links = {
        (g.get_attribute("data-topic"), g.get_attribute("data-from"), g.get_attribute("data-to"))
        for g in svg.find_elements(By.CSS_SELECTOR, "g.topic-link")
    }
    assert links == expected_links and any("repartition" in t for t, _, _ in links)
    sub_of = {n["name"]: s["id"] for s in topology["subtopologies"] for n in s["nodes"]}
    assert all(sub_of[a] != sub_of[b] for _, a, b in links)  # it joins two bands
    uses = {
        (line.get_attribute("data-store"), line.get_attribute("data-node"))
        for line in svg.find_elements(By.CSS_SELECTOR, "polyline.store-link")
    }
    assert uses == {(s, n["name"]) for n in nodes for s in n["stores"]}
    [store] = {s for s, _ in uses}
    assert {n for s, n in uses if s == store} >= {"enrich"}  # the join reads the table
    # At 1,400 px: drawn at its own size, and all of it inside the window.
    size = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return [r.right, r.width, document.documentElement.clientWidth,"
        " parseFloat(getComputedStyle(arguments[0].querySelector('g.node text')).fontSize)];",
        svg,
    )
    right, width, window_width, font = size
    assert width == float(svg.get_attribute("width")) and right <= window_width <= 1400
    assert font >= 11
