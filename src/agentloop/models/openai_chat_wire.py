"""Items to Chat Completions request bodies, and completions back to items.

Chat Completions has no reasoning items: :class:`~agentloop.items.Reasoning` items in the
conversation are dropped on the way out (servers that expose reasoning as ``reasoning_content``
or ``reasoning``, such as DeepSeek or vLLM, become Reasoning items on the way in, for display).
``developer`` messages go out as ``system``, which every compatible server understands; text-only
messages are sent with plain string content for the same reason. ``settings.reasoning``'s
``effort`` becomes ``reasoning_effort``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agentloop.errors import BadRequest
from agentloop.items import (
    FunctionCall,
    FunctionCallOutput,
    InputImage,
    InputText,
    Item,
    Message,
    OutputText,
    Reasoning,
    Refusal,
    Usage,
    new_id,
)
from agentloop.models.base import (
    FinishReason,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    StreamPart,
    TextDelta,
    ToolCallDelta,
)
from agentloop.models.openai_tools import StrictTools, output_format, prepare_tools

__all__ = ["build_chat_body", "chat_messages", "chat_usage", "finish_reason", "parse_completion"]

_FINISH: dict[str | None, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


# --- request -------------------------------------------------------------------------------


def build_chat_body(
    model: str, request: ModelRequest, *, strict_tools: bool
) -> tuple[dict[str, Any], StrictTools]:
    """The JSON body of ``POST /chat/completions`` (without ``stream``), and what was strict."""
    body: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(request.items, request.instructions),
    }
    prepared, strict = prepare_tools(request.tools, strict_tools=strict_tools)
    if prepared:
        tools = []
        for tool in prepared:
            function: dict[str, Any] = {"name": tool.name}
            if tool.description:
                function["description"] = tool.description
            function["parameters"] = tool.parameters
            if tool.strict:
                function["strict"] = True
            tools.append({"type": "function", "function": function})
        body["tools"] = tools
        body["tool_choice"] = _tool_choice(request.tool_choice)
        body["parallel_tool_calls"] = request.parallel_tool_calls
    settings = request.settings
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    if settings.max_output_tokens is not None:
        body["max_completion_tokens"] = settings.max_output_tokens
    if settings.reasoning is not None and "effort" in settings.reasoning:
        body["reasoning_effort"] = settings.reasoning["effort"]
    if request.output_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": output_format(request.output_schema, strict),
        }
    body.update(settings.extra)
    return body, strict


def _tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def chat_messages(items: Sequence[Item], instructions: str | None) -> list[dict[str, Any]]:
    """The conversation as Chat messages; consecutive calls share one assistant message."""
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    # the assistant message the next function calls attach to, if it is the last one
    open_assistant: dict[str, Any] | None = None
    for item in items:
        if isinstance(item, Message):
            message = _message(item)
            messages.append(message)
            open_assistant = message if item.role == "assistant" else None
        elif isinstance(item, FunctionCall):
            if open_assistant is None:
                open_assistant = {"role": "assistant", "content": None}
                messages.append(open_assistant)
            open_assistant.setdefault("tool_calls", []).append(
                {
                    "id": item.call_id,
                    "type": "function",
                    "function": {"name": item.name, "arguments": item.arguments},
                }
            )
        elif isinstance(item, FunctionCallOutput):
            messages.append({"role": "tool", "tool_call_id": item.call_id, "content": item.output})
            open_assistant = None
        elif isinstance(item, Reasoning):
            continue  # Chat Completions has no way to send reasoning back
    return messages


def _message(item: Message) -> dict[str, Any]:
    role = "system" if item.role == "developer" else item.role
    if item.role == "assistant":
        text = "".join(p.text for p in item.content if isinstance(p, OutputText | InputText))
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        refusal = "".join(p.refusal for p in item.content if isinstance(p, Refusal))
        if refusal:
            out["refusal"] = refusal
        return out
    if not any(isinstance(p, InputImage) for p in item.content):
        return {"role": role, "content": item.text}
    parts: list[dict[str, Any]] = []
    for part in item.content:
        if isinstance(part, InputImage):
            parts.append(_image(part))
        elif isinstance(part, InputText | OutputText):
            parts.append({"type": "text", "text": part.text})
        else:
            parts.append({"type": "text", "text": part.refusal})
    return {"role": role, "content": parts}


def _image(part: InputImage) -> dict[str, Any]:
    if part.image_url is None:
        raise BadRequest(
            "Chat Completions takes images by URL only; this image has just a file_id "
            "(use an image_url or a data: URL, or the 'openai-responses' provider)"
        )
    image: dict[str, Any] = {"url": part.image_url}
    if part.detail != "auto":
        image["detail"] = part.detail
    return {"type": "image_url", "image_url": image}


# --- response ------------------------------------------------------------------------------


def chat_usage(usage: CompletionUsage | None) -> Usage:
    """Usage with cached-input and reasoning tokens where the server reports them."""
    if usage is None:
        return Usage()
    prompt = usage.prompt_tokens or 0
    completion = usage.completion_tokens or 0
    prompt_details = usage.prompt_tokens_details
    completion_details = usage.completion_tokens_details
    return Usage(
        input_tokens=prompt,
        output_tokens=completion,
        total_tokens=usage.total_tokens or prompt + completion,
        cached_input_tokens=(prompt_details.cached_tokens or 0) if prompt_details else 0,
        reasoning_tokens=(completion_details.reasoning_tokens or 0) if completion_details else 0,
    )


def finish_reason(raw: str | None, *, has_calls: bool) -> FinishReason:
    """One vocabulary; a server that says "stop" after tool calls still meant tool_calls."""
    reason = _FINISH.get(raw, "stop")
    return "tool_calls" if reason == "stop" and has_calls else reason


def reasoning_text(obj: Any) -> str | None:
    """Reasoning that compatible servers attach to a message or delta under a vendor field."""
    extra = getattr(obj, "model_extra", None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def assemble_items(
    *,
    reasoning: str,
    text: str,
    refusal: str,
    calls: Sequence[FunctionCall],
    strict: StrictTools,
) -> tuple[Item, ...]:
    """Output items in Open Responses order: reasoning, the message, then the calls."""
    items: list[Item] = []
    if reasoning:
        items.append(Reasoning(content=(reasoning,)))
    parts: list[OutputText | Refusal] = []
    if text:
        parts.append(OutputText(text=strict.fix_output(text) if not calls else text))
    if refusal:
        parts.append(Refusal(refusal=refusal))
    if parts:
        items.append(Message(role="assistant", content=tuple(parts)))
    items.extend(strict.fix(call) for call in calls)
    return tuple(items)


def parse_completion(completion: ChatCompletion, strict: StrictTools) -> ModelResponse:
    """A :class:`ModelResponse` from a non-streamed completion (first choice)."""
    if not completion.choices:
        return ModelResponse(items=(), usage=chat_usage(completion.usage), model=completion.model)
    choice = completion.choices[0]
    message = choice.message
    calls: list[FunctionCall] = []
    for tc in message.tool_calls or ():
        function = getattr(tc, "function", None)  # custom (non-function) tools are not ours
        if function is not None:
            calls.append(
                FunctionCall(
                    call_id=tc.id or new_id("call"),
                    name=function.name,
                    arguments=function.arguments or "",
                )
            )
    items = assemble_items(
        reasoning=reasoning_text(message) or "",
        text=message.content or "",
        refusal=message.refusal or "",
        calls=calls,
        strict=strict,
    )
    return ModelResponse(
        items=items,
        usage=chat_usage(completion.usage),
        finish_reason=finish_reason(choice.finish_reason, has_calls=bool(calls)),
        model=completion.model,
    )


@dataclass
class _Call:
    call_id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class ChatStreamAssembly:
    """Collects a streamed Chat Completions answer: text, reasoning, and tool calls by index.

    Shared by every adapter that speaks the Chat Completions stream (OpenAI, LiteLLM)."""

    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    slots: dict[int, int] = field(default_factory=dict)  # wire index -> our call index
    chunks: int = 0
    finish: str | None = None
    usage: Any = None
    model: str | None = None

    def add(self, chunk: ChatCompletionChunk) -> list[StreamPart]:
        parts: list[StreamPart] = []
        self.chunks += 1
        self.model = chunk.model or self.model
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        for choice in (chunk.choices or [])[:1]:
            delta = choice.delta
            if choice.finish_reason is not None:
                self.finish = choice.finish_reason
            thought = reasoning_text(delta)
            if thought:
                self.reasoning.append(thought)
                parts.append(ReasoningDelta(delta=thought))
            if delta.content:
                self.text.append(delta.content)
                parts.append(TextDelta(delta=delta.content))
            if getattr(delta, "refusal", None):
                self.refusal.append(str(delta.refusal))
            for tc in delta.tool_calls or ():
                parts.append(self._call_fragment(tc))
        return parts

    def _call_fragment(self, tc: Any) -> ToolCallDelta:
        call_id = getattr(tc, "id", None) or None
        function = getattr(tc, "function", None)
        name = getattr(function, "name", None)
        fragment = getattr(function, "arguments", None) or ""
        index = self._slot(getattr(tc, "index", None), call_id)
        call = self.calls[index]
        if call_id:
            call.call_id = call_id
        if name:
            call.name = name
        call.arguments.append(fragment)
        return ToolCallDelta(
            index=index, call_id=call.call_id, name=call.name or None, arguments_delta=fragment
        )

    def _slot(self, wire_index: int | None, call_id: str | None) -> int:
        """Our index for a fragment: by the wire index, or by id for servers that omit it."""
        if wire_index is None:
            for known, call in self.calls.items():
                if call_id is not None and call.call_id == call_id:
                    return known
            if call_id is None and self.calls:
                return len(self.calls) - 1
            return self._new_call()
        slot = self.slots.get(wire_index)
        if slot is None or (call_id and self.calls[slot].call_id not in (None, call_id)):
            # a new call; a server that reuses an index for a second call gives it a new id
            slot = self._new_call()
            self.slots[wire_index] = slot
        return slot

    def _new_call(self) -> int:
        index = len(self.calls)
        self.calls[index] = _Call()
        return index

    def response(self, strict: StrictTools) -> ModelResponse:
        calls = [
            FunctionCall(
                call_id=c.call_id or new_id("call"), name=c.name, arguments="".join(c.arguments)
            )
            for _, c in sorted(self.calls.items())
        ]
        items = assemble_items(
            reasoning="".join(self.reasoning),
            text="".join(self.text),
            refusal="".join(self.refusal),
            calls=calls,
            strict=strict,
        )
        return ModelResponse(
            items=items,
            usage=chat_usage(self.usage),
            finish_reason=finish_reason(self.finish, has_calls=bool(calls)),
            model=self.model,
        )
