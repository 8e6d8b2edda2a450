"""An Avro record schema from a pydantic model's fields.

str: string; int: long; float: double; bool: boolean; bytes: bytes; datetime:
timestamp-millis; date: date; UUID: string (uuid); Decimal: string; Enum: enum;
list[X]: array; dict[str, X]: map; a nested model: record; X | None: a union with null
first, default null. A field's default goes into the schema when Avro can state it.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import types
import typing
import uuid
from typing import Any

import pydantic
from pydantic_core import PydanticUndefined

PRIMITIVE = {
    str: "string",
    int: "long",
    float: "double",
    bool: "boolean",
    bytes: "bytes",
    decimal.Decimal: "string",
}


def avro_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    schema: dict[str, Any] = _Builder().record(model)
    return schema


class _Builder:
    def __init__(self) -> None:
        self.defined: set[str] = set()

    def record(self, model: type[pydantic.BaseModel]) -> Any:
        name = model.__name__
        if name in self.defined:
            return name
        self.defined.add(name)
        fields = []
        for field_name, info in model.model_fields.items():
            field: dict[str, Any] = {
                "name": info.alias or field_name,
                "type": self.type(info.annotation),
            }
            default = info.default
            if default is not PydanticUndefined and _plain(default):
                if isinstance(default, enum.Enum):
                    default = default.value
                field["default"] = default
            fields.append(field)
        return {"type": "record", "name": name, "fields": fields}

    def type(self, annotation: Any) -> Any:
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin in (typing.Union, types.UnionType):
            branches = [self.type(a) for a in args if a is not type(None)]
            return ["null", *branches] if type(None) in args else branches
        if origin is typing.Annotated:
            return self.type(args[0])
        if origin in (list, tuple, set, frozenset):
            return {"type": "array", "items": self.type(args[0] if args else Any)}
        if origin is dict:
            return {"type": "map", "values": self.type(args[1] if args else Any)}
        if isinstance(annotation, type):
            if issubclass(annotation, pydantic.BaseModel):
                return self.record(annotation)
            if issubclass(annotation, enum.Enum):
                if annotation.__name__ in self.defined:
                    return annotation.__name__
                self.defined.add(annotation.__name__)
                return {
                    "type": "enum",
                    "name": annotation.__name__,
                    "symbols": [str(m.value) for m in annotation],
                }
            if issubclass(annotation, bool):
                return "boolean"
            if issubclass(annotation, datetime.datetime):
                return {"type": "long", "logicalType": "timestamp-millis"}
            if issubclass(annotation, datetime.date):
                return {"type": "int", "logicalType": "date"}
            if issubclass(annotation, uuid.UUID):
                return {"type": "string", "logicalType": "uuid"}
            for kind, name in PRIMITIVE.items():
                if issubclass(annotation, kind):
                    return name
        raise TypeError(f"no Avro type for {annotation!r}")


def _plain(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, str | int | float | bool | enum.Enum)
        or (isinstance(value, list) and not value)
    )
