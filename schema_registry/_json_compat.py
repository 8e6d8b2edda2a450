"""JSON Schema compatibility: can every document valid under ``writer`` be valid under
``reader``? The main rules of Confluent's checker:

* ``type``: the reader admits each writer type (``integer`` widens to ``number``)
* objects: a property both have is checked recursively; a property only the writer has
  is an error if the reader is closed (``additionalProperties: false``,
  Confluent's PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL); a property only the reader
  has is an error if the writer is open, since its data may carry that name with any
  value (PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL), unless the reader's property accepts
  anything; a property the reader requires and the writer does not is an error
  (REQUIRED_PROPERTY_ADDED)
* ``enum``: the writer's values are among the reader's
* arrays: ``items`` checked recursively
* bounds: the reader's ``maxLength``, ``maximum``, ``maxItems`` not below the writer's,
  its ``minLength``, ``minimum``, ``minItems`` not above
"""

from __future__ import annotations

from typing import Any

from ._schema import ParsedSchema

UPPER = ("maxLength", "maximum", "maxItems", "maxProperties")
LOWER = ("minLength", "minimum", "minItems", "minProperties")


def can_read(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    return _check(reader.parsed, writer.parsed, "#", reader.parsed, writer.parsed)


def _deref(schema: Any, root: Any) -> Any:
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 32:
        ref = schema["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return schema  # a reference to another document: taken as is
        target = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        schema, seen = target, seen + 1
    return schema


def _types(schema: dict[str, Any]) -> set[str] | None:
    kind = schema.get("type")
    if kind is None:
        return None
    return {kind} if isinstance(kind, str) else set(kind)


def _accepts_anything(schema: Any) -> bool:
    return schema is True or schema == {}


def _check(reader: Any, writer: Any, path: str, rroot: Any, wroot: Any) -> list[str]:
    reader, writer = _deref(reader, rroot), _deref(writer, wroot)
    if _accepts_anything(reader) or writer is False:
        return []
    if reader is False:
        return [f"{path}: the reader accepts nothing"]
    if writer is True:
        writer = {}
    found: list[str] = []
    rtypes, wtypes = _types(reader), _types(writer)
    if rtypes is not None:
        if wtypes is None:
            found.append(f"{path}: the reader narrows an untyped value to {sorted(rtypes)}")
        else:
            widened = rtypes | ({"integer"} if "number" in rtypes else set())
            lost = wtypes - widened
            if lost:
                found.append(f"{path}: type {sorted(lost)} is no longer accepted")
    if "enum" in reader:
        wenum = writer.get("enum")
        if wenum is None or any(v not in reader["enum"] for v in wenum):
            found.append(f"{path}: enum values were removed")
    for key in UPPER:
        if key in reader and (key not in writer or writer[key] > reader[key]):
            found.append(f"{path}: {key} was narrowed")
    for key in LOWER:
        if key in reader and (key not in writer or writer[key] < reader[key]):
            found.append(f"{path}: {key} was narrowed")
    found += _properties(reader, writer, path, rroot, wroot)
    if isinstance(reader.get("items"), dict | bool):
        witems = writer.get("items", True)
        found += _check(reader["items"], witems, f"{path}/items", rroot, wroot)
    return found


def _properties(
    reader: dict[str, Any], writer: dict[str, Any], path: str, rroot: Any, wroot: Any
) -> list[str]:
    rprops: dict[str, Any] = reader.get("properties", {})
    wprops: dict[str, Any] = writer.get("properties", {})
    if not rprops and not wprops and "required" not in reader:
        return []
    found: list[str] = []
    reader_open = reader.get("additionalProperties", True) is not False
    writer_open = writer.get("additionalProperties", True) is not False
    for name, wprop in wprops.items():
        if name in rprops:
            found += _check(rprops[name], wprop, f"{path}/properties/{name}", rroot, wroot)
        elif not reader_open:
            found.append(f"{path}/properties/{name}: property removed from a closed model")
        elif isinstance(reader.get("additionalProperties"), dict):
            found += _check(
                reader["additionalProperties"], wprop, f"{path}/properties/{name}", rroot, wroot
            )
    for name, rprop in rprops.items():
        if name not in wprops and writer_open and not _accepts_anything(_deref(rprop, rroot)):
            found.append(f"{path}/properties/{name}: property added to an open model")
    wrequired = set(writer.get("required", ()))
    for name in reader.get("required", ()):
        if name not in wrequired:
            found.append(f"{path}/properties/{name}: required property added")
    return found
