"""The self-describing serde, ``Serdes.auto()``: any plain Python value to bytes and back.

It is the serde of every internal topic (repartition, changelog, foreign-key
subscription) and DSL state store the program gives no serde, so a topology works with
no serde on its internal steps; a user may pick it for their own topics too. It never
uses pickle: reading a record runs no code named by the data, except importing the
class of a pydantic model or an enum (below), which must be importable by its path.

Encoding: one tag byte, then the payload. ``None`` is Kafka's null (no bytes at all)
as in every serde; an empty payload, which this serde never writes, reads as ``None``.

=====  ====================  ===============================================================
tag    type                  payload
=====  ====================  ===============================================================
``s``  ``str``               UTF-8
``b``  ``bytes``             the bytes themselves (``bytearray``/``memoryview`` as bytes)
``q``  ``int``               8 bytes big-endian of ``n + 2**63``, for ``-2**63 <= n < 2**63``
                             (so byte order is numeric order: integer keys range-scan)
``I``  ``int``, any other    two's complement, big-endian, as few bytes as hold it
``d``  ``float``             IEEE-754 binary64, big-endian
``T``  ``True``              nothing; ``F`` is ``False`` (a bool never reads back as int)
``j``  ``dict``, ``list``    JSON (orjson) of a value JSON gives back exactly: dicts with
                             ``str`` keys, lists, str, 64-bit ints, finite floats, bool, None
``J``  anything else         JSON of the *tagged tree* below
=====  ====================  ===============================================================

The tagged tree is JSON in which str, bool, null, 64-bit ints and finite floats stand for
themselves and every other value is an array whose first element names its type:
``["l", item, ...]`` list, ``["t", item, ...]`` tuple, ``["d", k1, v1, k2, v2, ...]``
dict (keys of any supported type, order kept), ``["b", base64]`` bytes, ``["i", hex]``
int beyond 64 bits, ``["f", "nan" | "inf" | "-inf"]``, ``["dt", isoformat, fold]``
naive or fixed-offset datetime, ``["dz", local isoformat, fold, zone key]`` datetime in a
``zoneinfo`` zone, ``["date", iso]``, ``["time", iso, fold]``, ``["td", days, seconds,
microseconds]``, ``["uuid", hex]``, ``["dec", str]`` Decimal, ``["set", item, ...]``,
``["fset", item, ...]``, ``["e", "module:Qualname", value]`` enum member, and
``["m", "module:Qualname", {field: value, ...}, [fields set]]`` pydantic model (its
field values, each a tree, rebuilt with ``model_construct``: nested models, tuples,
bytes and datetimes come back as they were). A datetime in any other tzinfo is written
with its UTC offset at that instant. Other subclasses of str, int, float, bytes, list,
tuple and dict are written as their base type; any other type is refused with a
:class:`SerializationError` naming it.

>>> from headrace.dsl import Serdes
>>> auto = Serdes.auto()
>>> auto.serialize("t", "hi")
b'shi'
>>> auto.deserialize("t", auto.serialize("t", {"a": (1, b"x")}))
{'a': (1, b'x')}
>>> auto.deserialize("t", auto.serialize("t", True))
True
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import enum
import importlib
import math
import struct
import uuid
import zoneinfo
from collections.abc import Callable
from typing import Any

import orjson
import pydantic

from ._errors import DeserializationError, SerializationError, SerializerError
from ._serdes import Serde

_BIAS = 1 << 63
_I64_MIN, _I64_MAX = -_BIAS, _BIAS - 1
_pack_q = struct.Struct(">cQ").pack
_unpack_q = struct.Struct(">xQ").unpack
_pack_d = struct.Struct(">cd").pack
_unpack_d = struct.Struct(">xd").unpack
_dumps, _loads = orjson.dumps, orjson.loads
_PLAIN_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
)

Enc = Callable[[Any], bytes]


# -- the tagged tree ----------------------------------------------------------------------


def _class_path(cls: type) -> str:
    path = f"{cls.__module__}:{cls.__qualname__}"
    if "<locals>" in path:
        raise SerializerError(
            f"auto serde cannot write a {cls.__qualname__}: a class defined inside a function "
            "cannot be imported back; define it at module level"
        )
    return path


_classes: dict[str, type] = {}


def _import_class(path: str, base: type) -> Any:
    cls = _classes.get(path)
    if cls is None:
        module, _, qualname = path.partition(":")
        try:
            found: Any = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError, ValueError) as exc:
            raise DeserializationError(f"auto serde cannot import {path!r}: {exc}") from exc
        if not (isinstance(found, type) and issubclass(found, base)):
            raise DeserializationError(f"auto serde: {path!r} is not a {base.__name__}")
        cls = _classes[path] = found
    return cls


def _tree(v: Any) -> Any:
    t = v.__class__
    if t is str or t is bool or v is None:
        return v
    if t is int:
        return v if _I64_MIN <= v <= _I64_MAX else ["i", format(v, "x")]
    if t is float:
        return v if math.isfinite(v) else ["f", repr(v)]
    fn = _TREE.get(t) or _tree_for(t)
    return fn(v)


def _tree_dict(v: dict[Any, Any]) -> list[Any]:
    out: list[Any] = ["d"]
    for k, item in v.items():
        out.append(_tree(k))
        out.append(_tree(item))
    return out


def _tree_datetime(v: dt.datetime) -> list[Any]:
    tz = v.tzinfo
    if tz is None or type(tz) is dt.timezone:
        return ["dt", v.isoformat(), v.fold]
    if type(tz) is zoneinfo.ZoneInfo and tz.key:
        return ["dz", v.replace(tzinfo=None).isoformat(), v.fold, tz.key]
    offset = v.utcoffset()
    fixed = v.replace(tzinfo=None if offset is None else dt.timezone(offset))
    return ["dt", fixed.isoformat(), v.fold]


def _tree_model(v: pydantic.BaseModel) -> list[Any]:
    values = {name: _tree(item) for name, item in v.__dict__.items()}
    extra = v.__pydantic_extra__
    if extra:
        values.update((name, _tree(item)) for name, item in extra.items())
    return ["m", _class_path(v.__class__), values, sorted(v.model_fields_set)]


def _tree_enum(v: enum.Enum) -> list[Any]:
    return ["e", _class_path(v.__class__), _tree(v.value)]


_TREE: dict[type, Callable[[Any], Any]] = {
    list: lambda v: ["l", *map(_tree, v)],
    tuple: lambda v: ["t", *map(_tree, v)],
    dict: _tree_dict,
    bytes: lambda v: ["b", base64.b64encode(v).decode()],
    dt.datetime: _tree_datetime,
    dt.date: lambda v: ["date", v.isoformat()],
    dt.time: lambda v: ["time", v.isoformat(), v.fold],
    dt.timedelta: lambda v: ["td", v.days, v.seconds, v.microseconds],
    uuid.UUID: lambda v: ["uuid", v.hex],
    decimal.Decimal: lambda v: ["dec", str(v)],
    set: lambda v: ["set", *map(_tree, v)],
    frozenset: lambda v: ["fset", *map(_tree, v)],
}
_BASES: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (bool, bool),
    (int, int),
    (float, float),
    (str, str),
    (bytes, bytes),
    (bytearray, bytes),
    (memoryview, bytes),
    (dict, dict),
    (list, list),
    (tuple, tuple),
)


def _tree_for(t: type) -> Callable[[Any], Any]:
    """The tree function of a type met for the first time; remembered per type."""
    fn: Callable[[Any], Any]
    if issubclass(t, pydantic.BaseModel):
        fn = _tree_model
    elif issubclass(t, enum.Enum):
        fn = _tree_enum
    elif issubclass(t, dt.datetime):
        fn = _tree_datetime
    else:
        for base, convert in _BASES:
            if issubclass(t, base):
                fn = (lambda c: lambda v: _tree(c(v)))(convert)
                break
        else:
            raise SerializerError(f"auto serde cannot write a {t.__module__}.{t.__qualname__}")
    _TREE[t] = fn
    return fn


def _untree(x: Any) -> Any:
    if x.__class__ is list:
        return _UNTREE[x[0]](x)
    return x


def _untree_dict(x: list[Any]) -> dict[Any, Any]:
    it = map(_untree, x[1:])
    return dict(zip(it, it, strict=True))


def _untree_model(x: list[Any]) -> Any:
    cls = _import_class(x[1], pydantic.BaseModel)
    values = {name: _untree(item) for name, item in x[2].items()}
    return cls.model_construct(set(x[3]), **values)


def _untree_zoned(x: list[Any]) -> dt.datetime:
    return dt.datetime.fromisoformat(x[1]).replace(tzinfo=zoneinfo.ZoneInfo(x[3]), fold=x[2])


_UNTREE: dict[str, Callable[[list[Any]], Any]] = {
    "l": lambda x: [_untree(i) for i in x[1:]],
    "t": lambda x: tuple(_untree(i) for i in x[1:]),
    "d": _untree_dict,
    "b": lambda x: base64.b64decode(x[1]),
    "i": lambda x: int(x[1], 16),
    "f": lambda x: float(x[1]),
    "dt": lambda x: dt.datetime.fromisoformat(x[1]).replace(fold=x[2]),
    "dz": _untree_zoned,
    "date": lambda x: dt.date.fromisoformat(x[1]),
    "time": lambda x: dt.time.fromisoformat(x[1]).replace(fold=x[2]),
    "td": lambda x: dt.timedelta(x[1], x[2], x[3]),
    "uuid": lambda x: uuid.UUID(hex=x[1]),
    "dec": lambda x: decimal.Decimal(x[1]),
    "set": lambda x: {_untree(i) for i in x[1:]},
    "fset": lambda x: frozenset(_untree(i) for i in x[1:]),
    "e": lambda x: _import_class(x[1], enum.Enum)(_untree(x[2])),
    "m": _untree_model,
}


# -- top level: one tag byte ----------------------------------------------------------------


def _not_plain(obj: Any) -> Any:
    raise TypeError


def _enc_container(v: Any) -> bytes:
    """``j`` when JSON alone gives ``v`` back exactly, else ``J``. orjson refuses what it
    cannot write plainly (non-str keys, big ints, datetimes and subclasses, passed to
    ``_not_plain``); reading the JSON back and comparing catches the rest (tuples,
    NaN, dates and UUIDs written as strings)."""
    try:
        data = _dumps(v, default=_not_plain, option=_PLAIN_OPTIONS)
    except TypeError:
        pass
    else:
        if _loads(data) == v:
            return b"j" + data
    return b"J" + _dumps(_tree(v))


def _enc_int(v: int) -> bytes:
    if _I64_MIN <= v <= _I64_MAX:
        return _pack_q(b"q", v + _BIAS)
    return b"I" + v.to_bytes((v.bit_length() + 8) // 8, "big", signed=True)


def _enc_tree(v: Any) -> bytes:
    return b"J" + _dumps(_tree(v))


_ENC: dict[type, Enc] = {
    str: lambda v: b"s" + v.encode(),
    bytes: lambda v: b"b" + v,
    int: _enc_int,
    float: lambda v: _pack_d(b"d", v),
    bool: lambda v: b"T" if v else b"F",
    dict: _enc_container,
    list: _enc_container,
}


def _enc_for(t: type) -> Enc:
    """The encoder of a type met for the first time at the top level; remembered."""
    fn: Enc
    if issubclass(t, enum.Enum | pydantic.BaseModel):
        fn = _enc_tree
    else:
        for base, convert in _BASES:
            if issubclass(t, base) and base in _ENC:
                top = _ENC[base]
                fn = (lambda c, e: lambda v: e(c(v)))(convert, top)
                break
        else:
            if t not in _TREE:
                _tree_for(t)  # refuses an unsupported type here, naming it
            fn = _enc_tree
    _ENC[t] = fn
    return fn


def _dec_unknown(data: bytes) -> Any:
    raise DeserializationError(f"not written by the auto serde: unknown tag {data[:1]!r}")


_DEC: list[Callable[[bytes], Any]] = [_dec_unknown] * 256
for _tag, _fn in {
    b"s": lambda d: d[1:].decode(),
    b"b": lambda d: d[1:],
    b"q": lambda d: _unpack_q(d)[0] - _BIAS,
    b"I": lambda d: int.from_bytes(d[1:], "big", signed=True),
    b"d": lambda d: _unpack_d(d)[0],
    b"T": lambda d: True,
    b"F": lambda d: False,
    b"j": lambda d: _loads(d[1:]),
    b"J": lambda d: _untree(_loads(d[1:])),
}.items():
    _DEC[_tag[0]] = _fn


def _bare_encode(obj: Any) -> bytes:
    t = obj.__class__
    if t is str:
        return b"s" + obj.encode()  # type: ignore[no-any-return]
    if t is int and _I64_MIN <= obj <= _I64_MAX:
        return _pack_q(b"q", obj + _BIAS)
    if t is bytes:
        return b"b" + obj  # type: ignore[no-any-return]
    return (_ENC.get(t) or _enc_for(t))(obj)


def _bare_decode(data: bytes) -> Any:
    return _DEC[data[0]](data)


def _encode(obj: Any) -> bytes | None:
    if obj is None:
        return None
    try:
        return _bare_encode(obj)
    except SerializationError:
        raise
    except Exception as exc:
        raise SerializerError(f"auto serde cannot write a {type(obj).__name__}: {exc}") from exc


def _decode(data: bytes | None) -> Any:
    if not data:
        return None
    try:
        return _DEC[data[0]](data)
    except DeserializationError:
        raise
    except Exception as exc:
        raise DeserializationError(
            f"not a value of the auto serde (tag {data[:1]!r}): {exc}"
        ) from exc


class AutoSerde(Serde[Any]):
    """The serde of the module docstring; ``Serdes.auto()`` returns the shared one."""

    def __init__(self) -> None:
        super().__init__(
            "auto", _encode, _decode, bare_encode=_bare_encode, bare_decode=_bare_decode
        )


class SourceSideSerde(AutoSerde):
    """Stands for a key or value side read from a source topic that was given no serde.

    Its records are what the source gave (bytes, or objects of the App's default serde).
    Where the DSL keeps such a side in a store or an internal topic it is the auto serde;
    where it reaches a sink unchanged it means "no serde": the App's default, else bytes
    pass through, as they came in (``dsl._serde_roles.for_sink``).
    """

    source_side = True  # what an interactive query looks for (``streams.runtime._queries``)

    def __init__(self) -> None:
        super().__init__()
        self.name = "source-side"


AUTO = AutoSerde()
SOURCE_SIDE = SourceSideSerde()
