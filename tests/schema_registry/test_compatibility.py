"""Compatibility rules per level and schema type, and a property test that what the
Avro check calls BACKWARD-compatible is exactly what fastavro can decode."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headrace.schema_registry._compat import problems
from headrace.schema_registry._schema import ParsedSchema, parse_schema


def avro(*fields: dict[str, Any], name: str = "R") -> ParsedSchema:
    return parse_schema(
        "AVRO", json.dumps({"type": "record", "name": name, "fields": list(fields)})
    )


def ok(level: str, new: ParsedSchema, *earlier: ParsedSchema) -> bool:
    return not problems(level, new, list(earlier))


A = {"name": "a", "type": "int"}
B_DEFAULT = {"name": "b", "type": "string", "default": ""}
B = {"name": "b", "type": "string"}


@pytest.mark.parametrize(
    ("level", "added_with_default", "added_without", "removed"),
    [
        ("BACKWARD", True, False, True),
        ("FORWARD", True, True, False),
        ("FULL", True, False, False),
        ("NONE", True, True, True),
    ],
)
def test_avro_field_changes_per_level(
    level: str, added_with_default: bool, added_without: bool, removed: bool
) -> None:
    assert ok(level, avro(A, B_DEFAULT), avro(A)) is added_with_default
    assert ok(level, avro(A, B), avro(A)) is added_without
    assert ok(level, avro(A), avro(A, B)) is removed


def test_avro_promotions_enums_unions_and_names() -> None:
    long_a = avro({"name": "a", "type": "long"})
    assert ok("BACKWARD", long_a, avro(A))  # int data reads as long
    assert not ok("FORWARD", long_a, avro(A))  # long data does not read as int
    assert not ok("BACKWARD", avro({"name": "a", "type": "string"}), avro(A))
    colors = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}
    fewer = {**colors, "symbols": ["RED"]}
    assert not ok(
        "BACKWARD", avro({"name": "c", "type": fewer}), avro({"name": "c", "type": colors})
    )
    assert ok(
        "BACKWARD",
        avro({"name": "c", "type": {**fewer, "default": "RED"}}),
        avro({"name": "c", "type": colors}),
    )
    assert ok("BACKWARD", avro({"name": "a", "type": ["null", "int"]}), avro(A))
    assert not ok("BACKWARD", avro(A), avro({"name": "a", "type": ["null", "int"]}))
    assert not ok("BACKWARD", avro(A, name="Other"), avro(A))


def test_avro_transitive_looks_past_the_latest() -> None:
    v1, v2, v3 = avro(A), avro(A, {**B_DEFAULT}), avro(A, B)
    assert ok("BACKWARD", v3, v1, v2)  # v3 reads v2's data: b is there
    assert not ok("BACKWARD_TRANSITIVE", v3, v1, v2)  # v1's data lacks b, v3 has no default
    v1f, v2f = avro(A, B), avro(A, B_DEFAULT)
    assert ok("FORWARD", avro(A), v1f, v2f)  # v2 reads the new data: b defaults
    assert not ok("FORWARD_TRANSITIVE", avro(A), v1f, v2f)  # v1 cannot
    assert not ok("FULL_TRANSITIVE", v3, v1, v2)


def js(schema: dict[str, Any]) -> ParsedSchema:
    return parse_schema("JSON", json.dumps(schema))


def test_json_schema_rules() -> None:
    def obj(props: dict[str, Any], **extra: Any) -> ParsedSchema:
        return js({"type": "object", "properties": props, **extra})

    s, i, n = {"type": "string"}, {"type": "integer"}, {"type": "number"}
    assert not ok("BACKWARD", obj({"x": i}), obj({"x": s}))  # type changed
    assert ok("BACKWARD", obj({"x": n}), obj({"x": i}))  # integer widens to number
    assert not ok("FORWARD", obj({"x": n}), obj({"x": i}))
    closed = {"additionalProperties": False}
    assert not ok("BACKWARD", obj({"x": s}, **closed), obj({"x": s, "y": s}, **closed))
    assert ok("BACKWARD", obj({"x": s}), obj({"x": s, "y": s}))  # removed from an open model
    assert ok("BACKWARD", obj({"x": s, "y": s}, **closed), obj({"x": s}, **closed))
    assert not ok("BACKWARD", obj({"x": s, "y": s}), obj({"x": s}))  # added to an open model
    assert not ok("BACKWARD", obj({"x": s}, required=["x"]), obj({"x": s}))
    assert not ok("BACKWARD", js({"enum": ["a"]}), js({"enum": ["a", "b"]}))
    assert ok("BACKWARD", js({"enum": ["a", "b"]}), js({"enum": ["a"]}))
    assert not ok(
        "BACKWARD", js({"type": "string", "maxLength": 3}), js({"type": "string", "maxLength": 5})
    )
    assert ok("NONE", obj({"x": i}), obj({"x": s}))


def proto(body: str, package: str = "shop", syntax: str = "proto3") -> ParsedSchema:
    return parse_schema("PROTOBUF", f'syntax = "{syntax}";\npackage {package};\n{body}\n')


def test_protobuf_rules() -> None:
    v1 = proto("message M { string id = 1; int32 n = 2; }")
    assert ok("FULL", proto("message M { string key = 1; int32 n = 2; }"), v1)  # renamed
    assert ok("FULL", proto("message M { string id = 1; }"), v1)  # removed
    assert ok("FULL", proto("message M { string id = 1; int32 n = 2; bool b = 3; }"), v1)
    assert ok("FULL", proto("message M { string id = 1; int64 n = 2; }"), v1)  # same varint
    assert not ok("BACKWARD", proto("message M { string id = 1; string n = 2; }"), v1)
    assert not ok("BACKWARD", proto("message M { string id = 1; repeated int32 n = 2; }"), v1)
    assert not ok("BACKWARD", proto("message M { string id = 1; int32 n = 2; }", "other"), v1)
    two = proto("message M { string id = 1; } message N { string x = 1; }")
    assert not ok("BACKWARD", proto("message M { string id = 1; }"), two)  # N was removed
    assert ok("FORWARD", proto("message M { string id = 1; }"), two)
    required = proto("message M { optional string id = 1; required int32 n = 2; }", syntax="proto2")
    assert not ok(
        "BACKWARD", required, proto("message M { optional string id = 1; }", syntax="proto2")
    )


# -- the property: the check agrees with fastavro ---------------------------------------

PRIMITIVES = ["int", "long", "float", "double", "string", "bytes", "boolean"]
SAMPLE = {
    "int": 7,
    "long": 2**40,
    "float": 1.5,
    "double": 2.25,
    "string": "s",
    "bytes": b"b",
    "boolean": True,
}
DEFAULTS = {
    "int": 0,
    "long": 0,
    "float": 0.0,
    "double": 0.0,
    "string": "",
    "bytes": "",
    "boolean": False,
}


@st.composite
def writer_and_reader(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    names = draw(st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=6, unique=True))
    writer = [{"name": n, "type": draw(st.sampled_from(PRIMITIVES))} for n in names]
    reader: list[dict[str, object]] = []
    for field in writer:
        action = draw(st.sampled_from(["keep", "drop", "retype"]))
        if action == "keep":
            reader.append(dict(field))
        elif action == "retype":
            reader.append({"name": field["name"], "type": draw(st.sampled_from(PRIMITIVES))})
    for extra in draw(st.lists(st.sampled_from("pqrs"), max_size=3, unique=True)):
        kind = draw(st.sampled_from(PRIMITIVES))
        added: dict[str, object] = {"name": extra, "type": kind}
        if draw(st.booleans()):
            added["default"] = DEFAULTS[kind]
        reader.append(added)
    return writer, reader


@settings(max_examples=300, deadline=None)
@given(writer_and_reader())
def test_backward_compatible_avro_pairs_decode_with_fastavro(
    pair: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    writer_fields, reader_fields = pair
    writer, reader = avro(*writer_fields), avro(*reader_fields)
    compatible = ok("BACKWARD", reader, writer)
    out = io.BytesIO()
    fastavro.schemaless_writer(
        out, writer.parsed, {f["name"]: SAMPLE[f["type"]] for f in writer_fields}
    )
    try:
        fastavro.schemaless_reader(io.BytesIO(out.getvalue()), writer.parsed, reader.parsed)
        decoded = True
    except Exception:
        decoded = False
    assert compatible == decoded, (
        writer_fields,
        reader_fields,
        problems("BACKWARD", reader, [writer]),
    )


# Richer types, one direction: whatever the check calls compatible decodes, whichever
# union branch or enum symbol the data takes.

ENUM_SYMBOLS = ["A", "B", "C"]


def richer_types(field: str) -> st.SearchStrategy[Any]:
    prim = st.sampled_from(PRIMITIVES)
    nullable = prim.map(lambda p: ["null", p])
    enum = st.lists(st.sampled_from(ENUM_SYMBOLS), min_size=1, unique=True).map(
        lambda symbols: {"type": "enum", "name": f"E_{field}", "symbols": sorted(symbols)}
    )
    array = prim.map(lambda p: {"type": "array", "items": p})
    return st.one_of(prim, nullable, enum, array)


def sample_value(kind: Any, draw: st.DrawFn) -> Any:
    if isinstance(kind, str):
        return SAMPLE[kind]
    if isinstance(kind, list):
        return draw(st.sampled_from([None, SAMPLE[kind[1]]]))
    if kind["type"] == "enum":
        return draw(st.sampled_from(kind["symbols"]))
    return [SAMPLE[kind["items"]]] * draw(st.integers(0, 2))


@st.composite
def richer_pair(
    draw: st.DrawFn,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    names = draw(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=4, unique=True))
    writer = [{"name": n, "type": draw(richer_types(n))} for n in names]
    reader = [
        {"name": f["name"], "type": draw(st.one_of(st.just(f["type"]), richer_types(f["name"])))}
        for f in writer
        if draw(st.booleans()) or len(writer) == 1
    ]
    if draw(st.booleans()):
        reader.append({"name": "added", "type": ["null", "string"], "default": None})
    value = {f["name"]: sample_value(f["type"], draw) for f in writer}
    return writer, reader, value


@settings(max_examples=300, deadline=None)
@given(richer_pair())
def test_backward_compatible_richer_pairs_decode_with_fastavro(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]],
) -> None:
    writer_fields, reader_fields, value = case
    writer, reader = avro(*writer_fields), avro(*reader_fields)
    if not ok("BACKWARD", reader, writer):
        return
    out = io.BytesIO()
    fastavro.schemaless_writer(out, writer.parsed, value)
    decoded = fastavro.schemaless_reader(io.BytesIO(out.getvalue()), writer.parsed, reader.parsed)
    assert isinstance(decoded, dict)
    assert set(decoded) == {f["name"] for f in reader_fields}
