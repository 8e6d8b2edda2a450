"""Settings of a streams application that the task executor and the test driver read."""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ._deserialization import DeserializationHandler, LogAndFailHandler
from ._errors import ConfigError
from ._protocols import TimestampExtractor


@dataclass(frozen=True)
class StreamsConfig:
    """Application-wide settings.

    ``default_key_serde``/``default_value_serde`` apply wherever a node has none of its
    own; left ``None`` they pass bytes through unchanged. Keys of :meth:`of` may be
    written the Kafka way (``"application.id"``) or as field names.
    """

    application_id: str = "topology-test-driver"
    state_dir: pathlib.Path | None = None
    default_key_serde: Any = None
    default_value_serde: Any = None
    default_timestamp_extractor: TimestampExtractor | None = None
    deserialization_handler: DeserializationHandler = field(default_factory=LogAndFailHandler)

    @classmethod
    def of(cls, config: StreamsConfig | Mapping[str, Any] | None) -> StreamsConfig:
        if config is None:
            return cls()
        if isinstance(config, StreamsConfig):
            return config
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in config.items():
            name = key.replace(".", "_").replace("-", "_")
            if name not in known:
                raise ConfigError(f"unknown streams setting {key!r}")
            values[name] = pathlib.Path(value) if name == "state_dir" else value
        return cls(**values)
