"""The limits added for SASL clients reach the broker when given as the flags users type.

Their effect is tested in-process (tests/log_broker/security/); here the ``headrace broker``
process is started with each flag as spelled in ``--help``, and DescribeConfigs (what
Kafka's tools read) must report the value given, not the default.
"""

from __future__ import annotations

from pathlib import Path

from brokerproc import BrokerProcess
from confluent_kafka.admin import AdminClient, ConfigResource


def broker_configs(bootstrap: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    described = admin.describe_configs([resource])[resource].result(timeout=15)
    return {name: entry.value for name, entry in described.items()}


def test_sasl_limits_are_set_by_their_flags(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "defaults") as defaults:
        before = broker_configs(defaults.bootstrap)
    with BrokerProcess(
        tmp_path / "flagged",
        "--sasl-server-max-receive-size",
        "4096",
        "--connection-failed-authentication-delay-ms",
        "750",
    ) as flagged:
        after = broker_configs(flagged.bootstrap)
    assert before["sasl.server.max.receive.size"] == str(512 * 1024)
    assert before["connection.failed.authentication.delay.ms"] == "100"
    assert after["sasl.server.max.receive.size"] == "4096"
    assert after["connection.failed.authentication.delay.ms"] == "750"
