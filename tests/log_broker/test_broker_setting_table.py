"""Every plain broker setting of BrokerConfig's table is read from server.properties,
reported by DescribeConfigs and (where the row has one) set by its flag, to the same value.

One ``headrace broker`` process per way: left at its defaults, given every setting in a
server.properties file, given every flag. Each setting gets a value of its own that is
not its default, so a setting read into the wrong field, or not read at all, shows.
"""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from brokerproc import free_port
from confluent_kafka.admin import AdminClient, ConfigResource

from headrace.cli import build_parser
from headrace.log_broker._config import BROKER_SETTINGS
from headrace.log_broker._server_properties import broker_settings
from headrace.log_broker._setting_table import BOOLEAN, LIST, STRING, BrokerSetting

FLAG_ROWS = tuple(row for row in BROKER_SETTINGS if row.flag_name is not None)


def sample(index: int, row: BrokerSetting) -> Any:
    """A value that is not the row's default and not any other row's value."""
    if row.kind is BOOLEAN:
        return not row.default
    if row.kind is LIST:
        return tuple(reversed(row.default))
    if row.kind is STRING:  # a place, never written to: no topic asks for a table
        return f"/nonexistent/{row.key}-{index}"
    return (row.default or 1000) * 2 + index + 1


SAMPLES = {row.key: sample(i, row) for i, row in enumerate(BROKER_SETTINGS)}
NODE_ID = SAMPLES["node.id"]


def as_text(row: BrokerSetting, value: Any) -> str:
    return ",".join(value) if row.kind is LIST else str(value).lower()


@contextmanager
def broker(tmp: Path, *args: str) -> Iterator[tuple[str, Path]]:
    """``headrace broker`` with exactly these arguments besides --listen (no test defaults)."""
    tmp.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = tmp / "broker.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "headrace", "broker", "--listen", f"127.0.0.1:{port}", *args],
            stdout=out,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"not listening after 20 s: {log.read_text()}"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        yield f"127.0.0.1:{port}", log
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


def describe(bootstrap: str, node_id: int) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, str(node_id))
    described = admin.describe_configs([resource])[resource].result(timeout=15)
    return {name: entry.value for name, entry in described.items()}


def properties() -> dict[str, str]:
    return {row.key: as_text(row, SAMPLES[row.key]) for row in BROKER_SETTINGS}


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """DescribeConfigs' broker entries of each way, and the file way's log."""
    tmp = tmp_path_factory.mktemp("settings")
    ways: dict[str, dict[str, str]] = {}
    with broker(tmp / "defaults", "--data-dir", str(tmp / "defaults" / "data")) as (bs, _):
        ways["defaults"] = describe(bs, 1)
    config = tmp / "server.properties"
    lines = [f"log.dirs={tmp / 'file' / 'data'}", *(f"{k}={v}" for k, v in properties().items())]
    config.write_text("\n".join(lines) + "\n")
    with broker(tmp / "file", "--config", str(config)) as (bs, log):
        ways["file"] = describe(bs, NODE_ID)
        ways["file log"] = {"text": log.read_text()}
    flags: list[str] = []
    for row in FLAG_ROWS:
        assert row.flag_name is not None
        value = SAMPLES[row.key]
        flags += [row.flag_name] if row.kind is BOOLEAN else [row.flag_name, str(value)]
    with broker(tmp / "flags", "--data-dir", str(tmp / "flags" / "data"), *flags) as (bs, _):
        ways["flags"] = describe(bs, 1)
    return ways


def test_every_sample_differs_from_its_default_and_from_the_others() -> None:
    assert len(BROKER_SETTINGS) >= 25
    assert all(SAMPLES[row.key] != row.default for row in BROKER_SETTINGS)
    numbers = [v for v in SAMPLES.values() if isinstance(v, int) and not isinstance(v, bool)]
    assert len(set(numbers)) == len(numbers)


@pytest.mark.parametrize("row", BROKER_SETTINGS, ids=lambda row: row.key)
def test_the_properties_parser_reads_every_key_and_synonym(row: BrokerSetting) -> None:
    for key in row.keys:
        assert broker_settings({key: as_text(row, SAMPLES[row.key])})[row.field] == SAMPLES[row.key]


@pytest.mark.parametrize("row", BROKER_SETTINGS, ids=lambda row: row.key)
def test_describe_configs_reports_the_default_and_the_value_from_the_file(
    row: BrokerSetting, reported: dict[str, dict[str, str]]
) -> None:
    for key in row.keys:
        if row.default is None:  # a limit derived from the open-file limit at start
            assert reported["defaults"][key].isdigit()
        else:
            assert reported["defaults"][key] == as_text(row, row.default)
        assert reported["file"][key] == as_text(row, SAMPLES[row.key])


def test_no_key_of_the_table_is_reported_as_unused(reported: dict[str, dict[str, str]]) -> None:
    assert "not used by this broker" not in reported["file log"]["text"]


@pytest.mark.parametrize("row", FLAG_ROWS, ids=lambda row: row.key)
def test_a_flag_sets_what_its_key_sets(
    row: BrokerSetting, reported: dict[str, dict[str, str]]
) -> None:
    for key in row.keys:
        assert reported["flags"][key] == as_text(row, SAMPLES[row.key])


def broker_parser() -> argparse.ArgumentParser:
    for action in build_parser()._actions:  # argparse keeps subcommands only here
        if isinstance(action, argparse._SubParsersAction) and "broker" in action.choices:
            parser: argparse.ArgumentParser = action.choices["broker"]
            return parser
    raise AssertionError("no broker subcommand")


def test_every_flag_of_before_the_table_is_kept_with_its_help() -> None:
    by_flag = {a.option_strings[0]: a for a in broker_parser()._actions if a.option_strings}
    for row in FLAG_ROWS:
        assert by_flag[row.flag_name or ""].help == row.help
    assert {
        "--num-partitions",
        "--no-auto-create-topics",
        "--group-initial-rebalance-delay-ms",
        "--log-cleaner-backoff-ms",
        "--group-min-session-timeout-ms",
        "--group-consumer-session-timeout-ms",
        "--group-consumer-heartbeat-interval-ms",
        "--transaction-max-timeout-ms",
        "--fetch-max-bytes",
        "--fetch-response-max-memory-bytes",
        "--socket-request-max-bytes",
        "--connection-failed-authentication-delay-ms",
        "--sasl-server-max-receive-size",
        "--max-connections",
        "--max-connections-per-ip",
        "--connections-max-idle-ms",
        "--socket-request-read-timeout-ms",
        "--max-broker-partitions",
        "--max-partitions-per-request",
        "--max-in-flight-requests-per-connection",
        "--table-location",
        "--table-schema-registry-url",
    } == {row.flag_name for row in FLAG_ROWS}
