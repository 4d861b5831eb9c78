"""Checks that everything the gateway puts on the wire follows the Open Responses spec.

:class:`RecordingTransport` wraps the in-process ASGI transport and keeps every exchange;
:func:`check_exchange` validates response objects, errors and SSE streams against the spec's
JSON Schemas (the vendored ``spec/openresponses-openapi-2026-04-24.json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import httpx
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SPEC_PATH = Path(__file__).parent / "spec" / "openresponses-openapi-2026-04-24.json"
TERMINAL = {"response.completed", "response.incomplete", "response.failed"}


@cache
def spec() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SPEC_PATH.read_text(encoding="utf-8"))
    return data


@cache
def _registry() -> Registry[Any]:
    resource = Resource.from_contents(spec(), default_specification=DRAFT202012)
    return Registry().with_resource("urn:openresponses", resource)


@cache
def validator(name: str) -> Draft202012Validator:
    ref = {"$ref": f"urn:openresponses#/components/schemas/{name}"}
    return Draft202012Validator(ref, registry=_registry())


@cache
def event_schemas() -> dict[str, str]:
    """Event ``type`` -> schema name, for every streaming event schema of the spec."""
    out = {}
    for name, schema in spec()["components"]["schemas"].items():
        if name.endswith("StreamingEvent"):
            out[schema["properties"]["type"]["enum"][0]] = name
    return out


def check(name: str, value: Any) -> None:
    errors = sorted(validator(name).iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{list(e.absolute_path)}: {e.message[:300]}" for e in errors[:5]]
        raise AssertionError(f"not a valid {name}:\n" + "\n".join(lines))


def check_response(obj: Any) -> None:
    check("ResponseResource", obj)


def check_error(body: Any) -> None:
    assert isinstance(body, dict) and set(body) == {"error"}, body
    check("ErrorPayload", body["error"])


def parse_sse(raw: bytes) -> tuple[list[dict[str, Any]], bool]:
    """Events of an SSE body (each ``event:`` checked against the JSON ``type``) and whether
    it ended with ``data: [DONE]``."""
    events: list[dict[str, Any]] = []
    done = False
    for frame in raw.decode("utf-8").split("\n\n"):
        if not frame.strip():
            continue
        assert not done, "data after [DONE]"
        name, data = None, []
        for line in frame.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        text = "\n".join(data)
        if text == "[DONE]":
            done = True
            continue
        event = json.loads(text)
        assert name == event["type"], (name, event["type"])
        events.append(event)
    return events, done


def check_stream(events: list[dict[str, Any]], done: bool) -> None:
    """Every event valid; numbering, opening and terminal rules of the stream."""
    kinds = event_schemas()
    for event in events:
        assert event["type"] in kinds, f"event type {event['type']!r} is not in the spec"
        check(kinds[event["type"]], event)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    types = [e["type"] for e in events]
    assert types[:2] == ["response.created", "response.in_progress"], types[:3]
    assert types.count("response.created") == 1 and types.count("response.in_progress") == 1
    terminal = [t for t in types if t in TERMINAL]
    assert len(terminal) == 1 and types[-1] == terminal[0], types[-3:]
    assert done, "the stream did not end with data: [DONE]"
    added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    finished = [e["output_index"] for e in events if e["type"] == "response.output_item.done"]
    assert sorted(added) == sorted(finished) == list(range(len(added)))
    final = events[-1]["response"]
    assert len(final["output"]) == len(added)
    ids = {e["output_index"]: e["item"]["id"] for e in events if e["type"].endswith("item.done")}
    assert [o["id"] for o in final["output"]] == [ids[k] for k in range(len(ids))]


@dataclass
class Exchange:
    method: str
    path: str
    status: int
    content_type: str
    body: bytes


def check_exchange(x: Exchange) -> None:
    if x.content_type.startswith("text/event-stream"):
        events, done = parse_sse(x.body)
        check_stream(events, done)
        return
    if not x.body:
        return
    body = json.loads(x.body)
    if x.status >= 400:
        check_error(body)
        return
    if not x.path.startswith("/v1/responses"):
        return
    if x.path.endswith("/input_items"):
        for item in body["data"]:
            check("ItemField", item)
    elif body.get("object") == "response":
        check_response(body)


class RecordingTransport(httpx.AsyncBaseTransport):
    """An ASGI transport that keeps every exchange for :func:`check_exchange`."""

    def __init__(self, app: Any) -> None:
        self.inner = httpx.ASGITransport(app=app)
        self.exchanges: list[Exchange] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        self.exchanges.append(
            Exchange(
                method=request.method,
                path=request.url.path,
                status=response.status_code,
                content_type=response.headers.get("content-type", ""),
                body=body,
            )
        )
        return httpx.Response(
            response.status_code, headers=response.headers, content=body, request=request
        )

    def check_all(self) -> int:
        for exchange in self.exchanges:
            check_exchange(exchange)
        return len(self.exchanges)
