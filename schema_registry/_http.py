"""The registry's REST API on aiohttp: Confluent's paths, bodies and error answers.

Every handler is a thin translation: query and path in, one :class:`Registry` call,
JSON out. A :class:`SchemaRegistryError` becomes its HTTP status with
``{"error_code": ..., "message": ...}``; anything unexpected is a 500 with code 50001,
logged, never a stack trace to the client.

What a web page elsewhere could make a visitor's browser do to a registry on their
machine is refused before any handler runs: requests naming a host the registry does
not answer to (DNS rebinding), changes whose ``Origin`` is another site
(``same_site_guard``), and bodies of any type but JSON (a form or ``text/plain`` POST
needs no CORS preflight; Confluent's registry answers those with 415 too). Without a
users file anyone who can connect may change schemas: keep such a registry on loopback.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from headrace.base.http import same_site_guard

from ._errors import InvalidSchema, SchemaRegistryError, Unauthorized
from ._registry import Registry

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
# What Confluent's registry consumes; none of them is a type a form can send.
BODY_TYPES = frozenset(
    {
        CONTENT_TYPE,
        "application/vnd.schemaregistry+json",
        "application/json",
        "application/octet-stream",
    }
)
MAX_BODY = 8 * 1024 * 1024  # bytes of one request: schemas are small, this bounds a client
REGISTRY: web.AppKey[Registry] = web.AppKey("registry", Registry)


def _answer(body: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(body), status=status, content_type=CONTENT_TYPE)


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"


async def _body(request: web.Request) -> Any:
    if not request.can_read_body:
        return None
    if request.content_type not in BODY_TYPES:
        raise _UnsupportedMediaType(
            f"a request body must be JSON ({CONTENT_TYPE}), not {request.content_type}"
        )
    try:
        return json.loads(await request.read())
    except RecursionError:
        raise _BadRequest("the request body is nested too deeply") from None
    except ValueError as exc:
        raise _BadRequest(f"the request body is not JSON: {exc}") from exc


class _BadRequest(SchemaRegistryError):
    http_status = 400
    error_code = 400


class _UnsupportedMediaType(SchemaRegistryError):
    http_status = 415
    error_code = 415


def _int(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError as exc:
        raise _BadRequest(f"{what} must be an integer, got {value!r}") from exc


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except SchemaRegistryError as exc:
        return _answer(exc.body(), exc.http_status)
    except RecursionError:  # a schema nested deeper than its parser goes
        return _answer(InvalidSchema("the schema is nested too deeply").body(), 422)
    except web.HTTPException as exc:
        if exc.status >= 400:
            return _answer({"error_code": exc.status, "message": exc.reason}, exc.status)
        raise
    except Exception:
        log.exception("%s %s failed", request.method, request.path)
        return _answer({"error_code": 50001, "message": "Error in the backend data store"}, 500)


def _basic_auth(users: dict[str, str]) -> Any:
    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        header = request.headers.get("Authorization", "")
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() == "basic":
            try:
                name, _, password = base64.b64decode(encoded).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                name, password = "", ""
            expected = users.get(name)
            if expected is not None and hmac.compare_digest(expected, password):
                return await handler(request)
        response = _answer(Unauthorized("Unauthorized").body(), 401)
        response.headers["WWW-Authenticate"] = 'Basic realm="schema-registry"'
        return response

    return check


def create_app(
    registry: Registry,
    users: dict[str, str] | None = None,
    allowed_hosts: frozenset[str] | None = None,
) -> web.Application:
    """The aiohttp application; ``users`` (name to password) turns on basic auth;
    ``allowed_hosts`` are the host names it answers to (None: any)."""
    middlewares: list[Middleware] = [_errors, same_site_guard(allowed_hosts)]
    if users:
        middlewares.append(_basic_auth(users))
    app = web.Application(middlewares=middlewares, client_max_size=MAX_BODY)
    app[REGISTRY] = registry
    r = app.router
    r.add_get("/", _root)
    r.add_get("/subjects", _subjects)
    r.add_get("/subjects/{subject}/versions", _versions)
    r.add_post("/subjects/{subject}/versions", _register)
    r.add_get("/subjects/{subject}/versions/{version}", _version)
    r.add_get("/subjects/{subject}/versions/{version}/schema", _version_schema)
    r.add_get("/subjects/{subject}/versions/{version}/referencedby", _referenced_by)
    r.add_delete("/subjects/{subject}/versions/{version}", _delete_version)
    r.add_post("/subjects/{subject}", _lookup)
    r.add_delete("/subjects/{subject}", _delete_subject)
    r.add_get("/schemas", _schemas)
    r.add_get("/schemas/types", _types)
    r.add_get("/schemas/ids/{id}", _schema_by_id)
    r.add_get("/schemas/ids/{id}/schema", _schema_text_by_id)
    r.add_get("/schemas/ids/{id}/subjects", _schema_subjects)
    r.add_get("/schemas/ids/{id}/versions", _schema_versions)
    r.add_get("/config", _config)
    r.add_put("/config", _set_config)
    r.add_delete("/config", _delete_config)
    r.add_get("/config/{subject}", _config)
    r.add_put("/config/{subject}", _set_config)
    r.add_delete("/config/{subject}", _delete_config)
    r.add_get("/mode", _mode)
    r.add_put("/mode", _set_mode)
    r.add_get("/mode/{subject}", _mode)
    r.add_put("/mode/{subject}", _set_mode)
    r.add_delete("/mode/{subject}", _delete_mode)
    r.add_post("/compatibility/subjects/{subject}/versions/{version}", _compatibility)
    r.add_post("/compatibility/subjects/{subject}/versions", _compatibility)
    r.add_get("/contexts", _contexts)
    return app


def _registry(request: web.Request) -> Registry:
    return request.app[REGISTRY]


async def _root(request: web.Request) -> web.Response:
    return _answer({})


async def _contexts(request: web.Request) -> web.Response:
    return _answer(["."])


async def _subjects(request: web.Request) -> web.Response:
    registry = _registry(request)
    prefix = request.query.get("subjectPrefix", "")
    if _flag(request, "deleted_only"):
        live = set(registry.subjects(False, prefix))
        return _answer([s for s in registry.subjects(True, prefix) if s not in live])
    await registry.log.catch_up()
    return _answer(registry.subjects(_flag(request, "deleted"), prefix))


async def _versions(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    return _answer(await _registry(request).versions(subject, _flag(request, "deleted")))


async def _register(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    return _answer(await _registry(request).register(subject, await _body(request)))


async def _version(request: web.Request) -> web.Response:
    m = request.match_info
    return _answer(
        await _registry(request).version(
            m["subject"], m["version"], _flag(request, "deleted"), request.query.get("format")
        )
    )


async def _version_schema(request: web.Request) -> web.Response:
    m = request.match_info
    found = await _registry(request).version(
        m["subject"], m["version"], fmt=request.query.get("format")
    )
    return web.Response(text=found["schema"], content_type=CONTENT_TYPE)


async def _referenced_by(request: web.Request) -> web.Response:
    m = request.match_info
    return _answer(await _registry(request).referenced_by(m["subject"], m["version"]))


async def _delete_version(request: web.Request) -> web.Response:
    m = request.match_info
    return _answer(
        await _registry(request).delete_version(
            m["subject"], m["version"], _flag(request, "permanent")
        )
    )


async def _lookup(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    return _answer(
        await _registry(request).lookup(subject, await _body(request), _flag(request, "deleted"))
    )


async def _delete_subject(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    return _answer(await _registry(request).delete_subject(subject, _flag(request, "permanent")))


async def _schemas(request: web.Request) -> web.Response:
    registry = _registry(request)
    await registry.log.catch_up()
    return _answer(
        registry.all_schemas(
            request.query.get("subjectPrefix", ""),
            _flag(request, "deleted"),
            _flag(request, "latestOnly"),
        )
    )


async def _types(request: web.Request) -> web.Response:
    return _answer(Registry.schema_types())


async def _schema_by_id(request: web.Request) -> web.Response:
    schema_id = _int(request.match_info["id"], "schema id")
    return _answer(await _registry(request).schema_by_id(schema_id, request.query.get("format")))


async def _schema_text_by_id(request: web.Request) -> web.Response:
    schema_id = _int(request.match_info["id"], "schema id")
    found = await _registry(request).schema_by_id(schema_id, request.query.get("format"))
    return web.Response(text=found["schema"], content_type=CONTENT_TYPE)


async def _schema_subjects(request: web.Request) -> web.Response:
    schema_id = _int(request.match_info["id"], "schema id")
    found = await _registry(request).subjects_of(schema_id, _flag(request, "deleted"))
    return _answer(sorted({f["subject"] for f in found}))


async def _schema_versions(request: web.Request) -> web.Response:
    schema_id = _int(request.match_info["id"], "schema id")
    return _answer(await _registry(request).subjects_of(schema_id, _flag(request, "deleted")))


async def _config(request: web.Request) -> web.Response:
    subject = request.match_info.get("subject")
    return _answer(await _registry(request).config(subject, _flag(request, "defaultToGlobal")))


async def _set_config(request: web.Request) -> web.Response:
    subject = request.match_info.get("subject")
    return _answer(await _registry(request).set_config(subject, await _body(request)))


async def _delete_config(request: web.Request) -> web.Response:
    return _answer(await _registry(request).delete_config(request.match_info.get("subject")))


async def _mode(request: web.Request) -> web.Response:
    subject = request.match_info.get("subject")
    return _answer(await _registry(request).mode(subject, _flag(request, "defaultToGlobal")))


async def _set_mode(request: web.Request) -> web.Response:
    subject = request.match_info.get("subject")
    return _answer(await _registry(request).set_mode(subject, await _body(request)))


async def _delete_mode(request: web.Request) -> web.Response:
    return _answer(await _registry(request).delete_mode(request.match_info["subject"]))


async def _compatibility(request: web.Request) -> web.Response:
    m = request.match_info
    return _answer(
        await _registry(request).test_compatibility(
            m["subject"], m.get("version"), await _body(request), _flag(request, "verbose")
        )
    )
