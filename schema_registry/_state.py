"""The registry's contents, rebuilt from the ``_schemas`` records in Confluent's format.

Every change is a record: the key says what it is about (a JSON object whose fields
keep Confluent's order, so compaction finds equal keys equal), the value its new state,
a null value (tombstone) its removal:

* ``{"keytype":"SCHEMA","subject":S,"version":V,"magic":1}`` ->
  ``{"subject":S,"version":V,"id":N,"schemaType":T,"references":[...],"schema":TEXT,
  "deleted":false}`` (``schemaType`` left out for AVRO, as Confluent does); a soft
  delete rewrites the value with ``"deleted":true``, a hard delete is a tombstone
* ``{"keytype":"CONFIG","subject":S|null,"magic":0}`` -> ``{"compatibilityLevel":L}``
* ``{"keytype":"MODE","subject":S|null,"magic":0}`` -> ``{"mode":M}``
* ``DELETE_SUBJECT`` (all versions up to ``version`` soft-deleted), ``CLEAR_SUBJECT``
  and ``NOOP``, which Confluent's registry writes, are understood on read

This module does no I/O: records in, state out. A record it cannot understand is
skipped and counted, never fatal, so another registry's extensions do not stop ours.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from ._errors import InvalidSchema, SchemaRegistryError
from ._schema import AVRO, ParsedSchema, Reference, parse_schema

log = logging.getLogger(__name__)


@dataclass
class Version:
    version: int
    id: int
    deleted: bool = False


@dataclass
class RegistryState:
    schemas: dict[int, ParsedSchema] = field(default_factory=dict)
    ids: dict[tuple[Any, ...], int] = field(default_factory=dict)
    subjects: dict[str, dict[int, Version]] = field(default_factory=dict)
    configs: dict[str | None, str] = field(default_factory=dict)
    modes: dict[str | None, str] = field(default_factory=dict)
    max_id: int = 0
    skipped: int = 0

    # -- reading --------------------------------------------------------------------

    def versions(self, subject: str, deleted: bool = False) -> list[Version]:
        """The subject's versions, oldest first."""
        found = self.subjects.get(subject, {})
        return [v for _, v in sorted(found.items()) if deleted or not v.deleted]

    def live_subjects(self) -> list[str]:
        return sorted(s for s in self.subjects if self.versions(s))

    def resolve(self, references: tuple[Reference, ...]) -> tuple[ParsedSchema, ...]:
        """The parsed schemas ``references`` name; InvalidSchema when one is missing."""
        out = []
        for ref in references:
            entry = self.subjects.get(ref.subject, {}).get(ref.version)
            if entry is None:
                raise InvalidSchema(
                    f"Invalid schema: reference {ref.name!r} to {ref.subject} version "
                    f"{ref.version} does not exist"
                )
            out.append(self.schemas[entry.id])
        return tuple(out)

    def referenced_by(self, subject: str, version: int) -> list[int]:
        return sorted(
            schema_id
            for schema_id, schema in self.schemas.items()
            if any(r.subject == subject and r.version == version for r in schema.references)
            and any(
                not v.deleted and v.id == schema_id
                for versions in self.subjects.values()
                for v in versions.values()
            )
        )

    # -- applying records ---------------------------------------------------------------

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        try:
            k: dict[str, Any] = json.loads(key) if key else {}
            v: Any = json.loads(value) if value is not None else None
            kind = k.get("keytype") if isinstance(k, dict) else None
            if kind == "SCHEMA":
                self._apply_schema(k, v)
            elif kind == "CONFIG":
                self._apply_setting(self.configs, k, v, "compatibilityLevel")
            elif kind == "MODE":
                self._apply_setting(self.modes, k, v, "mode")
            elif kind == "DELETE_SUBJECT" and v is not None:
                for entry in self.subjects.get(v["subject"], {}).values():
                    if entry.version <= v["version"]:
                        entry.deleted = True
            elif kind == "CLEAR_SUBJECT" and v is not None:
                self.subjects.pop(v["subject"], None)
            elif kind != "NOOP":
                raise ValueError(f"unknown key type {kind!r}")
        except (ValueError, KeyError, TypeError, AttributeError, SchemaRegistryError) as exc:
            self.skipped += 1
            log.warning("skipped a _schemas record it cannot use (%s): key %r", exc, key)

    def _apply_schema(self, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        subject, version = key["subject"], int(key["version"])
        if value is None:
            versions = self.subjects.get(subject, {})
            versions.pop(version, None)
            if not versions:
                self.subjects.pop(subject, None)
            return
        schema_id = int(value["id"])
        if schema_id not in self.schemas:
            references = tuple(
                Reference(r["name"], r["subject"], int(r["version"]))
                for r in value.get("references") or ()
            )
            parsed = parse_schema(
                value.get("schemaType", AVRO), value["schema"], references, self.resolve(references)
            )
            self.schemas[schema_id] = parsed
            self.ids.setdefault(parsed.identity, schema_id)
        self.max_id = max(self.max_id, schema_id)
        self.subjects.setdefault(subject, {})[version] = Version(
            version, schema_id, bool(value.get("deleted", False))
        )

    @staticmethod
    def _apply_setting(
        table: dict[str | None, str], key: dict[str, Any], value: dict[str, Any] | None, name: str
    ) -> None:
        subject = key.get("subject")
        if value is None:
            table.pop(subject, None)
        else:
            table[subject] = str(value[name])


def _dump(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def schema_record(
    subject: str, version: int, schema_id: int, schema: ParsedSchema, deleted: bool = False
) -> tuple[bytes, bytes]:
    value: dict[str, Any] = {"subject": subject, "version": version, "id": schema_id}
    if schema.schema_type != AVRO:
        value["schemaType"] = schema.schema_type
    if schema.references:
        value["references"] = [r.to_json() for r in schema.references]
    value["schema"] = schema.text
    value["deleted"] = deleted
    return schema_key(subject, version), _dump(value)


def schema_key(subject: str, version: int) -> bytes:
    return _dump({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})


def setting_record(
    keytype: str, subject: str | None, name: str, value: str | None
) -> tuple[bytes, bytes | None]:
    key = _dump({"keytype": keytype, "subject": subject, "magic": 0})
    return key, None if value is None else _dump({name: value})
