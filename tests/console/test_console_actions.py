"""The console changes a cluster only in admin mode, and a group's offsets only after a
preview and only while the group is empty; it reads any Kafka-compatible cluster (Tansu)."""

from __future__ import annotations

import asyncio
import html
import http.cookiejar
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from brokerproc import TansuProcess, free_port
from console_scene import (
    AVRO_TOPIC,
    COMMITTED,
    ORDERS,
    ORDERS_PER_PARTITION,
    PAYMENTS,
    Scene,
    produce_avro,
    spawn,
    stop,
    wait_http,
)

pytestmark = pytest.mark.slow


def _post(url: str, form: dict[str, str], origin: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(), method="POST")
    if origin:
        request.add_header("Origin", origin)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        body: bytes = response.read()
    return body.decode()


def _committed(bootstrap: str, group: str) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return [
            tp.offset
            for tp in consumer.committed([TopicPartition(ORDERS, p) for p in range(3)], timeout=10)
        ]
    finally:
        consumer.close()


def test_read_only_console_refuses_changes(scene: Scene) -> None:
    status, body = _post(
        f"{scene.console_url}/groups/billing/reset", {"to": "earliest", "step": "execute"}
    )
    assert status == 403 and "read-only" in body
    status, _ = _post(f"{scene.console_url}/topics", {"name": "made-by-console", "partitions": "1"})
    assert status == 403
    assert "made-by-console" not in _get(f"{scene.console_url}/topics")
    assert _committed(scene.bootstrap, "billing") == list(COMMITTED)


