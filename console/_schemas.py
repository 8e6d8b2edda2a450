"""What the console shows of a schema registry: subjects, their versions and schemas,
compatibility levels, and what changed between two versions.

A client of the registry's HTTP API only (Confluent's REST routes), so it works with
any Confluent-compatible registry. The requests block (``RegistryClient``), so each
runs in a worker thread; an answer of "not found" becomes the page's 404.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

from aiohttp import web

REGISTRY_TIMEOUT_S = 5.0


class RegistryUnavailable(ConnectionError):
    """The registry did not answer, or answered with an error of its own (5xx)."""


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "add", "del", "hunk" or "same"
    text: str


class SchemasReader:
    def __init__(self, url: str) -> None:
        from headrace.schema_registry import RegistryClient

        self.url = url
        self._client = RegistryClient(url, timeout=REGISTRY_TIMEOUT_S)

    async def _get(self, path: str) -> Any:
        from headrace.schema_registry import SchemaRegistryError

        try:
            return await asyncio.to_thread(self._client.request, "GET", path)
        except SchemaRegistryError as error:
            if error.http_status == 404:
                raise web.HTTPNotFound(text=error.message) from None
            raise RegistryUnavailable(f"schema registry {self.url}: {error}") from None

    async def subjects(self) -> dict[str, Any]:
        """Every subject with its latest version, and the global compatibility level."""
        names, config = await asyncio.gather(self._get("/subjects"), self._get("/config"))
        latest = await asyncio.gather(
            *(self._get(f"/subjects/{_segment(s)}/versions/latest") for s in names)
        )
        versions = await asyncio.gather(
            *(self._get(f"/subjects/{_segment(s)}/versions") for s in names)
        )
        levels = await asyncio.gather(*(self.compatibility(s) for s in names))
        rows = [
            {
                "subject": name,
                "versions": len(listed),
                "latest": last["version"],
                "id": last["id"],
                "type": last.get("schemaType", "AVRO"),
                "compatibility": level["level"],
            }
            for name, last, listed, level in zip(names, latest, versions, levels, strict=True)
        ]
        return {
            "subjects": sorted(rows, key=lambda r: r["subject"]),
            "compatibility": config["compatibilityLevel"],
        }

    async def compatibility(self, subject: str) -> dict[str, Any]:
        """The level a subject is checked at, and whether it is set on the subject itself
        (else the global level applies)."""
        from headrace.schema_registry import SchemaRegistryError

        path = f"/config/{_segment(subject)}"
        try:
            own = await asyncio.to_thread(self._client.request, "GET", path)
            return {"level": own["compatibilityLevel"], "own": True}
        except SchemaRegistryError as error:
            if error.error_code != 40408:  # the subject has no level of its own
                raise RegistryUnavailable(f"schema registry {self.url}: {error}") from None
        answer = await self._get("/config")
        return {"level": answer["compatibilityLevel"], "own": False}

    async def subject(self, subject: str) -> dict[str, Any]:
        numbers = await self._get(f"/subjects/{_segment(subject)}/versions")
        versions, level = await asyncio.gather(
            asyncio.gather(*(self.version(subject, n) for n in numbers)),
            self.compatibility(subject),
        )
        return {"subject": subject, "versions": versions, "compatibility": level}

    async def version(self, subject: str, version: int | str) -> dict[str, Any]:
        found = await self._get(f"/subjects/{_segment(subject)}/versions/{version}")
        kind = found.get("schemaType", "AVRO")
        return {
            "subject": subject,
            "version": found["version"],
            "id": found["id"],
            "type": kind,
            "references": found.get("references", []),
            "schema": pretty(found["schema"], kind),
        }

    async def diff(self, subject: str, older: int, newer: int) -> list[DiffLine]:
        a, b = await asyncio.gather(self.version(subject, older), self.version(subject, newer))
        return schema_diff(a["schema"], b["schema"], f"version {older}", f"version {newer}")


def pretty(schema: str, kind: str) -> str:
    """A schema as a reader wants it: Avro and JSON Schema indented, Protobuf as written.

    >>> print(pretty('{"type":"record","name":"A","fields":[]}', "AVRO"))
    {
      "type": "record",
      "name": "A",
      "fields": []
    }
    """
    if kind == "PROTOBUF":
        return schema
    try:
        return json.dumps(json.loads(schema), indent=2, ensure_ascii=False)
    except ValueError:
        return schema


def schema_diff(older: str, newer: str, older_name: str, newer_name: str) -> list[DiffLine]:
    """A unified diff of two pretty-printed schemas, each line marked for the page.

    >>> [(d.kind, d.text) for d in schema_diff("a\\nb", "a\\nc", "v1", "v2")][2:]
    [('hunk', '@@ -1,2 +1,2 @@'), ('same', ' a'), ('del', '-b'), ('add', '+c')]
    """
    lines = difflib.unified_diff(
        older.splitlines(), newer.splitlines(), older_name, newer_name, lineterm=""
    )
    return [DiffLine(_kind(line), line) for line in lines]


def _kind(line: str) -> str:
    if line.startswith(("+++", "---", "@@")):
        return "hunk"
    return {"+": "add", "-": "del"}.get(line[:1], "same")


def _segment(text: str) -> str:
    return urllib.parse.quote(text, safe="")
