"""Avro schema resolution (the specification's "Schema Resolution"), as a check.

``can_read(reader, writer)`` lists why data written with ``writer`` would not decode
with ``reader``; empty means fastavro (or any Avro library) resolves the pair:

* primitives match, or the writer's promotes: int to long, float, double; long to
  float, double; float to double; string and bytes to each other
* records: same name (or a reader alias); each reader field is in the writer (by name
  or alias) and readable, or has a default; writer-only fields are skipped
* enums: same name; every writer symbol is a reader symbol, unless the reader has a
  default; fixed: same name and size
* arrays and maps: items and values readable
* unions: every writer branch is readable by the reader (a branch of it, if a union)
"""

from __future__ import annotations

from typing import Any

from ._schema import ParsedSchema

PROMOTIONS = {
    "int": {"int", "long", "float", "double"},
    "long": {"long", "float", "double"},
    "float": {"float", "double"},
    "double": {"double"},
    "string": {"string", "bytes"},
    "bytes": {"bytes", "string"},
}
PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


def can_read(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    return _Resolver(reader.named, writer.named).check(reader.parsed, writer.parsed, "")


class _Resolver:
    def __init__(self, reader_named: dict[str, Any], writer_named: dict[str, Any]) -> None:
        self.names: tuple[dict[str, Any], dict[str, Any]] = (dict(reader_named), dict(writer_named))
        self.assumed: set[tuple[str, str]] = set()  # named pairs being checked (recursion)

    def _resolve(self, schema: Any, side: int) -> Any:
        """A named reference to its definition; definitions are remembered as met."""
        if isinstance(schema, str) and schema not in PRIMITIVES:
            return self.names[side].get(schema, schema)
        if isinstance(schema, dict):
            if "name" in schema and schema.get("type") in ("record", "enum", "fixed", "error"):
                self.names[side].setdefault(schema["name"], schema)
            if schema.get("type") in PRIMITIVES and "logicalType" in schema:
                return schema["type"]
            if schema.get("type") in PRIMITIVES and len(schema) == 1:
                return schema["type"]
        return schema

    def check(self, reader: Any, writer: Any, path: str) -> list[str]:
        reader = self._resolve(reader, 0)
        writer = self._resolve(writer, 1)
        if isinstance(writer, list):
            found: list[str] = []
            for branch in writer:
                found += self.check(reader, branch, path)
            return found
        if isinstance(reader, list):
            for branch in reader:
                if not self.check(branch, writer, path):
                    return []
            return [f"{path or '/'}: reader union lacks writer type {_kind(writer)}"]
        rk, wk = _kind(reader), _kind(writer)
        if wk in PRIMITIVES:
            if rk in PROMOTIONS.get(wk, {wk}):
                return []
            return [f"{path or '/'}: type {wk} cannot be read as {rk}"]
        if rk != wk:
            return [f"{path or '/'}: type {wk} cannot be read as {rk}"]
        if rk in ("record", "error"):
            return self._record(reader, writer, path)
        if rk == "enum":
            return self._enum(reader, writer, path)
        if rk == "fixed":
            if not _same_name(reader, writer) or reader["size"] != writer["size"]:
                return [
                    f"{path or '/'}: fixed {writer['name']}[{writer['size']}] cannot be "
                    f"read as {reader['name']}[{reader['size']}]"
                ]
            return []
        if rk == "array":
            return self.check(reader["items"], writer["items"], f"{path}/items")
        if rk == "map":
            return self.check(reader["values"], writer["values"], f"{path}/values")
        return [f"{path or '/'}: unknown type {rk}"]

    def _record(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> list[str]:
        if not _same_name(reader, writer):
            return [f"{path or '/'}: record {writer['name']} cannot be read as {reader['name']}"]
        pair = (reader["name"], writer["name"])
        if pair in self.assumed:
            return []
        self.assumed.add(pair)
        by_name = {f["name"]: f for f in writer["fields"]}
        found: list[str] = []
        for field in reader["fields"]:
            names = [field["name"], *field.get("aliases", ())]
            match = next((by_name[n] for n in names if n in by_name), None)
            where = f"{path}/{field['name']}"
            if match is None:
                if "default" not in field:
                    found.append(f"{where}: reader field has no default and the writer lacks it")
                continue
            found += self.check(field["type"], match["type"], where)
        return found

    def _enum(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> list[str]:
        if not _same_name(reader, writer):
            return [f"{path or '/'}: enum {writer['name']} cannot be read as {reader['name']}"]
        missing = [s for s in writer["symbols"] if s not in reader["symbols"]]
        if missing and "default" not in reader:
            return [f"{path or '/'}: reader enum {reader['name']} lacks symbols {missing}"]
        return []


def _kind(schema: Any) -> str:
    if isinstance(schema, str):
        return schema
    if isinstance(schema, dict):
        kind = schema.get("type")
        return kind if isinstance(kind, str) else "union"
    return "union"


def _same_name(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    names = {reader["name"], *reader.get("aliases", ())}
    short = {n.rsplit(".", 1)[-1] for n in names}
    return writer["name"] in names or writer["name"].rsplit(".", 1)[-1] in short
