"""What a web page elsewhere could make a visitor's browser send to a registry on their
machine is refused, and input too deep or too large for the registry gets a 4xx with a
reason, not a 500."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from registryproc import broker_with_registry

from headrace.base.http import allowed_hosts
from headrace.schema_registry import SchemaRegistryServer

SCHEMA = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
JSON = "application/vnd.schemaregistry.v1+json"


async def send(
    http: aiohttp.ClientSession, method: str, path: str, body: str, **headers: str
) -> tuple[int, Any]:
    data = io.BytesIO(body.encode())  # aiohttp warns of large raw bodies
    async with http.request(method, path, data=data, headers=headers) as response:
        text = await response.text()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text


async def subjects(http: aiohttp.ClientSession) -> Any:
    async with http.get("/subjects") as response:
        return await response.json()


async def test_forms_and_plain_text_cannot_write(http: aiohttp.ClientSession) -> None:
    """A cross-site form or text/plain POST needs no CORS preflight: it must not register."""
    body = json.dumps({"schema": SCHEMA})
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        status, answer = await send(
            http, "POST", "/subjects/x-value/versions", body, **{"Content-Type": content_type}
        )
        assert status == 415, (content_type, answer)
    assert await subjects(http) == []
    assert await send(
        http, "POST", "/subjects/x-value/versions", body, **{"Content-Type": JSON}
    ) == (200, {"id": 1})


async def test_writes_from_another_origin_are_refused(http: aiohttp.ClientSession) -> None:
    body = json.dumps({"schema": SCHEMA})
    headers = {"Content-Type": JSON, "Origin": "http://evil.example"}
    status, _ = await send(http, "POST", "/subjects/x-value/versions", body, **headers)
    assert status == 403
    status, _ = await send(http, "PUT", "/config", json.dumps({"compatibility": "NONE"}), **headers)
    assert status == 403
    assert await subjects(http) == []
    async with http.get("/config") as response:
        assert (await response.json())["compatibilityLevel"] == "BACKWARD"


async def test_a_rebound_host_name_is_refused(
    http: aiohttp.ClientSession, registry: SchemaRegistryServer
) -> None:
    """DNS rebinding: evil.example re-pointed at 127.0.0.1 reaches the registry with its
    own name in Host; only the listener's names (and --schema-registry-allowed-hosts)
    are served."""
    port = registry.url.rsplit(":", 1)[1]
    async with http.get("/subjects", headers={"Host": f"evil.example:{port}"}) as refused:
        assert refused.status == 403
    for name in ("localhost", "127.0.0.1"):
        async with http.get("/subjects", headers={"Host": f"{name}:{port}"}) as served:
            assert served.status == 200


def test_allowed_host_names_follow_the_listener() -> None:
    assert allowed_hosts("127.0.0.1") == frozenset({"127.0.0.1", "localhost", "::1"})
    assert allowed_hosts("10.0.0.5", ["registry.example.com"]) == frozenset(
        {"10.0.0.5", "registry.example.com"}
    )
    assert allowed_hosts("0.0.0.0") is None  # every interface: names unknown, warned at start
    assert allowed_hosts("0.0.0.0", ["registry.example.com", ""]) == frozenset(
        {"registry.example.com"}
    )


@pytest.mark.parametrize("depth", [1_200, 100_000])
async def test_deeply_nested_input_is_a_4xx(http: aiohttp.ClientSession, depth: int) -> None:
    # Finding: JSON nested ~1,200 deep was a 500 (RecursionError).
    nested_schema = "[" * depth + "]" * depth
    status, answer = await send(
        http,
        "POST",
        "/subjects/deep-value/versions",
        json.dumps({"schema": nested_schema}),
        **{"Content-Type": JSON},
    )
    assert status == 422 and answer["error_code"] == 42201, answer
    nested_body = '{"schema":' + "[" * depth + "]" * depth + "}"
    status, answer = await send(
        http, "POST", "/subjects/deep-value/versions", nested_body, **{"Content-Type": JSON}
    )
    assert status == 400 and "nested too deeply" in answer["message"], answer


async def test_a_schema_too_large_to_store_is_a_4xx(http: aiohttp.ClientSession) -> None:
    # Finding: a 1-2 MB schema was a 500 ("could not write to _schemas after 5 attempts").
    fields = [{"name": f"f{i}", "type": "string", "doc": "x" * 200} for i in range(6_000)]
    big = json.dumps({"type": "record", "name": "Big", "fields": fields})
    assert len(big) > 1_000_000
    status, answer = await send(
        http,
        "POST",
        "/subjects/big-value/versions",
        json.dumps({"schema": big}),
        **{"Content-Type": JSON},
    )
    assert status == 422 and "at most 1000000" in answer["message"], answer
    assert await subjects(http) == []


def status_for_host(url: str, host: str) -> int:
    request = urllib.request.Request(f"{url}/subjects", headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return refused.code


def test_the_allowed_hosts_flag_as_typed(tmp_path: Path) -> None:
    """``headrace broker --schema-registry-allowed-hosts`` adds a name the registry serves;
    a name not given is still refused."""
    with broker_with_registry(
        tmp_path / "data", "--schema-registry-allowed-hosts", "registry.example,other.example"
    ) as (_, url):
        port = url.rsplit(":", 1)[1]
        assert status_for_host(url, f"registry.example:{port}") == 200
        assert status_for_host(url, f"other.example:{port}") == 200
        assert status_for_host(url, f"evil.example:{port}") == 403
