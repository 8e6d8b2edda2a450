"""Protobuf from ``.proto`` text alone, for tools with no generated classes
(``headrace produce --value-format protobuf``): the registry compiles the text, and the
message class is built from the descriptor it hands back. Values are dicts (the JSON
mapping of the first message of the file, or of ``message``)."""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

from . import _wire
from ._client import RegistryClient
from ._errors import SerdeSchemaError
from ._schema import _well_known
from ._serdes import SchemaSerde, SubjectStrategy


class DynamicProtobufSerde(SchemaSerde):
    schema_type = "PROTOBUF"

    def __init__(
        self,
        proto_text: str,
        registry: str | RegistryClient,
        *,
        message: str | None = None,
        is_key: bool = False,
        subject_strategy: str | SubjectStrategy = "topic",
    ) -> None:
        super().__init__(
            "protobuf(.proto)",
            proto_text,
            message,
            registry,
            is_key=is_key,
            auto_register=True,
            subject_strategy=subject_strategy,
        )
        self._message = message
        self._classes: dict[int, tuple[Any, bytes]] = {}

    def _class(self, schema_id: int) -> tuple[Any, bytes]:
        found = self._classes.get(schema_id)
        if found is None:
            answer = self.registry.schema(schema_id, "serialized")
            file = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(answer["schema"]))
            pool = descriptor_pool.DescriptorPool()
            for dep in file.dependency:
                pool.Add(_well_known(dep))
            pool.Add(file)
            described = pool.FindFileByName(file.name)
            names = [m.name for m in file.message_type]
            if not names:
                raise SerdeSchemaError("the .proto file defines no message")
            name = (self._message or names[0]).rsplit(".", 1)[-1]
            if name not in names:
                raise SerdeSchemaError(f"no top-level message {name!r} in the .proto file")
            descriptor = described.message_types_by_name[name]
            found = (
                message_factory.GetMessageClass(descriptor),
                _wire.message_indexes([names.index(name)]),
            )
            self._classes[schema_id] = found
        return found

    def encode(self, topic: str, obj: Any) -> bytes:
        schema_id = self.schema_id(topic)
        cls, indexes = self._class(schema_id)
        message = json_format.ParseDict(obj, cls())
        payload: bytes = message.SerializeToString()
        return _wire.header(schema_id) + indexes + payload

    def decode(self, data: bytes) -> Any:
        schema_id, rest = _wire.split(data)
        cls, _ = self._class(schema_id)
        _indexes, payload = _wire.read_message_indexes(rest)
        return json_format.MessageToDict(
            cls.FromString(bytes(payload)), preserving_proto_field_name=True
        )
