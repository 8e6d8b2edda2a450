"""The console shows a table topic's lag, read from the table's Delta log and the
topic's end offsets: beside the broker (which hands it its table location) and on its own
with ``--table-location``. A headless chromium reads the pages; the figures are compared
with the Delta log and the offsets the producer was given."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from brokerproc import BrokerProcess, free_port
from confluent_kafka import Producer
from deltalake import DeltaTable
from table_topic_io import create_topic, produce, table_config

sys.path.insert(0, str(Path(__file__).parent.parent / "console"))

from console_browsing import open_page, table
from console_scene import spawn, stop, wait_http

FRESH = "fresh-orders"  # commits every 300 ms: caught up
STALE = "stale-orders"  # commits every 10 minutes: nothing committed while the test runs
PLAIN = "plain-orders"
RECORD_AGE_S = 120.0  # the produced records' timestamps lie this far in the past


@pytest.fixture(scope="module")
def console_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def broker_args(console_port: int) -> tuple[str, ...]:
    """The broker runs the console beside it, and hands it the table location."""
    return ("--console-listen", f"127.0.0.1:{console_port}")


@pytest.fixture(scope="module")
def beside(broker: BrokerProcess, console_port: int) -> str:
    """The address of the console that runs beside the broker."""
    url = f"http://127.0.0.1:{console_port}"
    wait_http(url + "/topics")
    return url


@pytest.fixture(scope="module")
def alone(
    broker: BrokerProcess, lake: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A console run on its own, told where the tables are."""
    port = free_port()
    log = tmp_path_factory.mktemp("console-alone") / "console.log"
    args = ["console", "--bootstrap-servers", broker.bootstrap, "--listen", f"127.0.0.1:{port}"]
    proc = spawn([*args, "--table-location", str(lake)], log)
    try:
        wait_http(f"http://127.0.0.1:{port}/topics")
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver_path, "these tests need Debian's chromium and chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def produced(broker: BrokerProcess, lake: Path) -> dict[str, Any]:
    """Three topics, 30 records each over 3 partitions (10 each), all stamped
    ``RECORD_AGE_S`` ago plus their index in ms; returns the newest timestamp (ms)."""
    topics = {
        FRESH: table_config("key_value", 300),
        STALE: table_config("key_value", 600_000),
        PLAIN: {},
    }
    for name, config in topics.items():
        create_topic(broker.bootstrap, name, 3, config)
    base_ms = int((time.time() - RECORD_AGE_S) * 1000)
    records = [
        {"key": b"k%d" % i, "value": b"v", "partition": i % 3, "timestamp": base_ms + i}
        for i in range(30)
    ]
    for name in topics:
        produce(broker.bootstrap, name, records)
    deadline = time.monotonic() + 60
    while covered(lake / FRESH) != {0: 10, 1: 10, 2: 10}:
        assert time.monotonic() < deadline, f"the table covers {covered(lake / FRESH)}"
        time.sleep(0.3)
    return {"newest_ms": base_ms + 29}


def covered(path: Path) -> dict[int, int]:
    if not (path / "_delta_log").exists():
        return {}
    dt = DeltaTable(str(path))
    found = {p: dt.transaction_version(f"headrace.table/{path.name}/{p}") for p in range(3)}
    return {p: v for p, v in found.items() if v is not None}


def utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def topic_rows(browser: Any, base: str, name: str) -> dict[str, list[str]]:
    open_page(browser, f"{base}/topics", name)
    return {row[0]: row for row in table(browser, "topics")}


def check_seconds(shown: str, newest_ms: int, before: float, after: float) -> None:
    """The page's seconds behind lies between what it was before and after the load."""
    seconds = float(shown)
    assert before - newest_ms / 1000 - 0.1 <= seconds <= after - newest_ms / 1000 + 0.1, (
        shown,
        before - newest_ms / 1000,
    )


@pytest.mark.parametrize("where", ["beside", "alone"])
def test_topics_page_shows_each_table_topics_lag(
    beside: str,
    alone: str,
    lake: Path,
    produced: dict[str, Any],
    browser: Any,
    where: str,
) -> None:
    base = beside if where == "beside" else alone
    before = time.time()
    rows = topic_rows(browser, base, f"table-lag-topics-{where}")
    after = time.time()
    last_commit = DeltaTable(str(lake / FRESH)).history(1)[0]["timestamp"]
    header = ["TABLE", "LAST COMMIT", "RECORDS BEHIND", "SECONDS BEHIND"]
    from selenium.webdriver.common.by import By

    heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "table#topics thead th")]
    assert heads[-4:] == header
    fresh = rows[FRESH]
    assert fresh[6:9] == ["key_value", utc(last_commit), "0"]
    check_seconds(fresh[9], produced["newest_ms"], before, after)
    # Nothing committed yet: every record is behind, and there is no commit or record.
    assert rows[STALE][6:] == ["key_value", "-", "30", "-"]
    assert rows[PLAIN][6:] == ["", "", "", ""]


def test_topic_page_follows_new_records(
    broker: BrokerProcess, beside: str, alone: str, produced: dict[str, Any], browser: Any
) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(7):
        producer.produce(STALE, value=b"more", partition=i % 3)
    assert producer.flush(30) == 0
    for base, name in ((beside, "beside"), (alone, "alone")):
        open_page(browser, f"{base}/topics/{STALE}", f"table-lag-topic-{name}")
        assert table(browser, "table-lag") == [["key_value", "-", "37", "-"]]
        open_page(browser, f"{base}/topics/{PLAIN}", f"table-lag-plain-{name}")
        from selenium.webdriver.common.by import By

        assert not browser.find_elements(By.CSS_SELECTOR, "table#table-lag")


def test_a_console_without_a_location_shows_no_table_columns(
    broker: BrokerProcess, produced: dict[str, Any], browser: Any, tmp_path: Path
) -> None:
    port = free_port()
    args = ["console", "--bootstrap-servers", broker.bootstrap, "--listen", f"127.0.0.1:{port}"]
    proc: subprocess.Popen[bytes] = spawn(args, tmp_path / "console.log")
    try:
        wait_http(f"http://127.0.0.1:{port}/topics")
        rows = topic_rows(browser, f"http://127.0.0.1:{port}", "table-lag-none")
        assert len(rows[FRESH]) == 6
    finally:
        stop(proc)
