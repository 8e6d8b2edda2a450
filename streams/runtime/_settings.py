"""One validated settings object for a running application.

Values come from these places; a later one wins over an earlier one:

1. the defaults written below;
2. settings files (TOML, or JSON when the name ends in ``.json``), later files winning;
3. ``base``: an App's own constructor arguments, when ``headrace run`` re-reads them;
4. environment variables ``HEADRACE_<FIELD>`` (``HEADRACE_COMMIT_INTERVAL_MS=200``);
5. keyword arguments: ``App(...)``'s own in a program, ``headrace run``'s flags
   (only the flags given) under the command.

So ``App(bootstrap_servers=...)`` in a program wins over the environment, which is what a
program that passes its own value means; under ``headrace run`` the App's arguments sit
below the environment and the flags, which is what an operator deploying it means.
Choices of fixed words (``log_level``, ``log_format``) are read in any case.

The layering is ``load``'s twenty lines rather than pydantic-settings': its sources cannot
put the App's own arguments between the files and the environment without overriding
its private methods, nor name the variable an invalid value came from.

>>> AppSettings.load(env={}, application_id="clicks").commit_interval
1000
>>> AppSettings.load(env={}, application_id="clicks",
...                  processing_guarantee="exactly_once_v2").commit_interval
100
"""

from __future__ import annotations

import json
import os
import pathlib
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pydantic

from headrace.base import ClientSecurity

from ._errors import SettingsError

ENV_PREFIX = "HEADRACE_"

# The choices of fixed words, named once for the settings and for ``App(...)``'s keywords.
ErrorAction = Literal["fail", "continue", "dead_letter"]
Guarantee = Literal["at_least_once", "exactly_once_v2"]
Acks = Literal["all", "1", "0"]
Compression = Literal["none", "gzip", "snappy", "lz4", "zstd"]
OffsetReset = Literal["earliest", "latest"]
LogFormat = Literal["json", "text"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]

# Kafka Streams commits every 30 s under at-least-once; a shorter default keeps the
# replay after a crash small, which matters more here than the cost of a commit.
DEFAULT_COMMIT_MS = {"at_least_once": 1000, "exactly_once_v2": 100}


