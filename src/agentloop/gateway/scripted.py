"""The ``scripted`` backend: a deterministic, offline model for demos, tests and benchmarks.

It reads its script from the conversation. When the last user message is a JSON object with a
``"script"`` list, turn *n* after that message plays ``script[n]`` (turns are counted by the
blocks of tool outputs that follow the message, so the script carries across
``previous_response_id`` continuations). A turn is one action or a list of actions:

- ``{"say": "text"}``: assistant text, streamed word by word;
- ``{"think": "text"}``: a reasoning item with this summary;
- ``{"call": "name", "arguments": {...}}``: a tool call (several in one turn run in parallel);
- ``{"fail": "message"}``: the provider fails (the response ends ``failed``);
- ``{"wait": true}``: block until cancelled (for cancellation and disconnect tests).

When the script is exhausted it answers with a summary of the latest tool outputs. Without a
script it echoes the last user message. It honours ``tool_choice="none"`` by dropping calls.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agentloop.errors import ProviderUnavailable
from agentloop.items import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    OutputText,
    Reasoning,
    Usage,
    new_id,
)
from agentloop.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ResponseDone,
    StreamPart,
    TextDelta,
    ToolCallDelta,
)

Action = dict[str, Any]


def _last_user(items: Sequence[Item]) -> int:
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if isinstance(item, Message) and item.role == "user":
            return index
    return -1


def _turn_index(items: Sequence[Item], start: int) -> int:
    """How many model turns happened since ``start``: the blocks of tool outputs after it."""
    blocks, inside = 0, False
    for item in items[start + 1 :]:
        is_output = isinstance(item, FunctionCallOutput)
        if is_output and not inside:
            blocks += 1
        inside = is_output
    return blocks


def _script(message: Message) -> list[Any] | None:
    text = message.text.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    script = data.get("script") if isinstance(data, dict) else None
    return script if isinstance(script, list) else None


def _summary(items: Sequence[Item]) -> str:
    outputs: list[FunctionCallOutput] = []
    for item in reversed(items):
        if isinstance(item, FunctionCallOutput):
            outputs.append(item)
        elif outputs:
            break
    if not outputs:
        return "Done."
    names = {i.call_id: i.name for i in items if isinstance(i, FunctionCall)}
    parts = [f"{names.get(o.call_id, 'tool')} -> {o.output}" for o in reversed(outputs)]
    return "Done. " + "; ".join(parts)


def _usage(request: ModelRequest, produced: int) -> Usage:
    return Usage.of(10 * max(len(request.items), 1), max(produced // 4, 1))


class ScriptedBackend(Model):
    """See the module docstring. Stateless: safe to share between requests."""

    def __init__(self, name: str = "scripted") -> None:
        self.name = name

    def plan(self, request: ModelRequest) -> list[Action]:
        """The actions of this turn."""
        items = request.items
        at = _last_user(items)
        if at < 0:
            return [{"say": "Hello! Send a message (or a JSON script) to begin."}]
        message = items[at]
        assert isinstance(message, Message)
        script = _script(message)
        if script is None:
            return [{"say": f"echo: {message.text}"}]
        turn = _turn_index(items, at)
        if turn >= len(script):
            return [{"say": _summary(items)}]
        step = script[turn]
        actions = step if isinstance(step, list) else [step]
        out = [a for a in actions if isinstance(a, dict)]
        if request.tool_choice == "none":
            out = [a for a in out if "call" not in a] or [{"say": "(tools are disabled)"}]
        return out

    async def request(self, request: ModelRequest) -> ModelResponse:
        response: ModelResponse | None = None
        async for part in self.stream(request):
            if isinstance(part, ResponseDone):
                response = part.response
        assert response is not None
        return response

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        items: list[Item] = []
        text: list[str] = []
        message_at: int | None = None
        calls = 0
        produced = 0
        for action in self.plan(request):
            if "fail" in action:
                raise ProviderUnavailable(str(action["fail"]), status_code=503)
            if action.get("wait"):
                await asyncio.Event().wait()
            if "think" in action:
                thought = str(action["think"])
                yield ReasoningDelta(delta=thought)
                items.append(Reasoning(summary=(thought,)))
                produced += len(thought)
            if "say" in action:
                said = str(action["say"])
                if message_at is None:
                    message_at = len(items)
                    items.append(Message(role="assistant", content=()))
                elif text:
                    said = " " + said
                words = said.split(" ")
                for k, word in enumerate(words):
                    yield TextDelta(delta=word if k == len(words) - 1 else word + " ")
                text.append(said)
                produced += len(said)
            if "call" in action:
                args = action.get("arguments", {})
                raw = args if isinstance(args, str) else json.dumps(args)
                call_id = str(action.get("call_id") or new_id("call"))
                name = str(action["call"])
                half = len(raw) // 2
                yield ToolCallDelta(
                    index=calls, call_id=call_id, name=name, arguments_delta=raw[:half]
                )
                yield ToolCallDelta(
                    index=calls, call_id=None, name=None, arguments_delta=raw[half:]
                )
                items.append(FunctionCall(call_id=call_id, name=name, arguments=raw))
                calls += 1
                produced += len(raw)
        if message_at is not None:
            items[message_at] = Message(role="assistant", content=(OutputText(text="".join(text)),))
        response = ModelResponse(
            items=tuple(items),
            usage=_usage(request, produced),
            finish_reason="tool_calls" if calls else "stop",
            model=self.name,
        )
        yield ResponseDone(response=response)
