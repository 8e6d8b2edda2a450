"""Client security settings: where they come from, that every client gets them, and that
secrets never show."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from headrace.streams.runtime import AppSettings, SettingsError
from headrace.streams.runtime._aiokafka import AiokafkaClients

SECRET = "s3cr3t-do-not-print"


def secured(**extra: Any) -> AppSettings:
    return AppSettings.load(
        env={},
        application_id="app",
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="app",
        sasl_password=SECRET,
        **extra,
    )


def test_environment_and_file_give_security_and_topic_configs(tmp_path: Path) -> None:
    settings_file = tmp_path / "app.toml"
    settings_file.write_text(
        'security_protocol = "sasl_plaintext"\nsasl_username = "u"\n'
        '"topic.min.insync.replicas" = 2\n[topic]\n"retention.ms" = "1"\n'
    )
    settings = AppSettings.load(
        settings_file,
        env={"HEADRACE_SASL_PASSWORD": SECRET, "HEADRACE_REPLICATION_FACTOR": "3"},
        application_id="app",
    )
    assert settings.security_protocol == "SASL_PLAINTEXT"
    assert settings.client_security().sasl_password == SECRET
    assert settings.replication_factor == 3
    assert settings.topic_configs == {"min.insync.replicas": "2", "retention.ms": "1"}
    assert AppSettings.load(env={}, application_id="a").replication_factor == -1


def test_secrets_never_show_in_repr_str_or_errors() -> None:
    settings = secured(ssl_password="key-" + SECRET)
    for text in (
        repr(settings),
        str(settings),
        repr(settings.client_security()),
        str(settings.client_security()),
    ):
        assert SECRET not in text
    with pytest.raises(SettingsError) as refused:
        AppSettings.load(
            env={}, application_id="a", security_protocol="SASL_SSL", sasl_password=SECRET
        )
    assert SECRET not in str(refused.value) and "sasl_username" in str(refused.value)


async def test_every_client_the_app_opens_gets_the_security_options() -> None:
    clients = AiokafkaClients(secured(replication_factor=3))
    opened = [
        clients.group_consumer("app", cast(Any, object()))._consumer,
        clients.changelog_reader()._consumer,
        clients.global_reader()._consumer,
        clients.producer()._producer,
        clients.admin()._admin,
    ]
    for client in opened:
        inner = getattr(client, "_client", None) or client.client  # the producer's is public
        assert (
            inner._security_protocol,
            inner._sasl_mechanism,
            inner._sasl_plain_username,
            inner._sasl_plain_password,
        ) == ("SASL_SSL", "SCRAM-SHA-512", "app", SECRET), type(client)
        assert inner._ssl_context is not None
    admin = clients.admin()
    assert admin._replication == 3
    for client in [*opened, admin._admin]:  # never started: closing releases nothing else
        await (client.close() if hasattr(client, "close") else client.stop())