class AppSettings(pydantic.BaseModel):
    """Everything ``streams.App`` reads; see the module docstring for precedence."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    application_id: str = pydantic.Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    bootstrap_servers: str = "127.0.0.1:9092"
    processing_guarantee: Guarantee = "at_least_once"
    state_dir: pathlib.Path = pathlib.Path(tempfile.gettempdir()) / "headrace-streams"
    commit_interval_ms: int | None = pydantic.Field(default=None, ge=1)
    num_standby_replicas: int = pydantic.Field(default=0, ge=0)
    # Interactive queries and health: None turns the HTTP server off, 0 picks a free port.
    http_host: str = "127.0.0.1"
    http_port: int | None = pydantic.Field(default=None, ge=0, le=65535)
    # host:port other instances use to reach this one; defaults to the HTTP listen address.
    application_server: str | None = None
    # Records per poll: 5,000 keeps a round's tuples in the CPU caches (20,000 ran the
    # stateless benchmark 30% slower), and still amortises the round's fixed costs.
    max_poll_records: int = pydantic.Field(default=5_000, ge=1)
    poll_timeout_ms: int = pydantic.Field(default=100, ge=0)
    fetch_max_bytes: int = pydantic.Field(default=64 * 1024 * 1024, ge=1024)
    max_partition_fetch_bytes: int = pydantic.Field(default=8 * 1024 * 1024, ge=1024)
    producer_batch_bytes: int = pydantic.Field(default=1024 * 1024, ge=1024)
    linger_ms: int = pydantic.Field(default=5, ge=0)
    acks: Acks = "all"
    compression_type: Compression = "none"
    auto_offset_reset: OffsetReset = "earliest"
    session_timeout_ms: int = pydantic.Field(default=10_000, ge=1000)
    # How long start-up waits, in all, for a cluster that answers with retriable errors
    # (a broker down, a leader being elected) before it gives up; as Kafka clients'
    # default.api.timeout.ms, one minute.
    startup_timeout_ms: int = pydantic.Field(default=60_000, ge=0)
    # Exactly-once: the instance's name in its transactional id (stable across restarts;
    # None: a name kept in the state directory), the transaction timeout (None: half the
    # session timeout) and how often a commit also snapshots the RocksDB stores.
    instance_id: str | None = pydantic.Field(default=None, pattern=r"^[A-Za-z0-9._-]+$")
    transaction_timeout_ms: int | None = pydantic.Field(default=None, ge=100)
    snapshot_interval_ms: int = pydantic.Field(default=5_000, ge=0)
    heartbeat_interval_ms: int = pydantic.Field(default=1_000, ge=100)
    deserialization_error_handler: ErrorAction | None = None
    processing_error_handler: ErrorAction = "fail"
    production_error_handler: ErrorAction = "fail"
    dead_letter_topic: str | None = None
    log_format: LogFormat = "text"
    log_level: LogLevel = "INFO"
    # Reaching a secured cluster; every client the App opens gets these. Passwords are
    # SecretStr: repr, str, logs and status show them as asterisks.
    security_protocol: SecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: pydantic.SecretStr | None = None
    ssl_cafile: pathlib.Path | None = None
    ssl_certfile: pathlib.Path | None = None
    ssl_keyfile: pathlib.Path | None = None
    ssl_password: pydantic.SecretStr | None = None
    ssl_check_hostname: bool = True
    # Internal topics (changelogs, repartition topics): -1 is the broker's default, as in
    # Kafka Streams; ``topic_configs`` are Kafka Streams' ``topic.``-prefixed configs.
    replication_factor: int = pydantic.Field(default=-1, ge=-1)
    topic_configs: dict[str, str] = pydantic.Field(default_factory=dict)

    @pydantic.field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @pydantic.field_validator("security_protocol", "sasl_mechanism", mode="before")
    @classmethod
    def _upper_words(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @pydantic.field_validator("topic_configs", mode="before")
    @classmethod
    def _configs_from_json(cls, value: Any) -> Any:
        # From HEADRACE_TOPIC_CONFIGS: a JSON object of strings.
        return json.loads(value) if isinstance(value, str) else value

    @pydantic.field_validator("log_format", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @pydantic.model_validator(mode="after")
    def _check(self) -> AppSettings:
        if self.heartbeat_interval_ms * 3 > self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be at most a third of session_timeout_ms")
        if self.replication_factor == 0:
            raise ValueError("replication_factor must be -1 (the broker's default) or >= 1")
        if self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL") and (
            self.sasl_username is None or self.sasl_password is None
        ):
            raise ValueError(
                f"security_protocol {self.security_protocol} needs sasl_username and sasl_password"
            )
        if self.transaction_timeout >= self.session_timeout_ms:
            # A dead instance's open transaction must be aborted before the group hands
            # its partitions to another instance, or the new owner's reads stall on it.
            raise ValueError("transaction_timeout_ms must be below session_timeout_ms")
        return self

    @property
    def transaction_timeout(self) -> int:
        """Milliseconds before the broker aborts an open transaction of this instance."""
        if self.transaction_timeout_ms is not None:
            return self.transaction_timeout_ms
        return self.session_timeout_ms // 2

    def client_security(self) -> ClientSecurity:
        """The security options every Kafka client of this App is opened with."""

        def secret(value: pydantic.SecretStr | None) -> str | None:
            return None if value is None else value.get_secret_value()

        def path(value: pathlib.Path | None) -> str | None:
            return None if value is None else str(value)

        return ClientSecurity(
            security_protocol=self.security_protocol,
            sasl_mechanism=self.sasl_mechanism,
            sasl_username=self.sasl_username,
            sasl_password=secret(self.sasl_password),
            ssl_cafile=path(self.ssl_cafile),
            ssl_certfile=path(self.ssl_certfile),
            ssl_keyfile=path(self.ssl_keyfile),
            ssl_password=secret(self.ssl_password),
            ssl_check_hostname=self.ssl_check_hostname,
        )

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == "exactly_once_v2"

    @property
    def commit_interval(self) -> int:
        """Milliseconds between commits; the default depends on the guarantee."""
        if self.commit_interval_ms is not None:
            return self.commit_interval_ms
        return DEFAULT_COMMIT_MS[self.processing_guarantee]

    @property
    def dead_letters(self) -> str:
        return self.dead_letter_topic or f"{self.application_id}-dead-letters"

    @classmethod
    def load(
        cls,
        file: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | None] | None = None,
        env: Mapping[str, str] | None = None,
        *,
        base: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> AppSettings:
        """Merge defaults, ``file`` (one or several), ``base``, ``env`` (default
        ``os.environ``) and ``overrides``, in that order; ``None`` values are absent."""
        values: dict[str, Any] = {}
        files = file if isinstance(file, Sequence) and not isinstance(file, str) else [file]
        for one in files:
            if one is not None:
                values.update(read_settings_file(pathlib.Path(one)))
        values.update({k: v for k, v in (base or {}).items() if v is not None})
        environ = os.environ if env is None else env
        from_env: dict[str, str] = {}
        for name in cls.model_fields:
            raw = environ.get(ENV_PREFIX + name.upper())
            if raw is not None and raw != "":
                values[name] = raw
                from_env[name] = ENV_PREFIX + name.upper()
        given = {k: v for k, v in overrides.items() if v is not None}
        values.update(given)
        try:
            return cls.model_validate(values)
        except pydantic.ValidationError as error:

            def where(loc: tuple[Any, ...]) -> str:
                field = ".".join(map(str, loc)) or "settings"
                if field in from_env and field not in given:
                    return f"{field} (from {from_env[field]})"
                return field

            problems = "; ".join(f"{where(e['loc'])}: {e['msg']}" for e in error.errors())
            raise SettingsError(f"invalid settings: {problems}") from None


def read_settings_file(path: pathlib.Path) -> dict[str, Any]:
    """One settings file (TOML, or JSON by its suffix) as setting names and values."""
    try:
        text = path.read_text()
    except OSError as error:
        raise SettingsError(f"cannot read settings file {path}: {error}") from error
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        raise SettingsError(f"settings file {path} is malformed: {error}") from error
    if not isinstance(data, dict):
        raise SettingsError(f"settings file {path} must hold a table of settings")
    values: dict[str, Any] = {}
    for key, value in data.items():
        key = str(key)
        if key.startswith("topic.") and key != "topic.":
            # Kafka Streams' spelling: ``"topic.min.insync.replicas" = "2"``.
            values.setdefault("topic_configs", {})[key[len("topic.") :]] = str(value)
        else:
            values[key.replace("-", "_").replace(".", "_")] = value
    if isinstance(data.get("topic"), dict):  # or a [topic] table
        values["topic_configs"] = {
            **{k: str(v) for k, v in data["topic"].items()},
            **values.get("topic_configs", {}),
        }
        values.pop("topic", None)
    return values
