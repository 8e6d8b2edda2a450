"""The REST API over a real broker: Confluent's paths, answers and error codes."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

V1 = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]})
V2 = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int", "default": 1}],
    }
)
ID_AS_INT = json.dumps(
    {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}]}
)
V2_NO_DEFAULT = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}],
    }
)


async def call(
    http: aiohttp.ClientSession, method: str, path: str, body: Any = None
) -> tuple[int, Any]:
    async with http.request(method, path, json=body) as response:
        text = await response.text()
        return response.status, json.loads(text) if text else None


async def test_register_fetch_and_list(http: aiohttp.ClientSession) -> None:
    assert await call(http, "GET", "/subjects") == (200, [])
    assert await call(http, "POST", "/subjects/orders-value/versions", {"schema": V1}) == (
        200,
        {"id": 1},
    )
    # The same schema again: the same id, no new version.
    assert await call(http, "POST", "/subjects/orders-value/versions", {"schema": V1}) == (
        200,
        {"id": 1},
    )
    # The same schema under another subject keeps its id.
    assert await call(http, "POST", "/subjects/other/versions", {"schema": V1}) == (200, {"id": 1})
    assert await call(http, "POST", "/subjects/orders-value/versions", {"schema": V2}) == (
        200,
        {"id": 2},
    )
    assert await call(http, "GET", "/subjects") == (200, ["orders-value", "other"])
    assert await call(http, "GET", "/subjects/orders-value/versions") == (200, [1, 2])
    status, latest = await call(http, "GET", "/subjects/orders-value/versions/latest")
    assert status == 200
    assert latest == {"subject": "orders-value", "version": 2, "id": 2, "schema": V2}
    assert (await call(http, "GET", "/schemas/ids/1"))[1] == {"schema": V1}
    async with http.get("/schemas/ids/2/schema") as response:
        assert await response.text() == V2
    assert (await call(http, "GET", "/schemas/ids/1/versions"))[1] == [
        {"subject": "orders-value", "version": 1},
        {"subject": "other", "version": 1},
    ]
    assert (await call(http, "GET", "/schemas/ids/1/subjects"))[1] == ["orders-value", "other"]
    assert (await call(http, "GET", "/schemas/types"))[1] == ["AVRO", "JSON", "PROTOBUF"]
    assert len((await call(http, "GET", "/schemas"))[1]) == 3
    status, found = await call(http, "POST", "/subjects/orders-value", {"schema": V1})
    assert (status, found["version"], found["id"]) == (200, 1, 1)


async def test_errors_have_confluent_codes(http: aiohttp.ClientSession) -> None:
    assert await call(http, "GET", "/subjects/nope/versions") == (
        404,
        {"error_code": 40401, "message": "Subject 'nope' not found."},
    )
    await call(http, "POST", "/subjects/s/versions", {"schema": V1})
    assert (await call(http, "GET", "/subjects/s/versions/7"))[1]["error_code"] == 40402
    assert (await call(http, "GET", "/schemas/ids/99"))[1]["error_code"] == 40403
    assert (await call(http, "GET", "/subjects/s/versions/0"))[1]["error_code"] == 42202
    status, body = await call(http, "POST", "/subjects/s/versions", {"schema": "{not json"})
    assert (status, body["error_code"]) == (422, 42201)
    status, body = await call(http, "POST", "/subjects/s/versions", {"schema": V2_NO_DEFAULT})
    assert (status, body["error_code"]) == (409, 409)
    assert "qty" in body["message"]
    status, body = await call(http, "POST", "/subjects/s", {"schema": V2})
    assert (status, body["error_code"]) == (404, 40403)
    status, body = await call(http, "PUT", "/config", {"compatibility": "SIDEWAYS"})
    assert (status, body["error_code"]) == (422, 42203)
    status, body = await call(http, "PUT", "/mode", {"mode": "SLEEPY"})
    assert (status, body["error_code"]) == (422, 42204)
    async with http.post("/subjects/s/versions", data=b"{{{") as response:
        assert response.status == 400


async def test_soft_and_hard_delete(http: aiohttp.ClientSession) -> None:
    await call(http, "POST", "/subjects/s/versions", {"schema": V1})
    await call(http, "POST", "/subjects/s/versions", {"schema": V2})
    assert (await call(http, "DELETE", "/subjects/s/versions/2?permanent=true"))[1][
        "error_code"
    ] == 40407
    assert await call(http, "DELETE", "/subjects/s/versions/2") == (200, 2)
    assert (await call(http, "DELETE", "/subjects/s/versions/2"))[1]["error_code"] == 40406
    assert await call(http, "GET", "/subjects/s/versions") == (200, [1])
    assert await call(http, "GET", "/subjects/s/versions?deleted=true") == (200, [1, 2])
    assert (await call(http, "GET", "/subjects/s/versions/2?deleted=true"))[0] == 200
    assert await call(http, "DELETE", "/subjects/s/versions/2?permanent=true") == (200, 2)
    assert await call(http, "GET", "/subjects/s/versions?deleted=true") == (200, [1])
    assert (await call(http, "DELETE", "/subjects/s?permanent=true"))[1]["error_code"] == 40405
    assert await call(http, "DELETE", "/subjects/s") == (200, [1])
    assert await call(http, "GET", "/subjects") == (200, [])
    assert await call(http, "GET", "/subjects?deleted=true") == (200, ["s"])
    assert (await call(http, "DELETE", "/subjects/s"))[1]["error_code"] == 40404
    assert await call(http, "DELETE", "/subjects/s?permanent=true") == (200, [1])
    assert await call(http, "GET", "/subjects?deleted=true") == (200, [])
    # The schema text stays reachable by id after its subject is gone, as in Confluent.
    assert (await call(http, "GET", "/schemas/ids/1"))[0] == 200


async def test_config_mode_and_compatibility(http: aiohttp.ClientSession) -> None:
    assert await call(http, "GET", "/config") == (200, {"compatibilityLevel": "BACKWARD"})
    assert await call(http, "PUT", "/config/s", {"compatibility": "none"}) == (
        200,
        {"compatibility": "NONE"},
    )
    assert await call(http, "GET", "/config/s") == (200, {"compatibilityLevel": "NONE"})
    assert (await call(http, "GET", "/config/t"))[1]["error_code"] == 40408
    assert await call(http, "GET", "/config/t?defaultToGlobal=true") == (
        200,
        {"compatibilityLevel": "BACKWARD"},
    )
    await call(http, "POST", "/subjects/s/versions", {"schema": V1})
    # NONE lets the incompatible change through.
    assert (await call(http, "POST", "/subjects/s/versions", {"schema": V2_NO_DEFAULT}))[0] == 200
    assert await call(http, "DELETE", "/config/s") == (200, {"compatibilityLevel": "NONE"})
    status, body = await call(
        http,
        "POST",
        "/compatibility/subjects/s/versions/latest?verbose=true",
        {"schema": ID_AS_INT},
    )
    assert status == 200 and body["is_compatible"] is False and body["messages"]
    assert await call(http, "POST", "/compatibility/subjects/s/versions/1", {"schema": V2}) == (
        200,
        {"is_compatible": True},
    )
    assert await call(http, "PUT", "/mode", {"mode": "READONLY"}) == (200, {"mode": "READONLY"})
    status, body = await call(http, "POST", "/subjects/s/versions", {"schema": V2})
    assert (status, body["error_code"]) == (422, 42205)
    assert await call(http, "PUT", "/mode/s", {"mode": "READWRITE"}) == (200, {"mode": "READWRITE"})
    assert (await call(http, "POST", "/subjects/s/versions", {"schema": V2}))[0] == 200
    assert await call(http, "GET", "/mode") == (200, {"mode": "READONLY"})


async def test_references(http: aiohttp.ClientSession) -> None:
    money = json.dumps(
        {"type": "record", "name": "shop.Money", "fields": [{"name": "cents", "type": "long"}]}
    )
    order = json.dumps(
        {
            "type": "record",
            "name": "shop.Order",
            "fields": [{"name": "price", "type": "shop.Money"}],
        }
    )
    await call(http, "POST", "/subjects/money/versions", {"schema": money})
    ref = [{"name": "shop.Money", "subject": "money", "version": 1}]
    assert (await call(http, "POST", "/subjects/order/versions", {"schema": order}))[1][
        "error_code"
    ] == 42201
    assert await call(
        http, "POST", "/subjects/order/versions", {"schema": order, "references": ref}
    ) == (200, {"id": 2})
    assert (await call(http, "GET", "/schemas/ids/2"))[1]["references"] == ref
    assert await call(http, "GET", "/subjects/money/versions/1/referencedby") == (200, [2])
    assert (await call(http, "DELETE", "/subjects/money/versions/1"))[1]["error_code"] == 42206


async def test_json_and_protobuf_schemas(http: aiohttp.ClientSession) -> None:
    js = json.dumps({"type": "object", "properties": {"id": {"type": "string"}}})
    status, body = await call(
        http, "POST", "/subjects/j/versions", {"schema": js, "schemaType": "JSON"}
    )
    assert status == 200
    assert (await call(http, "GET", f"/schemas/ids/{body['id']}"))[1]["schemaType"] == "JSON"
    proto = 'syntax = "proto3";\npackage shop;\nmessage Customer { string id = 1; }\n'
    status, body = await call(
        http, "POST", "/subjects/p/versions", {"schema": proto, "schemaType": "PROTOBUF"}
    )
    assert status == 200, body
    # The field's wire type changes from length-delimited to varint: refused.
    changed = proto.replace("string id = 1", "int64 id = 1")
    status, body = await call(
        http, "POST", "/subjects/p/versions", {"schema": changed, "schemaType": "PROTOBUF"}
    )
    assert (status, body["error_code"]) == (409, 409)
    assert "FIELD_KIND_CHANGED" in body["message"]
    status, body = await call(
        http, "POST", "/subjects/p/versions", {"schema": "message {", "schemaType": "PROTOBUF"}
    )
    assert (status, body["error_code"]) == (422, 42201)
