"""Wire-level fakes for the OpenAI adapters: respx routes behind the SDK's own HTTP client.

The ``openai`` SDK sends through ``httpx2``, which respx does not patch. :class:`RespxTransport`
is an ``httpx2`` transport that hands each request to a respx router (as an ``httpx`` request)
and returns the router's response to the SDK, so the SDK really encodes requests and parses
responses and SSE streams, and respx records every call. Transport exceptions raised by routes
(``httpx.ConnectError``, ``httpx.ReadTimeout``...) reach the SDK as their ``httpx2`` twins.

The payload builders produce bodies shaped like OpenAI's real ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import httpx
import httpx2
import respx

OPENAI = "https://api.openai.com/v1"
CHAT_URL = f"{OPENAI}/chat/completions"
RESPONSES_URL = f"{OPENAI}/responses"


class RespxTransport(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport answered by a respx router."""

    def __init__(self, router: respx.Router) -> None:
        self.router = router

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        content = await request.aread()
        fake = httpx.Request(
            request.method,
            str(request.url),
            headers=list(request.headers.multi_items()),
            content=content,
        )
        try:
            response = await self.router.async_handler(fake)
        except httpx.TimeoutException as exc:
            raise httpx2.ReadTimeout(str(exc) or "timed out", request=request) from exc
        except httpx.TransportError as exc:
            raise httpx2.ConnectError(str(exc) or "connection failed", request=request) from exc
        body = await response.aread()
        return httpx2.Response(
            response.status_code,
            headers=[(k, v) for k, v in response.headers.multi_items() if k != "content-length"],
            content=body,
            request=request,
        )


def http_client(router: respx.Router) -> httpx2.AsyncClient:
    """An ``httpx2`` client for the SDK whose requests go to ``router``."""
    return httpx2.AsyncClient(transport=RespxTransport(router))


def sent(route: respx.Route, call: int = -1) -> Any:
    """The JSON body of a request the route received (the last one by default)."""
    return json.loads(route.calls[call].request.content)


# --- responses -----------------------------------------------------------------------------


def sse(events: Iterable[Any], *, named: bool = False, done: bool = True) -> httpx.Response:
    """A ``text/event-stream`` response; ``named`` adds ``event:`` lines from each ``type``."""
    chunks = []
    for data in events:
        head = f"event: {data['type']}\n" if named else ""
        chunks.append(f"{head}data: {json.dumps(data)}\n\n")
    if done:
        chunks.append("data: [DONE]\n\n")
    return httpx.Response(
        200, content="".join(chunks).encode(), headers={"content-type": "text/event-stream"}
    )


def api_error(
    status: int,
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """An OpenAI error response."""
    body = {"error": {"message": message, "type": type, "param": param, "code": code}}
    return httpx.Response(status, json=body, headers=headers)


# --- Chat Completions payloads ---------------------------------------------------------------


def chat_usage(
    prompt: int = 12, completion: int = 5, *, cached: int = 0, reasoning: int = 0
) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def chat_tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def completion(
    content: str | None = None,
    *,
    tool_calls: Sequence[dict[str, Any]] = (),
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
    refusal: str | None = None,
    model: str = "gpt-4.1-mini-2025-04-14",
    **message_extra: Any,
) -> dict[str, Any]:
    """A ``chat.completion`` object with one choice."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "refusal": refusal,
        "annotations": [],
        **message_extra,
    }
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": usage if usage is not None else chat_usage(),
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306",
    }


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    model: str = "gpt-4.1-mini-2025-04-14",
) -> dict[str, Any]:
    """A ``chat.completion.chunk``; no delta and a usage makes the final usage-only chunk."""
    choices = []
    if delta is not None or finish_reason is not None:
        choices.append(
            {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}
        )
    data: dict[str, Any] = {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": model,
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306",
        "choices": choices,
        "usage": usage,
    }
    return data


def chat_stream(
    text: Sequence[str] = (),
    *,
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
) -> httpx.Response:
    """A streamed text answer: role chunk, one chunk per fragment, finish, usage, [DONE]."""
    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    chunks += [chunk({"content": t}) for t in text]
    chunks.append(chunk({}, finish_reason=finish_reason))
    chunks.append(chunk(usage=usage or chat_usage()))
    return sse(chunks)


def call_fragment(
    index: int, arguments: str, *, call_id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """A streamed ``tool_calls`` delta entry (id and name only on a call's first fragment)."""
    entry: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        entry["id"] = call_id
        entry["type"] = "function"
        entry["function"]["name"] = name
    return entry
