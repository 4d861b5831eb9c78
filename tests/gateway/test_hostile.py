"""Hostile and broken input: each is a clean 4xx with the spec's error object, never a
traceback. (Every error body is also validated against ErrorPayload when the test ends.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.gateway.conftest import Gateway, GatewayFactory

pytestmark = pytest.mark.anyio


async def post(gw: Gateway, content: bytes, **headers: str) -> tuple[int, dict[str, Any]]:
    response = await gw.http.post(
        "/v1/responses",
        content=content,
        headers={"content-type": "application/json", **headers},
    )
    return response.status_code, response.json()["error"]


async def test_malformed_json(gw: Gateway) -> None:
    status, error = await post(gw, b'{"model": "scripted", "input": ')
    assert status == 400 and error["code"] == "invalid_json"


@pytest.mark.parametrize("body", [b"[1, 2]", b'"text"', b"null", b"", b"   "])
async def test_body_must_be_a_json_object(gw: Gateway, body: bytes) -> None:
    status, error = await post(gw, body)
    assert status == 400 and error["type"] == "invalid_request_error"


async def test_invalid_utf8(gw: Gateway) -> None:
    status, error = await post(gw, b'{"model": "scripted", "input": "\xff\xfe"}')
    assert status == 400 and "UTF-8" in error["message"]


@pytest.mark.parametrize(
    ("field", "value", "param"),
    [
        ("model", 5, "model"),
        ("input", 5, "input"),
        ("input", [1], "input[0]"),
        ("temperature", "hot", "temperature"),
        ("temperature", 7, "temperature"),
        ("stream", "yes", "stream"),
        ("max_output_tokens", 3, "max_output_tokens"),
        ("max_tool_calls", 0, "max_tool_calls"),
        ("tools", "all", "tools"),
        ("tools", [{"type": "web_search"}], "tools[0]"),
        ("tools", [{"type": "function", "name": "bad name"}], "tools[0].name"),
        ("tool_choice", "sometimes", "tool_choice"),
        ("metadata", {"k": 1}, "metadata"),
        ("text", {"format": {"type": "json_schema"}}, "text.format.schema"),
        ("truncation", "maybe", "truncation"),
        ("include", ["everything"], "include[0]"),
    ],
)
async def test_wrong_types_name_the_parameter(
    gw: Gateway, field: str, value: Any, param: str
) -> None:
    response = await gw.http.post("/v1/responses", json={"model": "scripted", "input": "x",
                                                         field: value})  # fmt: skip
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param


async def test_unknown_fields_are_refused(gw: Gateway) -> None:
    response = await gw.http.post(
        "/v1/responses", json={"model": "scripted", "input": "x", "frobnicate": True}
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "frobnicate" and error["code"] == "unknown_parameter"


async def test_invalid_input_items(gw: Gateway) -> None:
    for item, param in [
        ({"type": "message", "role": "wizard", "content": "hi"}, "input[1]"),
        ({"type": "function_call", "name": "x"}, "input[1]"),
        ({"type": "item_reference", "id": "msg_1"}, "input[1]"),
        ({"type": "teleport"}, "input[1]"),
    ]:
        response = await gw.http.post(
            "/v1/responses",
            json={"model": "scripted", "input": [{"role": "user", "content": "ok"}, item]},
        )
        assert response.status_code == 400, item
        assert response.json()["error"]["param"] == param


async def test_unknown_model_toolset_and_tool_choice(gw: Gateway) -> None:
    cases = [
        ({"model": "no-such-model"}, "model"),
        ({"model": "nosuchprovider:x"}, "model"),
        ({"tools": [{"type": "agentloop:toolset", "name": "nope"}]}, "tools[0].name"),
        ({"tool_choice": {"type": "function", "name": "missing"}}, "tool_choice.name"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"previous_response_id": None, "input": None}, "input"),
        (
            {"tools": [{"type": "function", "name": "add"},
                       {"type": "agentloop:toolset", "name": "demo"}]},
            "tools[1]",
        ),
    ]  # fmt: skip
    for extra, param in cases:
        body = {"model": "scripted", "input": "x", **extra}
        response = await gw.http.post("/v1/responses", json=body)
        assert response.status_code == 400, extra
        assert response.json()["error"]["param"] == param, extra


async def test_huge_bodies_are_413(make_gateway: GatewayFactory) -> None:
    async with make_gateway(max_body_bytes=10_000) as gw:
        big = b'{"model": "scripted", "input": "' + b"a" * 20_000 + b'"}'
        status, error = await post(gw, big)
        assert status == 413 and error["code"] == "request_too_large"

        async def chunks() -> AsyncIterator[bytes]:
            yield b'{"model": "scripted", "input": "'
            for _ in range(30):
                yield b"b" * 1000
            yield b'"}'

        response = await gw.http.post(
            "/v1/responses", content=chunks(), headers={"content-type": "application/json"}
        )
        assert response.status_code == 413
        small = await gw.http.post("/v1/responses", json={"model": "scripted", "input": "ok"})
        assert small.status_code == 200


async def test_unknown_ids_are_404(gw: Gateway) -> None:
    for method, path in [
        ("GET", "/v1/responses/resp_missing"),
        ("DELETE", "/v1/responses/resp_missing"),
        ("POST", "/v1/responses/resp_missing/cancel"),
        ("GET", "/v1/responses/resp_missing/input_items"),
        ("GET", "/v1/no/such/route"),
    ]:
        response = await gw.http.request(method, path)
        assert response.status_code == 404, path
        assert response.json()["error"]["type"] == "not_found_error"


async def test_wrong_method_and_content_type(gw: Gateway) -> None:
    response = await gw.http.put("/v1/responses", json={})
    assert response.status_code == 405
    status, _ = await post(gw, b"model=scripted", **{"content-type": "text/plain"})
    assert status == 415


async def test_form_bodies_are_accepted(gw: Gateway) -> None:
    response = await gw.http.post(
        "/v1/responses", data={"model": "scripted", "input": "from a form"}
    )
    assert response.status_code == 200
    assert response.json()["output"][0]["content"][0]["text"] == "echo: from a form"


async def test_bad_query_parameters(gw: Gateway) -> None:
    created = await gw.client.responses.create(model="scripted", input="x")
    for query in ("limit=abc", "limit=0", "limit=101", "order=sideways"):
        response = await gw.http.get(f"/v1/responses/{created.id}/input_items?{query}")
        assert response.status_code == 400, query


async def test_an_internal_error_is_a_500_without_traceback(
    gw: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def boom(*_args: Any) -> None:
        raise RuntimeError("secret internals /etc/passwd")

    monkeypatch.setattr(gw.service, "retrieve", boom)
    response = await gw.http.get("/v1/responses/resp_x")
    assert response.status_code == 500
    assert "secret" not in response.text and "Traceback" not in response.text
    assert response.json()["error"]["type"] == "server_error"
    assert response.headers["x-request-id"] in response.json()["error"]["message"]
