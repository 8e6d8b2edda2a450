"""The console tests' fixtures: the scene of ``console_scene.py``, with a read-only
console on it, and a headless browser."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from brokerproc import BrokerProcess, free_port

sys.path.insert(0, str(Path(__file__).parent))

from console_scene import (
    AVRO_TOPIC,
    JOIN_APP,
    PAYMENTS,
    Scene,
    produce_avro,
    setup_cluster,
    spawn,
    stop,
    wait_http,
)
from registryproc import wait_listening

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    tmp = tmp_path_factory.mktemp("console")
    registry_port, broker_port, metrics_port = free_port(), free_port(), free_port()
    registry_url = f"http://127.0.0.1:{registry_port}"
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    # An authorizer that lets everyone do what no ACL names: the scene's ACLs (the
    # ACLs page's) name only resources nothing else here uses.
    config = tmp / "server.properties"
    config.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:{broker_port}\n"
        f"authorizer.class.name={STANDARD_AUTHORIZER}\n"
        "allow.everyone.if.no.acl.found=true\n"
    )
    with BrokerProcess(
        tmp / "data",
        "--schema-registry-listen",
        f"127.0.0.1:{registry_port}",
        "--metrics-listen",
        f"127.0.0.1:{metrics_port}",
        port=broker_port,
        config=config,
    ) as broker:
        assert broker.proc is not None
        txn = setup_cluster(broker.bootstrap)
        wait_listening(registry_port, broker.proc)
        produce_avro(broker.bootstrap, registry_url, AVRO_TOPIC, PAYMENTS)
        app_port, join_port, console_port = free_port(), free_port(), free_port()
        app = spawn(
            [
                "run",
                "headrace.examples.page_views:build_topology",
                "--application-id",
                "page-views",
                "--bootstrap-servers",
                broker.bootstrap,
                "--state-dir",
                str(tmp / "state"),
                "--http-port",
                str(app_port),
            ],
            tmp / "app.log",
        )
        join_app = spawn(
            [
                "run",
                "headrace.examples.click_enrichment:build_topology",
                "--application-id",
                JOIN_APP,
                "--bootstrap-servers",
                broker.bootstrap,
                "--state-dir",
                str(tmp / "join-state"),
                "--http-port",
                str(join_port),
            ],
            tmp / "join-app.log",
        )
        console = spawn(
            [
                "console",
                "--bootstrap-servers",
                broker.bootstrap,
                "--listen",
                f"127.0.0.1:{console_port}",
                "--apps",
                f"127.0.0.1:{app_port},127.0.0.1:{join_port}",
                "--schema-registry",
                registry_url,
                "--broker-metrics",
                metrics_url,
                "--chart-every",
                "1",
            ],
            tmp / "console.log",
        )
        try:
            wait_http(f"http://127.0.0.1:{app_port}/health")
            wait_http(f"http://127.0.0.1:{join_port}/health")
            wait_http(f"http://127.0.0.1:{console_port}/brokers")
            yield Scene(
                broker.bootstrap,
                f"http://127.0.0.1:{app_port}",
                f"http://127.0.0.1:{console_port}",
                tmp,
                tmp / "data",
                registry_url,
                metrics_url,
                f"http://127.0.0.1:{join_port}",
            )
        finally:
            stop(console)
            stop(join_app)
            stop(app)
            del txn


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless chromium through chromedriver (Debian's chromium and chromium-driver)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    assert chromium and driver_path, (
        "the console's browser tests need Debian's chromium and chromium-driver"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    try:
        yield driver
    finally:
        driver.quit()
