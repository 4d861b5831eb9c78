"""Loop events -> Open Responses streaming events (the one mapping of the gateway).

``response.created`` and ``response.in_progress`` open the stream; each item then flows
``response.output_item.added`` -> its deltas -> ``response.output_item.done``; one terminal
event closes it, however many turns the loop ran. Every event gets a ``sequence_number``.
The mapper also decides the order of the response's ``output`` (the order items were
announced), so the stream, the final object and the store agree. With ``emit=False`` it only
tracks the output (non-streaming requests).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentloop.gateway.ids import TurnIds
from agentloop.gateway.resource import TERMINAL_EVENT, wire_item
from agentloop.items import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    OutputText,
    Reasoning,
    Refusal,
    with_id,
)
from agentloop.models.base import ReasoningDelta, TextDelta, ToolCallDelta
from agentloop.run.events import Event, ItemAdded, TurnStarted
from agentloop.run.result import RunResult

SSEEvent = dict[str, Any]


def encode_sse(event: SSEEvent) -> bytes:
    """One SSE frame; the ``event:`` line equals the JSON ``type``."""
    data = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
    return f"event: {event['type']}\ndata: {data}\n\n".encode()


DONE_FRAME = b"data: [DONE]\n\n"


@dataclass(kw_only=True, slots=True)
class _Open:
    """An item announced from deltas whose final form has not arrived yet."""

    kind: str
    index: int
    id: str
    text: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""


class EventMapper:
    def __init__(
        self,
        ids: TurnIds,
        *,
        emit: bool = True,
        hidden: frozenset[str] = frozenset(),
        encrypted: bool = False,
    ) -> None:
        self.ids = ids
        self.emit = emit
        self.encrypted = encrypted
        """Whether reasoning items show their encrypted content (the request's ``include``)."""
        self.hidden = hidden
        """Tools the client never sees (the structured-output tools): their calls and outputs
        are not announced."""
        self._hidden_calls: set[str] = set()
        self._hidden_deltas: set[int] = set()
        self.seq = 0
        self.events: list[SSEEvent] = []
        self.output: list[Item | None] = []
        self.seen: set[str] = set()
        self.open: dict[str, _Open] = {}
        self._message: _Open | None = None
        self._reasoning: _Open | None = None
        self._calls: dict[int, _Open] = {}

    # --- plumbing ----------------------------------------------------------------------------

    def _wire(self, item: Item) -> dict[str, Any]:
        return wire_item(item, encrypted=self.encrypted)

    def _e(self, type_: str, **fields: Any) -> None:
        if self.emit:
            self.events.append({"type": type_, "sequence_number": self.seq, **fields})
        self.seq += 1

    def take(self) -> list[SSEEvent]:
        """The events produced since the last call."""
        out, self.events = self.events, []
        return out

    def _slot(self) -> int:
        self.output.append(None)
        return len(self.output) - 1

    def output_items(self) -> list[Item]:
        return [i for i in self.output if i is not None]

    # --- the stream ------------------------------------------------------------------------

    def start(self, resource: dict[str, Any]) -> None:
        self._e("response.created", response=resource)
        self._e("response.in_progress", response=resource)

    def feed(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self._text_delta(event.delta)
        elif isinstance(event, ToolCallDelta):
            self._call_delta(event)
        elif isinstance(event, ReasoningDelta):
            self._reasoning_delta(event.delta)
        elif isinstance(event, ItemAdded):
            self._item(event.item)
        elif isinstance(event, TurnStarted):
            self._message, self._reasoning, self._calls = None, None, {}
            self._hidden_deltas = set()

    def _text_delta(self, delta: str) -> None:
        o = self._message
        if o is None:
            o = self._message = _Open(kind="message", index=self._slot(), id=self.ids.message_id())
            self.open[o.id] = o
            self._e(
                "response.output_item.added",
                output_index=o.index,
                item={
                    "type": "message",
                    "id": o.id,
                    "status": "in_progress",
                    "role": "assistant",
                    "content": [],
                },
            )
            self._e(
                "response.content_part.added",
                item_id=o.id,
                output_index=o.index,
                content_index=0,
                part={"type": "output_text", "text": "", "annotations": []},
            )
        o.text.append(delta)
        self._e(
            "response.output_text.delta",
            item_id=o.id,
            output_index=o.index,
            content_index=0,
            delta=delta,
            logprobs=[],
        )

    def _reasoning_delta(self, delta: str) -> None:
        o = self._reasoning
        if o is None:
            o = self._reasoning = _Open(
                kind="reasoning", index=self._slot(), id=self.ids.reasoning_id()
            )
            self.open[o.id] = o
            self._e(
                "response.output_item.added",
                output_index=o.index,
                item={"type": "reasoning", "id": o.id, "summary": []},
            )
            self._e(
                "response.reasoning_summary_part.added",
                item_id=o.id,
                output_index=o.index,
                summary_index=0,
                part={"type": "summary_text", "text": ""},
            )
        o.text.append(delta)
        self._e(
            "response.reasoning_summary_text.delta",
            item_id=o.id,
            output_index=o.index,
            summary_index=0,
            delta=delta,
        )

    def _call_delta(self, delta: ToolCallDelta) -> None:
        if delta.index in self._hidden_deltas:
            return
        o = self._calls.get(delta.index)
        if o is None:
            if delta.name in self.hidden:
                self._hidden_deltas.add(delta.index)
                return
            item_id = self.ids.call_item_id(delta.index, delta.call_id)
            o = _Open(
                kind="function_call",
                index=self._slot(),
                id=item_id,
                call_id=delta.call_id or "",
                name=delta.name or "",
            )
            self._calls[delta.index] = self.open[o.id] = o
            self._e(
                "response.output_item.added",
                output_index=o.index,
                item={
                    "type": "function_call",
                    "id": o.id,
                    "call_id": o.call_id,
                    "name": o.name,
                    "arguments": "",
                    "status": "in_progress",
                },
            )
        elif delta.call_id:
            self.ids.call_item_id(delta.index, delta.call_id)
        if delta.arguments_delta:
            o.text.append(delta.arguments_delta)
            self._e(
                "response.function_call_arguments.delta",
                item_id=o.id,
                output_index=o.index,
                delta=delta.arguments_delta,
            )

    # --- finished items --------------------------------------------------------------------

    def _item(self, item: Item) -> None:
        item_id = item.id or ""
        if item_id in self.seen:
            return
        self.seen.add(item_id)
        if isinstance(item, FunctionCall) and item.name in self.hidden:
            self._hidden_calls.add(item.call_id)
            return
        if isinstance(item, FunctionCallOutput) and item.call_id in self._hidden_calls:
            return
        o = self.open.pop(item_id, None)
        if o is None:
            self._whole(item)
            return
        self.output[o.index] = item
        if isinstance(item, Message):
            self._close_parts(item, o.index, streamed=True)
        elif isinstance(item, Reasoning):
            text = item.summary[0] if item.summary else "".join(o.text)
            self._e(
                "response.reasoning_summary_text.done",
                item_id=o.id,
                output_index=o.index,
                summary_index=0,
                text=text,
            )
            self._e(
                "response.reasoning_summary_part.done",
                item_id=o.id,
                output_index=o.index,
                summary_index=0,
                part={"type": "summary_text", "text": text},
            )
        elif isinstance(item, FunctionCall):
            self._e(
                "response.function_call_arguments.done",
                item_id=o.id,
                output_index=o.index,
                arguments=item.arguments,
            )
        self._e(
            "response.output_item.done",
            output_index=o.index,
            item=self._wire(item),
        )

    def _close_parts(self, item: Message, index: int, *, streamed: bool) -> None:
        """Content-part events of a message: the rest of the first part if it was streamed,
        every part otherwise."""
        iid = item.id or ""
        for k, part in enumerate(item.content):
            wire = {"type": "output_text", "text": "", "annotations": []}
            if isinstance(part, Refusal):
                wire = {"type": "refusal", "refusal": ""}
            if not (streamed and k == 0):
                self._e(
                    "response.content_part.added",
                    item_id=iid,
                    output_index=index,
                    content_index=k,
                    part=wire,
                )
            if isinstance(part, OutputText):
                if not (streamed and k == 0):
                    self._e(
                        "response.output_text.delta",
                        item_id=iid,
                        output_index=index,
                        content_index=k,
                        delta=part.text,
                        logprobs=[],
                    )
                self._e(
                    "response.output_text.done",
                    item_id=iid,
                    output_index=index,
                    content_index=k,
                    text=part.text,
                    logprobs=[],
                )
                done = {
                    "type": "output_text",
                    "text": part.text,
                    "annotations": list(part.annotations),
                }
            elif isinstance(part, Refusal):
                if not (streamed and k == 0):
                    self._e(
                        "response.refusal.delta",
                        item_id=iid,
                        output_index=index,
                        content_index=k,
                        delta=part.refusal,
                    )
                self._e(
                    "response.refusal.done",
                    item_id=iid,
                    output_index=index,
                    content_index=k,
                    refusal=part.refusal,
                )
                done = {"type": "refusal", "refusal": part.refusal}
            else:
                continue
            self._e(
                "response.content_part.done",
                item_id=iid,
                output_index=index,
                content_index=k,
                part=done,
            )

    def _whole(self, item: Item) -> None:
        """An item that arrives complete (tool outputs, non-streaming models): the full
        added -> deltas -> done sequence."""
        index = self._slot()
        self.output[index] = item
        iid = item.id or ""
        if isinstance(item, Message):
            start = {
                **self._wire(item),
                "status": "in_progress",
                "content": [],
            }
            self._e("response.output_item.added", output_index=index, item=start)
            self._close_parts(item, index, streamed=False)
        elif isinstance(item, FunctionCall):
            start = {
                **self._wire(item),
                "status": "in_progress",
                "arguments": "",
            }
            self._e("response.output_item.added", output_index=index, item=start)
            self._e(
                "response.function_call_arguments.delta",
                item_id=iid,
                output_index=index,
                delta=item.arguments,
            )
            self._e(
                "response.function_call_arguments.done",
                item_id=iid,
                output_index=index,
                arguments=item.arguments,
            )
        elif isinstance(item, Reasoning):
            self._e(
                "response.output_item.added",
                output_index=index,
                item={"type": "reasoning", "id": iid, "summary": []},
            )
            for k, text in enumerate(item.summary):
                part = {"type": "summary_text", "text": text}
                self._e(
                    "response.reasoning_summary_part.added",
                    item_id=iid,
                    output_index=index,
                    summary_index=k,
                    part={"type": "summary_text", "text": ""},
                )
                self._e(
                    "response.reasoning_summary_text.delta",
                    item_id=iid,
                    output_index=index,
                    summary_index=k,
                    delta=text,
                )
                self._e(
                    "response.reasoning_summary_text.done",
                    item_id=iid,
                    output_index=index,
                    summary_index=k,
                    text=text,
                )
                self._e(
                    "response.reasoning_summary_part.done",
                    item_id=iid,
                    output_index=index,
                    summary_index=k,
                    part=part,
                )
        else:
            self._e(
                "response.output_item.added",
                output_index=index,
                item=self._wire(item),
            )
        self._e(
            "response.output_item.done",
            output_index=index,
            item=self._wire(item),
        )

    # --- the end -----------------------------------------------------------------------------

    def reconcile(self, result: RunResult | None) -> None:
        """Items the run has but the stream has not shown (e.g. outputs filled in for calls
        cut short by a cancel), then items left open by an interruption, as ``incomplete``."""
        if result is not None:
            for item in result.new_items:
                if item.id not in self.seen:
                    self._item(item)
        for o in list(self.open.values()):
            text = "".join(o.text)
            final: Item
            if o.kind == "message":
                final = Message(
                    role="assistant", content=(OutputText(text=text),), id=o.id, status="incomplete"
                )
            elif o.kind == "reasoning":
                final = Reasoning(id=o.id, summary=(text,))
            else:
                final = FunctionCall(
                    call_id=o.call_id, name=o.name, arguments=text, id=o.id, status="incomplete"
                )
            self._item(final)
        self.open.clear()

    def final_text(self, text: str) -> None:
        """Add an assistant message (the structured output, as JSON text) unless the output
        already ends with one."""
        items = self.output_items()
        last = items[-1] if items else None
        if isinstance(last, Message) and last.role == "assistant":
            return
        self._item(with_id(Message(role="assistant", content=(OutputText(text=text),))))

    def terminal(self, resource: dict[str, Any]) -> None:
        self._e(TERMINAL_EVENT.get(resource["status"], "response.failed"), response=resource)


def interrupted(item: Item) -> bool:
    """A call whose arguments were cut off: never sent back to a model."""
    return isinstance(item, FunctionCall) and item.status == "incomplete"


def drop_unanswerable(items: list[Item]) -> list[Item]:
    """History without interrupted calls (they have no output and never ran)."""
    return [i for i in items if not interrupted(i)]
