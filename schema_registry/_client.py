"""A small registry client for the serdes: blocking HTTP (a serde call is synchronous),
answers cached, so a record costs no request once its schema and id are known.

Each cache is bounded (``MAX_CACHED`` entries; cleared whole when full: schemas per
application are few, a client that keeps minting new ones gets no unbounded memory).
Error bodies become this package's exceptions, by Confluent error code.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ._errors import BY_CODE, SchemaRegistryError, StoreError

MAX_CACHED = 10_000
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class _Bounded(dict[Any, Any]):
    def put(self, key: Any, value: Any) -> Any:
        if len(self) >= MAX_CACHED:
            self.clear()
        self[key] = value
        return value


class RegistryClient:
    """``RegistryClient("http://127.0.0.1:8081")``; ``user:password@`` in the URL, or
    ``auth=("user", "password")``, sends basic auth."""

    def __init__(
        self, url: str, *, auth: tuple[str, str] | None = None, timeout: float = 10.0
    ) -> None:
        parts = urllib.parse.urlsplit(url.rstrip("/"))
        if parts.username is not None and auth is None:
            auth = (
                urllib.parse.unquote(parts.username),
                urllib.parse.unquote(parts.password or ""),
            )
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        self.url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
        self._auth = (
            None
            if auth is None
            else "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        )
        self._timeout = timeout
        self._ids = _Bounded()
        self._schemas = _Bounded()

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Accept", CONTENT_TYPE)
        if data is not None:
            request.add_header("Content-Type", CONTENT_TYPE)
        if self._auth:
            request.add_header("Authorization", self._auth)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            try:
                answer = json.loads(exc.read())
                cls = BY_CODE.get(answer["error_code"], SchemaRegistryError)
                raise cls(answer.get("message", "")) from None
            except (ValueError, KeyError, TypeError):
                raise SchemaRegistryError(f"{method} {path}: HTTP {exc.code}") from None
        except OSError as exc:
            raise StoreError(f"schema registry {self.url} unreachable: {exc}") from exc

    @staticmethod
    def _schema_body(
        schema: str, schema_type: str, references: tuple[dict[str, Any], ...]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        if references:
            body["references"] = list(references)
        return body

    def register(
        self,
        subject: str,
        schema: str,
        schema_type: str = "AVRO",
        references: tuple[dict[str, Any], ...] = (),
    ) -> int:
        key = ("register", subject, schema, schema_type, json.dumps(references))
        if key in self._ids:
            return int(self._ids[key])
        quoted = urllib.parse.quote(subject, safe="")
        answer = self.request(
            "POST",
            f"/subjects/{quoted}/versions",
            self._schema_body(schema, schema_type, references),
        )
        return int(self._ids.put(key, int(answer["id"])))

    def lookup(
        self,
        subject: str,
        schema: str,
        schema_type: str = "AVRO",
        references: tuple[dict[str, Any], ...] = (),
    ) -> dict[str, Any]:
        """The subject's version holding ``schema`` (id, version); SchemaNotFound if none."""
        key = ("lookup", subject, schema, schema_type, json.dumps(references))
        if key in self._ids:
            return dict(self._ids[key])
        quoted = urllib.parse.quote(subject, safe="")
        answer = self.request(
            "POST", f"/subjects/{quoted}", self._schema_body(schema, schema_type, references)
        )
        return dict(self._ids.put(key, answer))

    def schema(self, schema_id: int, fmt: str | None = None) -> dict[str, Any]:
        key = (schema_id, fmt)
        if key not in self._schemas:
            query = f"?format={fmt}" if fmt else ""
            self._schemas.put(key, self.request("GET", f"/schemas/ids/{schema_id}{query}"))
        return dict(self._schemas[key])

    def latest(self, subject: str) -> dict[str, Any]:
        quoted = urllib.parse.quote(subject, safe="")
        return dict(self.request("GET", f"/subjects/{quoted}/versions/latest"))
