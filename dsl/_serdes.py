"""Serdes: objects to bytes and back, byte-for-byte as Kafka's Java serializers do.

* ``integer()``: 4 bytes, big-endian, two's complement (``IntegerSerializer``)
* ``long()``: 8 bytes, big-endian (``LongSerializer``); ``short()``: 2 bytes
* ``double()``: IEEE-754 binary64, big-endian (``DoubleSerializer``); ``float()``: binary32
* ``string()``: UTF-8 (``StringSerializer``); ``uuid()``: its 36-character string, UTF-8
* ``bytes()``: unchanged
* ``json()``: orjson; ``model(SomeModel)``: pydantic, validated on read
* ``auto()``: self-describing (a type tag, then the payload; see ``_auto_serde``), the
  default of internal topics and DSL stores

``None`` maps to ``None`` (a null key or a tombstone) in every serde, as in Kafka.

Each serde offers ``serializer_for(topic)``/``deserializer_for(topic)``, returning a plain
one-argument function (or ``None`` for "bytes unchanged"); the task executor binds these
once per topic, so a record costs one function call per key and per value. The string
(UTF-8) and JSON serdes also offer ``bare_serializer_for``/``bare_deserializer_for``:
the C function underneath (``str.encode``, ``orjson.loads``, ...), which the executor
calls directly from its batch loops, keeping nulls and errors to itself (``streams``
``_codec.py``).
"""

from __future__ import annotations

import builtins
import codecs
import struct
import uuid as uuid_module
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import orjson
import pydantic

from ._errors import DeserializationError, SerializerError

T = TypeVar("T")
Encoder = Callable[[Any], "builtins.bytes | None"]
Decoder = Callable[["builtins.bytes | None"], Any]
BareDecoder = Callable[[Any], Any]  # takes non-null data only


class Serde(Generic[T]):
    """A serializer and a deserializer for one type.

    ``encode``/``decode`` are the per-record functions; they must map ``None`` to ``None``
    and raise :class:`SerializationError`/:class:`DeserializationError` on bad input.
    ``None`` for both means bytes pass through unchanged.

    ``bare_encode``/``bare_decode``, where given, are the same conversions for non-null
    input without null handling or error translation: each returns what the checked
    function returns wherever that succeeds, and raises (any exception) wherever it
    raises.
    """

    def __init__(
        self,
        name: str,
        encode: Encoder | None,
        decode: Decoder | None,
        *,
        bare_encode: Encoder | None = None,
        bare_decode: BareDecoder | None = None,
    ) -> None:
        self.name = name
        self._encode = encode
        self._decode = decode
        self._bare_encode = bare_encode
        self._bare_decode = bare_decode

    def serialize(self, topic: str, obj: T | None) -> builtins.bytes | None:
        return obj if self._encode is None else self._encode(obj)  # type: ignore[return-value]

    def deserialize(self, topic: str, data: builtins.bytes | None) -> T | None:
        return data if self._decode is None else self._decode(data)  # type: ignore[return-value]

    def serializer_for(self, topic: str) -> Encoder | None:
        return self._encode

    def deserializer_for(self, topic: str) -> Decoder | None:
        return self._decode

    def bare_serializer_for(self, topic: str) -> Encoder | None:
        return self._bare_encode

    def bare_deserializer_for(self, topic: str) -> BareDecoder | None:
        return self._bare_decode

    def __repr__(self) -> str:
        return f"Serde({self.name})"


def _fixed_width(name: str, fmt: str, java: str, kinds: tuple[type, ...]) -> Serde[Any]:
    codec = struct.Struct(fmt)
    pack = codec.pack
    unpack = codec.unpack
    size = codec.size

    def encode(obj: Any) -> builtins.bytes | None:
        if obj is None:
            return None
        if not isinstance(obj, kinds):
            raise SerializerError(f"{java}Serializer cannot serialize {type(obj).__name__}")
        try:
            return pack(obj)
        except struct.error as exc:
            raise SerializerError(f"{java}Serializer: {exc}") from exc

    def decode(data: builtins.bytes | None) -> Any:
        if data is None:
            return None
        if len(data) != size:
            raise DeserializationError(f"Size of data received by {java}Deserializer is not {size}")
        return unpack(data)[0]

    return Serde(name, encode, decode)


def _string(encoding: str) -> Serde[str]:
    def encode(obj: Any) -> builtins.bytes | None:
        if obj is None:
            return None
        try:
            return obj.encode(encoding)  # type: ignore[no-any-return]
        except (AttributeError, UnicodeEncodeError) as exc:
            raise SerializerError(f"StringSerializer cannot serialize {obj!r}") from exc

    def decode(data: builtins.bytes | None) -> str | None:
        if data is None:
            return None
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as exc:
            raise DeserializationError(f"StringDeserializer: not {encoding}: {exc}") from exc

    if codecs.lookup(encoding).name != "utf-8":
        return Serde(f"string({encoding})", encode, decode)
    # UTF-8 is the default of both methods, so the unbound methods are the bare codec.
    return Serde(
        f"string({encoding})", encode, decode, bare_encode=str.encode, bare_decode=bytes.decode
    )


