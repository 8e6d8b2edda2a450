"""The registry's operations, one method per REST call, over a :class:`RegistryState`
kept current by a :class:`SchemaLog` (the ``_schemas`` topic).

Writes run through ``SchemaLog.write(build)``: the log makes this process the one
writer, catches up with every record already written, and only then calls ``build``,
which checks the request against the now-current state and returns the records to
append with the answer. So ids and versions are computed by one writer that has seen
all earlier ones, whichever registry process took the request.

Reads answer from memory; one that finds nothing first catches up with the log and
looks again (read-through), so a schema registered through another registry process
is found here at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from . import _compat
from ._errors import (
    IncompatibleSchema,
    InvalidMode,
    InvalidSchema,
    InvalidVersion,
    OperationNotPermitted,
    ReferenceExists,
    SchemaNotFound,
    SchemaRegistryError,
    SubjectConfigNotFound,
    SubjectModeNotFound,
    SubjectNotFound,
    SubjectNotSoftDeleted,
    SubjectSoftDeleted,
    VersionNotFound,
    VersionNotSoftDeleted,
    VersionSoftDeleted,
)
from ._schema import AVRO, SCHEMA_TYPES, ParsedSchema, Reference, parse_schema, render
from ._state import RegistryState, Version, schema_key, schema_record, setting_record

T = TypeVar("T")
Record = tuple[bytes, bytes | None]
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
MAX_VERSION = 2**31 - 1


class SchemaLog(Protocol):
    """Where the registry's records live (the ``_schemas`` topic)."""

    state: RegistryState

    async def write(self, build: Callable[[], tuple[list[Record], T]]) -> T: ...

    async def catch_up(self) -> None: ...


def parse_version(version: str | int) -> int | None:
    """``latest`` (or -1) is None; otherwise 1..2^31-1, else 42202."""
    if version in ("latest", "-1", -1):
        return None
    try:
        number = int(version)
    except (TypeError, ValueError):
        number = 0
    if not 1 <= number <= MAX_VERSION:
        raise InvalidVersion(
            f"The specified version '{version}' is not a valid version id. Allowed values "
            f'are between [1, {MAX_VERSION}] and the string "latest"'
        )
    return number