def test_pages_of_nothing_are_404(scene: Scene) -> None:
    """A path naming no broker or application is a 404, never a 500 with a traceback."""
    for path in ("/brokers/abc", "/brokers/99", "/apps/abc", "/apps/7"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            _get(f"{scene.console_url}{path}")
        assert refused.value.code == 404, path
        assert "Traceback" not in refused.value.read().decode()


class _Browser:
    """A browser's view of an admin console: its cookie jar, and the pages it saw."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def get(self, path: str, **headers: str) -> tuple[int, str]:
        request = urllib.request.Request(self.base + path, headers=headers)
        return self._open(request)

    def post(self, path: str, form: dict[str, str], **headers: str) -> tuple[int, str]:
        data = urllib.parse.urlencode(form).encode()
        request = urllib.request.Request(self.base + path, data=data, headers=headers)
        return self._open(request)

    def _open(self, request: urllib.request.Request) -> tuple[int, str]:
        try:
            with self._opener.open(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()


def _hidden(body: str, name: str) -> str:
    found = re.findall(rf'name="{name}" value="([^"]*)"', body)
    assert found, f"no {name} field in the page"
    return str(found[-1])


def _sign_in_address(log: Path) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(r"sign in at (\S+)", log.read_text())
        if found:
            return found.group(1)
        time.sleep(0.1)
    raise AssertionError(f"the admin console printed no sign-in address:\n{log.read_text()}")


def test_admin_console_previews_then_resets_an_empty_group(scene: Scene, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "admin-console.log"
    console = spawn(
        [
            "console",
            "--bootstrap-servers",
            scene.bootstrap,
            "--listen",
            f"127.0.0.1:{port}",
            "--admin",
        ],
        log,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        sign_in = _sign_in_address(log)
        assert sign_in.startswith(f"{base}/?token=")
        stranger, browser = _Browser(base), _Browser(base)
        # Nobody who has not opened the printed address may read or change anything.
        assert stranger.get("/topics")[0] == 401
        assert stranger.post("/groups/billing/reset", {"to": "latest", "step": "execute"})[0] in (
            401,
            403,
        )
        assert stranger.get("/?token=wrong")[0] == 401
        status, _ = browser.get(sign_in.removeprefix(base))
        assert status == 200  # redirected to the page without the token, signed in
        status, topics = browser.get("/topics")
        assert status == 200 and 'name="csrf"' in topics
        # Another site's page cannot post to it, even with the visitor's cookie...
        status, _ = browser.post(
            "/groups/billing/reset",
            {"to": "latest", "step": "execute", "csrf": _hidden(topics, "csrf")},
            Origin="http://elsewhere.example",
        )
        assert status == 403
        # ...nor without the form's CSRF field, nor by a name that was re-pointed here.
        assert browser.post("/groups/billing/reset", {"to": "latest", "step": "preview"})[0] == 403
        assert browser.get("/topics", Host=f"elsewhere.example:{port}")[0] == 403
        csrf = _hidden(topics, "csrf")
        # One POST cannot skip the preview: a reset applies only a plan the console showed.
        status, body = browser.post(
            "/groups/billing/reset", {"to": "latest", "step": "execute", "csrf": csrf}
        )
        assert status == 409 and "was not previewed" in body
        assert _committed(scene.bootstrap, "billing") == list(COMMITTED)
        status, body = browser.post(
            "/groups/billing/reset", {"to": "latest", "step": "preview", "csrf": csrf}
        )
        assert status == 200 and 'id="reset-plan"' in body
        assert _committed(scene.bootstrap, "billing") == list(
            COMMITTED
        )  # a preview changes nothing
        status, _ = browser.post(
            "/groups/billing/reset",
            {
                "to": "latest",
                "topic": ORDERS,
                "offset": "",
                "step": "execute",
                "csrf": csrf,
                "plan": _hidden(body, "plan"),
            },
        )
        assert status == 200  # redirected to the group's page
        assert _committed(scene.bootstrap, "billing") == list(ORDERS_PER_PARTITION)
        # A group with members is refused: they would overwrite the new offsets.
        status, body = browser.post(
            "/groups/page-views/reset", {"to": "earliest", "step": "execute", "csrf": csrf}
        )
        assert status == 409 and "active member" in body
        # Creating a topic.
        status, _ = browser.post(
            "/topics", {"name": "made-by-console", "partitions": "2", "csrf": csrf}
        )
        assert status == 200 and "made-by-console" in browser.get("/topics")[1]
    finally:
        stop(console)


def test_pages_may_not_be_framed_elsewhere(scene: Scene) -> None:
    with urllib.request.urlopen(f"{scene.console_url}/topics", timeout=30) as response:
        assert response.headers["X-Frame-Options"] == "DENY"
        policy = response.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "default-src 'self'" in policy


def test_console_reads_tansu(tmp_path: Path) -> None:
    """Any Kafka-compatible cluster: topics and groups of Tansu, which nobody here wrote."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    tansu = TansuProcess()
    port = free_port()
    console = None
    try:

        async def setup() -> None:
            admin = AIOKafkaAdminClient(bootstrap_servers=tansu.bootstrap)
            await admin.start()
            await admin.create_topics([NewTopic("tansu-orders", 2, 1)])
            await admin.close()
            producer = AIOKafkaProducer(bootstrap_servers=tansu.bootstrap)
            await producer.start()
            for i in range(6):
                await producer.send_and_wait(
                    "tansu-orders", f"v{i}".encode(), key=b"k", partition=i % 2
                )
            await producer.stop()
            consumer = AIOKafkaConsumer(
                "tansu-orders",
                bootstrap_servers=tansu.bootstrap,
                group_id="tansu-readers",
                auto_offset_reset="earliest",
                enable_auto_commit=False,
            )
            await consumer.start()
            await consumer.getmany(timeout_ms=5000)
            await consumer.commit()
            await consumer.stop()

        asyncio.run(setup())
        console = spawn(
            ["console", "--bootstrap-servers", tansu.bootstrap, "--listen", f"127.0.0.1:{port}"],
            tmp_path / "console.log",
        )
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/brokers")
        topics = _get(f"{base}/topics")
        assert "tansu-orders" in topics
        assert "tansu-readers" in _get(f"{base}/groups")
        topic = _get(f"{base}/topics/tansu-orders")
        assert "Cluster unavailable" not in topic and 'data-figure="records"><b>6</b>' in topic
    finally:
        if console is not None:
            stop(console)
        tansu.stop()


def test_broker_serves_the_console_beside_it(tmp_path: Path) -> None:
    """`headrace broker --console-listen --schema-registry-listen`: the console comes up
    with the broker, as a client of its listener, decodes values with the registry
    beside it without being told its URL, serves the broker's Prometheus metrics at
    /metrics on its own port, and stops with the broker."""
    from prometheus_client.parser import text_string_to_metric_families

    broker_port, console_port, registry_port = free_port(), free_port(), free_port()
    broker = spawn(
        [
            "broker",
            "--data-dir",
            str(tmp_path / "data"),
            "--listen",
            f"127.0.0.1:{broker_port}",
            "--console-listen",
            f"127.0.0.1:{console_port}",
            "--schema-registry-listen",
            f"127.0.0.1:{registry_port}",
        ],
        tmp_path / "broker.log",
    )
    base, bootstrap = f"http://127.0.0.1:{console_port}", f"127.0.0.1:{broker_port}"
    try:
        wait_http(f"{base}/brokers")
        assert bootstrap in _get(f"{base}/brokers").replace(",", "")
        produce_avro(bootstrap, f"http://127.0.0.1:{registry_port}", AVRO_TOPIC, PAYMENTS[:1])
        shown = _get(f"{base}/topics/{AVRO_TOPIC}/messages")
        assert '"payer": "payer-0"' in html.unescape(shown), shown
        with urllib.request.urlopen(f"{base}/metrics", timeout=30) as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            families = {f.name: f for f in text_string_to_metric_families(response.read().decode())}
        produced = [
            s.value
            for s in families["headrace_broker_bytes_in"].samples
            if s.name == "headrace_broker_bytes_in_total" and s.labels["topic"] == AVRO_TOPIC
        ]
        assert produced and produced[0] > 0
        assert {"headrace_broker_requests", "headrace_broker_log_size_bytes"} <= set(families)
    finally:
        stop(broker)
    log = (tmp_path / "broker.log").read_text()
    assert broker.returncode == 0, log
    with pytest.raises(OSError):
        _get(f"{base}/brokers")
    # A clean start and stop: no refused connection before the broker listens, and no
    # traceback or pending task as the services beside it stop (they stop first).
    for noise in ("ERROR", "Traceback", "Task was destroyed", "CancelledError"):
        assert noise not in log, log


def test_the_allowed_hosts_flag_as_typed(scene: Scene, tmp_path: Path) -> None:
    """``headrace console --allowed-hosts`` adds names the console answers to; any other
    name in Host (a re-pointed DNS name) is still refused."""
    port = free_port()
    console = spawn(
        [
            "console",
            "--bootstrap-servers",
            scene.bootstrap,
            "--listen",
            f"127.0.0.1:{port}",
            "--allowed-hosts",
            "console.example,ops.example",
        ],
        tmp_path / "named-console.log",
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/brokers")
        browser = _Browser(base)
        assert browser.get("/topics", Host=f"console.example:{port}")[0] == 200
        assert browser.get("/topics", Host=f"ops.example:{port}")[0] == 200
        assert browser.get("/topics", Host=f"elsewhere.example:{port}")[0] == 403
    finally:
        stop(console)
