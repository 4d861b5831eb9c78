"""Text-mode (ReAct) tool calling for models without native function calling.

:class:`TextToolMode` wraps any :class:`~agentloop.models.base.Model`. It sends no native tools:
the tools and the reply protocol go into the instructions
(:func:`~agentloop.models.text_protocol.protocol_instructions`), the history is rendered as plain
text with ``json.dumps`` (:func:`~agentloop.models.text_protocol.render_history`), and the reply
is parsed back into our items (:func:`~agentloop.models.text_reply.parse_reply`):

- ``Thought:`` text becomes a :class:`~agentloop.items.Reasoning` item (raw ``content``);
- each action becomes a :class:`~agentloop.items.FunctionCall` with a fresh call id (several
  actions in one reply are several calls, unless ``parallel_tool_calls`` is off);
- a final answer (or a reply with no action) becomes an assistant message.

The loop never knows about text mode. An action that cannot be parsed still flows through it:

- arguments that do not parse stay raw in the call, so the loop's own argument check answers
  with the JSON error (``Invalid arguments for tool ...``);
- an action with no tool name (or a broken JSON call block) becomes a call to the reserved
  pseudo-tool :data:`~agentloop.models.text_protocol.PARSE_ERROR_TOOL`, which the loop answers
  as an unknown tool. Both are error outputs, so ``max_consecutive_errors`` still bounds a model
  that never gets the format right.

When the history is rendered for the next turn, those observations show the model the reason and
the exact expected format. The state stays plain items, so a paused run resumes anywhere.

Streaming: the final answer streams live as ``text_delta``, without its label, from the moment
``Final Answer:`` is seen with no action before it (the thoughts before it come first, as one
``reasoning_delta``). Anything else is known only once the reply is complete: then come the
thoughts as one ``reasoning_delta`` and the calls as ``tool_call_delta`` parts, or a label-less
answer as one ``text_delta``. The text deltas always add up to the answer message. Usage, model
name and retries pass through.

:class:`TextModeFallback` wraps a native model and switches to text mode, once, when the
provider rejects tools (:class:`~agentloop.errors.ToolsNotSupported`), streaming a ``warning``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from agentloop.errors import ConfigError, ModelError, ToolsNotSupported
from agentloop.items import FunctionCall, Item, Message, OutputText, Reasoning, new_id
from agentloop.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ResponseDone,
    StreamPart,
    StreamWarning,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
)
from agentloop.models.text_protocol import PARSE_ERROR_TOOL, protocol_instructions, render_history
from agentloop.models.text_reply import FINAL_LABEL, ParsedCall, Reply, answer_start, parse_reply

__all__ = ["TextModeFallback", "TextToolMode"]

log = logging.getLogger("agentloop.models")
_LABEL_TAIL = " \t*_"


def reply_items(reply: Reply) -> list[Item]:
    """Our items for a parsed reply: reasoning and calls in reply order, then the answer."""
    items: list[Item] = []
    for step in reply.steps:
        if isinstance(step, ParsedCall):
            items.append(
                FunctionCall(call_id=new_id("call"), name=step.name, arguments=step.arguments)
            )
        else:
            items.append(Reasoning(content=(step,)))
    if reply.answer:
        items.append(Message(role="assistant", content=(OutputText(text=reply.answer),)))
    return items


class _AnswerStream:
    """Finds the final answer in a growing reply and releases it as text deltas.

    Leading and trailing whitespace is held back, so the deltas add up to exactly the answer
    that :func:`parse_reply` gives for the whole reply."""

    def __init__(self, tools: tuple[ToolSchema, ...]) -> None:
        self.tools = tools
        self.buffer = ""
        self.checked = 0
        self.start: int | None = None
        self.sent = 0
        self.text = ""
        self.hopeless = False

    def feed(self, delta: str) -> list[StreamPart]:
        self.buffer += delta
        parts: list[StreamPart] = []
        if self.start is None and not self.hopeless:
            parts += self._find_start()
        if self.start is not None:
            chunk = self.buffer[self.sent :]
            if not self.text:
                stripped = chunk.lstrip()
                self.sent += len(chunk) - len(stripped)
                chunk = stripped
            chunk = chunk.rstrip()
            if chunk:
                self.sent += len(chunk)
                self.text += chunk
                parts.append(TextDelta(delta=chunk))
        return parts

    def _find_start(self) -> list[StreamPart]:
        line_start = self.buffer.rfind("\n", 0, self.checked) + 1
        self.checked = len(self.buffer)
        if FINAL_LABEL.search(self.buffer, line_start) is None:
            return []
        at = answer_start(self.buffer, self.tools)
        if at is None:
            self.hopeless = True  # an action came first: the answer will be dropped
            return []
        if not self.buffer[at:].strip(_LABEL_TAIL):
            self.checked = line_start  # the label may still grow ("Final Answer:**")
            return []
        self.start = self.sent = at
        thoughts = "\n".join(parse_reply(self.buffer, self.tools).thoughts)
        return [ReasoningDelta(delta=thoughts)] if thoughts else []


class TextToolMode(Model):
    """Tool calling through a text protocol (ReAct), for models without function calling."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.name = model.name

    def __repr__(self) -> str:
        return f"TextToolMode({self.model!r})"

    def inner_request(self, request: ModelRequest) -> ModelRequest:
        """The request the wrapped model gets: no native tools, the protocol in the
        instructions, the history as text."""
        tools = tuple(request.tools)
        if any(t.name == PARSE_ERROR_TOOL for t in tools):
            raise ConfigError(f"the tool name {PARSE_ERROR_TOOL!r} is reserved in text mode")
        instructions, output_schema = request.instructions, request.output_schema
        if tools:
            protocol = protocol_instructions(
                tools,
                tool_choice=request.tool_choice,
                parallel_tool_calls=request.parallel_tool_calls,
                output_schema=output_schema,
            )
            instructions = f"{instructions}\n\n{protocol}" if instructions else protocol
            output_schema = None
        return ModelRequest(
            items=tuple(render_history(request.items, tools, react=bool(tools))),
            instructions=instructions,
            parallel_tool_calls=request.parallel_tool_calls,
            settings=request.settings,
            output_schema=output_schema,
        )

    def parse(self, request: ModelRequest, inner: ModelResponse) -> ModelResponse:
        """Our response for the wrapped model's answer to :meth:`inner_request`."""
        if not request.tools:
            return inner
        reply = parse_reply(
            inner.text, request.tools, parallel_tool_calls=request.parallel_tool_calls
        )
        kept = [i for i in inner.items if not (isinstance(i, Message) and i.role == "assistant")]
        items = kept + reply_items(reply)
        has_calls = any(isinstance(i, FunctionCall) for i in items)
        return ModelResponse(
            items=tuple(items),
            usage=inner.usage,
            finish_reason="tool_calls" if has_calls else inner.finish_reason,
            model=inner.model,
            retries=inner.retries,
        )

    async def request(self, request: ModelRequest) -> ModelResponse:
        inner = await self.model.request(self.inner_request(request))
        return self.parse(request, inner)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        tools = tuple(request.tools)
        answer = _AnswerStream(tools)
        inner: ModelResponse | None = None
        parts = self.model.stream(self.inner_request(request))
        try:
            async for part in parts:
                if isinstance(part, ResponseDone):
                    inner = part.response
                elif not tools:
                    yield part
                elif isinstance(part, TextDelta):
                    for out in answer.feed(part.delta):
                        yield out
                elif not isinstance(part, ToolCallDelta):
                    yield part
        finally:
            close = getattr(parts, "aclose", None)
            if close is not None:
                await close()
        if inner is None:
            raise ModelError("the model's stream ended without a response")
        response = self.parse(request, inner)
        if tools:
            for out in _closing_parts(response, answer):
                yield out
        yield ResponseDone(response=response)

    async def aclose(self) -> None:
        await self.model.aclose()