class Registry:
    def __init__(self, log: SchemaLog) -> None:
        self.log = log

    @property
    def state(self) -> RegistryState:
        return self.log.state

    async def _read(self, answer: Callable[[], T]) -> T:
        try:
            return answer()
        except (SubjectNotFound, VersionNotFound, SchemaNotFound):
            await self.log.catch_up()
            return answer()

    # -- schemas --------------------------------------------------------------------

    def _parse_request(self, body: Any) -> ParsedSchema:
        if not isinstance(body, dict) or "schema" not in body:
            raise InvalidSchema("Invalid schema: the request needs a 'schema' field")
        try:
            references = tuple(
                Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
                for r in body.get("references") or ()
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidSchema(f"Invalid schema: bad reference: {exc}") from exc
        return parse_schema(
            body.get("schemaType"), body["schema"], references, self.state.resolve(references)
        )

    async def _parse_off_loop(self, body: Any) -> None:
        """Parse once in a thread: compiling ``.proto`` text runs protoc, which must not
        hold up the event loop; the parse under the write lock then finds it cached.
        Errors wait for that parse: this one may see references not yet caught up."""
        with contextlib.suppress(SchemaRegistryError):
            await asyncio.to_thread(self._parse_request, body)

    def _describe(self, subject: str, entry: Version, fmt: str | None = None) -> dict[str, Any]:
        schema = self.state.schemas[entry.id]
        out: dict[str, Any] = {"subject": subject, "version": entry.version, "id": entry.id}
        return out | _schema_fields(schema, fmt)

    async def schema_by_id(self, schema_id: int, fmt: str | None = None) -> dict[str, Any]:
        def answer() -> dict[str, Any]:
            schema = self.state.schemas.get(schema_id)
            if schema is None:
                raise SchemaNotFound("Schema not found")
            return _schema_fields(schema, fmt)

        return await self._read(answer)

    async def subjects_of(self, schema_id: int, deleted: bool = False) -> list[dict[str, Any]]:
        await self.schema_by_id(schema_id)
        return [
            {"subject": subject, "version": v.version}
            for subject in sorted(self.state.subjects)
            for v in self.state.versions(subject, deleted)
            if v.id == schema_id
        ]

    def all_schemas(
        self, prefix: str = "", deleted: bool = False, latest_only: bool = False
    ) -> list[dict[str, Any]]:
        out = []
        for subject in sorted(self.state.subjects):
            if not subject.startswith(prefix):
                continue
            versions = self.state.versions(subject, deleted)
            for v in versions[-1:] if latest_only else versions:
                out.append(self._describe(subject, v))
        return out

    # -- subjects -------------------------------------------------------------------

    def subjects(self, deleted: bool = False, prefix: str = "") -> list[str]:
        names = sorted(self.state.subjects) if deleted else self.state.live_subjects()
        return [s for s in names if s.startswith(prefix) and self.state.versions(s, deleted)]

    def _versions(self, subject: str, deleted: bool = False) -> list[Version]:
        versions = self.state.versions(subject, deleted)
        if not versions:
            raise SubjectNotFound(f"Subject '{subject}' not found.")
        return versions

    async def versions(self, subject: str, deleted: bool = False) -> list[int]:
        return await self._read(lambda: [v.version for v in self._versions(subject, deleted)])

    def _entry(self, subject: str, version: str | int, deleted: bool = False) -> Version:
        number = parse_version(version)
        versions = self._versions(subject, deleted=True)
        if number is None:
            live = [v for v in versions if deleted or not v.deleted]
            if not live:
                raise SubjectNotFound(f"Subject '{subject}' not found.")
            return live[-1]
        entry = next((v for v in versions if v.version == number), None)
        if entry is None or (entry.deleted and not deleted):
            raise VersionNotFound(f"Version {version} not found.")
        return entry

    async def version(
        self, subject: str, version: str | int, deleted: bool = False, fmt: str | None = None
    ) -> dict[str, Any]:
        return await self._read(
            lambda: self._describe(subject, self._entry(subject, version, deleted), fmt)
        )

    async def referenced_by(self, subject: str, version: str | int) -> list[int]:
        entry = await self._read(lambda: self._entry(subject, version))
        return self.state.referenced_by(subject, entry.version)

    async def lookup(self, subject: str, body: Any, deleted: bool = False) -> dict[str, Any]:
        await self._parse_off_loop(body)
        schema = self._parse_request(body)

        def answer() -> dict[str, Any]:
            versions = self._versions(subject, deleted)
            for v in reversed(versions):
                if self.state.schemas[v.id].identity == schema.identity:
                    return self._describe(subject, v)
            raise SchemaNotFound("Schema not found")

        return await self._read(answer)

    def mode_of(self, subject: str | None) -> str:
        if subject is not None and subject in self.state.modes:
            return self.state.modes[subject]
        return self.state.modes.get(None, "READWRITE")

    def level_of(self, subject: str | None) -> str:
        if subject is not None and subject in self.state.configs:
            return self.state.configs[subject]
        return self.state.configs.get(None, _compat.DEFAULT_LEVEL)

    async def register(self, subject: str, body: Any) -> dict[str, Any]:
        """Steps, under the one writer and on current state:

        1. refuse in READONLY mode (42205); parse the schema and its references (42201)
        2. the same schema already live in the subject: answer its id, write nothing
        3. check it against the subject's earlier live versions at the subject's level
           (409 with the reasons)
        4. reuse the id the same schema has under any subject, else the highest id + 1;
           the version is the subject's highest (live or soft-deleted) + 1
        5. append the SCHEMA record; answer once it is applied here
        """

        def build() -> tuple[list[Record], dict[str, Any]]:
            mode = self.mode_of(subject)
            if mode in ("READONLY", "READONLY_OVERRIDE"):
                raise OperationNotPermitted(f"Subject {subject} is in read-only mode")
            schema = self._parse_request(body)
            live = self.state.versions(subject)
            for v in live:
                if self.state.schemas[v.id].identity == schema.identity:
                    return [], {"id": v.id}
            level = self.level_of(subject)
            reasons = _compat.problems(level, schema, [self.state.schemas[v.id] for v in live])
            if reasons and mode != "IMPORT":
                raise IncompatibleSchema(
                    f"Schema being registered is incompatible with an earlier schema for "
                    f'subject "{subject}", details: {reasons}'
                )
            schema_id = self.state.ids.get(schema.identity)
            if mode == "IMPORT" and body.get("id") is not None:
                schema_id = int(body["id"])
            if schema_id is None:
                schema_id = self.state.max_id + 1
            every = self.state.versions(subject, deleted=True)
            version = every[-1].version + 1 if every else 1
            if mode == "IMPORT" and body.get("version") is not None:
                version = parse_version(body["version"]) or version
            return [schema_record(subject, version, schema_id, schema)], {"id": schema_id}

        await self._parse_off_loop(body)
        return await self.log.write(build)

    async def delete_version(
        self, subject: str, version: str | int, permanent: bool = False
    ) -> int:
        def build() -> tuple[list[Record], int]:
            entry = self._entry(subject, version, deleted=True)
            if self.state.referenced_by(subject, entry.version):
                raise ReferenceExists(
                    f"One or more references exist to the schema {{subject={subject}, "
                    f"version={entry.version}}}"
                )
            if permanent:
                if not entry.deleted:
                    raise VersionNotSoftDeleted(
                        f"Subject '{subject}' Version {entry.version} was not deleted first "
                        "before being permanently deleted"
                    )
                return [(schema_key(subject, entry.version), None)], entry.version
            if entry.deleted:
                raise VersionSoftDeleted(
                    f"Subject '{subject}' Version {entry.version} was soft deleted. Set "
                    "permanent=true to delete permanently"
                )
            schema = self.state.schemas[entry.id]
            return [schema_record(subject, entry.version, entry.id, schema, True)], entry.version

        await self.log.catch_up()
        return await self.log.write(build)

    async def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        def build() -> tuple[list[Record], list[int]]:
            every = self._versions(subject, deleted=True)
            live = [v for v in every if not v.deleted]
            for v in every:
                if self.state.referenced_by(subject, v.version):
                    raise ReferenceExists(
                        f"One or more references exist to the schema {{subject={subject}, "
                        f"version={v.version}}}"
                    )
            if permanent:
                if live:
                    raise SubjectNotSoftDeleted(
                        f"Subject '{subject}' was not deleted first before being "
                        "permanently deleted"
                    )
                records: list[Record] = [(schema_key(subject, v.version), None) for v in every]
                return records, [v.version for v in every]
            if not live:
                raise SubjectSoftDeleted(
                    f"Subject '{subject}' was soft deleted. Set permanent=true to delete "
                    "permanently"
                )
            return (
                [
                    schema_record(subject, v.version, v.id, self.state.schemas[v.id], True)
                    for v in live
                ],
                [v.version for v in live],
            )

        await self.log.catch_up()
        return await self.log.write(build)

    # -- compatibility ----------------------------------------------------------------

    async def test_compatibility(
        self, subject: str, version: str | int | None, body: Any, verbose: bool = False
    ) -> dict[str, Any]:
        """Against one version (``version``) or, when None, as registering would check."""
        await self._parse_off_loop(body)
        schema = self._parse_request(body)
        await self.log.catch_up()
        live = self.state.versions(subject)
        level = self.level_of(subject)
        if version is None:
            earlier = [self.state.schemas[v.id] for v in live]
            reasons = _compat.problems(level, schema, earlier)
        else:
            if not live and parse_version(version) is None:
                return {"is_compatible": True} | ({"messages": []} if verbose else {})
            entry = self._entry(subject, version)
            single = level.removesuffix("_TRANSITIVE")
            reasons = _compat.problems(single, schema, [self.state.schemas[entry.id]])
        out: dict[str, Any] = {"is_compatible": not reasons}
        if verbose:
            out["messages"] = reasons
        return out

    # -- config and mode --------------------------------------------------------------

    async def config(self, subject: str | None, default_to_global: bool = False) -> dict[str, Any]:
        await self.log.catch_up()
        if subject is None or default_to_global:
            return {"compatibilityLevel": self.level_of(subject)}
        if subject not in self.state.configs:
            raise SubjectConfigNotFound(
                f"Subject '{subject}' does not have subject-level compatibility configured"
            )
        return {"compatibilityLevel": self.state.configs[subject]}

    async def set_config(self, subject: str | None, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            body = {}
        level = _compat.check_level(body.get("compatibility", body.get("compatibilityLevel")))
        await self.log.write(
            lambda: ([setting_record("CONFIG", subject, "compatibilityLevel", level)], None)
        )
        return {"compatibility": level}

    async def delete_config(self, subject: str | None) -> dict[str, Any]:
        def build() -> tuple[list[Record], dict[str, Any]]:
            previous = self.level_of(subject)
            return (
                [setting_record("CONFIG", subject, "compatibilityLevel", None)],
                {"compatibilityLevel": previous},
            )

        return await self.log.write(build)

    async def mode(self, subject: str | None, default_to_global: bool = False) -> dict[str, Any]:
        await self.log.catch_up()
        if subject is None or default_to_global or subject in self.state.modes:
            return {"mode": self.mode_of(subject)}
        raise SubjectModeNotFound(
            f"Subject '{subject}' does not have subject-level mode configured"
        )

    async def set_mode(self, subject: str | None, body: Any) -> dict[str, Any]:
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise InvalidMode(f"Invalid mode. Valid values are {', '.join(MODES)}")
        mode = mode.upper()
        await self.log.write(lambda: ([setting_record("MODE", subject, "mode", mode)], None))
        return {"mode": mode}

    async def delete_mode(self, subject: str) -> dict[str, Any]:
        def build() -> tuple[list[Record], dict[str, Any]]:
            previous = self.mode_of(subject)
            return [setting_record("MODE", subject, "mode", None)], {"mode": previous}

        return await self.log.write(build)

    @staticmethod
    def schema_types() -> list[str]:
        return list(SCHEMA_TYPES)


def _schema_fields(schema: ParsedSchema, fmt: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if schema.schema_type != AVRO:
        out["schemaType"] = schema.schema_type
    if schema.references:
        out["references"] = [r.to_json() for r in schema.references]
    out["schema"] = render(schema, fmt)
    return out