def _json() -> Serde[Any]:
    dumps = orjson.dumps
    loads = orjson.loads

    def encode(obj: Any) -> builtins.bytes | None:
        if obj is None:
            return None
        try:
            return dumps(obj)
        except TypeError as exc:
            raise SerializerError(f"cannot encode as JSON: {exc}") from exc

    def decode(data: builtins.bytes | None) -> Any:
        if data is None:
            return None
        try:
            return loads(data)
        except orjson.JSONDecodeError as exc:
            raise DeserializationError(f"not JSON: {exc}") from exc

    return Serde("json", encode, decode, bare_encode=dumps, bare_decode=loads)


def _model(model: type[T]) -> Serde[T]:
    adapter: pydantic.TypeAdapter[T] = pydantic.TypeAdapter(model)
    check = isinstance(model, type)

    def encode(obj: Any) -> builtins.bytes | None:
        if obj is None:
            return None
        if check and not isinstance(obj, model):
            raise SerializerError(f"model serde for {model.__name__} got a {type(obj).__name__}")
        return adapter.dump_json(obj)

    def decode(data: builtins.bytes | None) -> T | None:
        if data is None:
            return None
        try:
            return adapter.validate_json(data)
        except pydantic.ValidationError as exc:
            raise DeserializationError(
                f"invalid {getattr(model, '__name__', model)}: {exc.error_count()} error(s): "
                + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            ) from exc

    return Serde(f"model({getattr(model, '__name__', model)})", encode, decode)


def _uuid() -> Serde[uuid_module.UUID]:
    text = _string("utf-8")

    def encode(obj: Any) -> builtins.bytes | None:
        if obj is None:
            return None
        if not isinstance(obj, uuid_module.UUID):
            raise SerializerError(f"UUIDSerializer cannot serialize {type(obj).__name__}")
        return str(obj).encode()

    def decode(data: builtins.bytes | None) -> uuid_module.UUID | None:
        s = text.deserialize("", data)
        if s is None:
            return None
        try:
            return uuid_module.UUID(s)
        except ValueError as exc:
            raise DeserializationError(f"UUIDDeserializer: not a UUID: {s!r}") from exc

    return Serde("uuid", encode, decode)


class Serdes:
    """Factories for the built-in serdes; every call returns a ready serde."""

    @staticmethod
    def bytes() -> Serde[builtins.bytes]:
        return Serde("bytes", None, None)

    @staticmethod
    def string(encoding: str = "utf-8") -> Serde[str]:
        return _string(encoding)

    @staticmethod
    def integer() -> Serde[int]:
        return _fixed_width("integer", ">i", "Integer", (int,))

    @staticmethod
    def long() -> Serde[int]:
        return _fixed_width("long", ">q", "Long", (int,))

    @staticmethod
    def short() -> Serde[int]:
        return _fixed_width("short", ">h", "Short", (int,))

    @staticmethod
    def double() -> Serde[builtins.float]:
        return _fixed_width("double", ">d", "Double", (int, builtins.float))

    @staticmethod
    def float() -> Serde[builtins.float]:
        return _fixed_width("float", ">f", "Float", (int, builtins.float))

    @staticmethod
    def uuid() -> Serde[uuid_module.UUID]:
        return _uuid()

    @staticmethod
    def json() -> Serde[Any]:
        return _json()

    @staticmethod
    def model(model: type[T]) -> Serde[T]:
        return _model(model)

    @staticmethod
    def avro(schema_or_model: Any, registry: Any, **options: Any) -> Any:
        """Avro in the schema registry's wire format; ``schema_or_model`` is an Avro
        schema (dict or JSON text) or a pydantic model. Options: ``is_key``,
        ``auto_register`` (default True), ``subject_strategy`` (``"topic"``, ``"record"``,
        ``"topic_record"`` or a function). See ``headrace.schema_registry``."""
        from headrace.schema_registry import AvroSerde

        return AvroSerde(schema_or_model, registry, **options)

    @staticmethod
    def protobuf(message_class: Any, registry: Any, **options: Any) -> Any:
        """Protobuf messages of ``message_class`` in the registry's wire format."""
        from headrace.schema_registry import ProtobufSerde

        return ProtobufSerde(message_class, registry, **options)

    @staticmethod
    def json_schema(schema_or_model: Any, registry: Any, **options: Any) -> Any:
        """JSON validated by a JSON Schema (or a pydantic model's), registry framed."""
        from headrace.schema_registry import JsonSchemaSerde

        return JsonSchemaSerde(schema_or_model, registry, **options)

    @staticmethod
    def auto() -> Serde[Any]:
        """The self-describing serde: str, bytes, int, float, bool, None, dict, list,
        tuple, datetime, pydantic models and more, each written with a type tag so it
        reads back as it was (encoding in ``_auto_serde``). Internal topics and DSL
        stores use it wherever the program gives no serde."""
        from ._auto_serde import AUTO

        return AUTO