def _closing_parts(response: ModelResponse, answer: _AnswerStream) -> list[StreamPart]:
    """The parts not streamed live: thoughts, calls, or the rest of the answer."""
    parts: list[StreamPart] = []
    text = response.text
    if answer.start is not None:
        if text.startswith(answer.text) and len(text) > len(answer.text):
            parts.append(TextDelta(delta=text[len(answer.text) :]))
        return parts
    thoughts = "\n".join(
        "\n".join(i.content) for i in response.items if isinstance(i, Reasoning) and i.content
    )
    if thoughts:
        parts.append(ReasoningDelta(delta=thoughts))
    if text:
        parts.append(TextDelta(delta=text))
    for index, call in enumerate(response.tool_calls):
        parts.append(
            ToolCallDelta(
                index=index, call_id=call.call_id, name=call.name, arguments_delta=call.arguments
            )
        )
    return parts


class TextModeFallback(Model):
    """A native model that switches to :class:`TextToolMode` the first time its provider
    rejects tools (:class:`~agentloop.errors.ToolsNotSupported`).

    The switch happens once per wrapper (so once per agent): the stream that hit it yields a
    ``warning`` part and continues in text mode; later requests go straight to text mode.
    Other attributes are read from the wrapped model.
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self.name = model.name
        self.text_mode: TextToolMode | None = None

    def __repr__(self) -> str:
        return f"TextModeFallback({self.model!r})"

    def __getattr__(self, name: str) -> Any:
        if name == "model":  # not set yet: avoid recursing during construction
            raise AttributeError(name)
        return getattr(self.model, name)

    def _switch(self, error: ToolsNotSupported) -> TextToolMode:
        if self.text_mode is None:
            log.warning("%s", self.warning(error))
            self.text_mode = TextToolMode(self.model)
        return self.text_mode

    def warning(self, error: ToolsNotSupported) -> str:
        return (
            f"model {self.name!r} does not support native tool calling ({error}); "
            "falling back to text-mode (ReAct) tool calling from now on"
        )

    async def request(self, request: ModelRequest) -> ModelResponse:
        if self.text_mode is None and request.tools:
            try:
                return await self.model.request(request)
            except ToolsNotSupported as exc:
                return await self._switch(exc).request(request)
        return await (self.text_mode or self.model).request(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        if self.text_mode is not None or not request.tools:
            async for part in (self.text_mode or self.model).stream(request):
                yield part
            return
        parts = self.model.stream(request)
        error: ToolsNotSupported | None = None
        started = False
        try:
            while True:
                try:
                    part = await anext(parts)
                except StopAsyncIteration:
                    return
                except ToolsNotSupported as exc:
                    if started:
                        raise
                    error = exc
                    break
                started = True
                yield part
        finally:
            close = getattr(parts, "aclose", None)
            if close is not None:
                await close()
        assert error is not None
        yield StreamWarning(message=self.warning(error))
        async for part in self._switch(error).stream(request):
            yield part

    async def aclose(self) -> None:
        await self.model.aclose()
