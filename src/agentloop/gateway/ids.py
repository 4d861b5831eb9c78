"""Stable item ids across a stream: announced at the first delta, kept in the final items.

The loop streams a model's deltas before it knows the finished items, but Open Responses
announces each item (with its id) before its first delta. :class:`TurnIds` allocates the ids
when the stream mapper first sees an item; :class:`StampingModel` wraps the real model and
gives the finished items exactly those ids, so the stream, the stored response and the
conversation agree. It can also add the request's structured-output schema.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

from agentloop.items import FunctionCall, Item, Message, Reasoning, new_id
from agentloop.models.base import Model, ModelRequest, ModelResponse, ResponseDone, StreamPart


class TurnIds:
    """Ids allocated for the items of the current model turn, by kind and position."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.message: str | None = None
        self.reasoning: str | None = None
        self.calls: dict[int, str] = {}
        self.call_ids: dict[str, str] = {}

    def message_id(self) -> str:
        if self.message is None:
            self.message = new_id("msg")
        return self.message

    def reasoning_id(self) -> str:
        if self.reasoning is None:
            self.reasoning = new_id("rs")
        return self.reasoning

    def call_item_id(self, index: int, call_id: str | None) -> str:
        item_id = self.calls.get(index)
        if item_id is None:
            item_id = self.calls[index] = new_id("fc")
        if call_id:
            self.call_ids[call_id] = item_id
        return item_id

    def stamp(self, items: tuple[Item, ...]) -> tuple[Item, ...]:
        """The finished items with the ids announced during streaming (fresh ids otherwise)."""
        unused = [self.calls[k] for k in sorted(self.calls)]
        for announced in self.call_ids.values():
            if announced in unused:
                unused.remove(announced)
        message, reasoning = self.message, self.reasoning
        out: list[Item] = []
        for item in items:
            if item.id is None:
                if isinstance(item, Message) and message is not None:
                    item, message = replace(item, id=message), None
                elif isinstance(item, Reasoning) and reasoning is not None:
                    item, reasoning = replace(item, id=reasoning), None
                elif isinstance(item, FunctionCall):
                    item_id = self.call_ids.pop(item.call_id, None)
                    if item_id is None and unused:
                        item_id = unused.pop(0)
                    item = replace(item, id=item_id or new_id("fc"))
            out.append(item)
        return tuple(out)


class StampingModel(Model):
    """Wraps a model: stamps the ids already announced on the stream onto its items."""

    def __init__(self, inner: Model, ids: TurnIds) -> None:
        self.inner = inner
        self.ids = ids
        self.name = inner.name

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.ids.reset()
        response = await self.inner.request(request)
        return replace(response, items=self.ids.stamp(response.items))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        self.ids.reset()
        stream = self.inner.stream(request)
        try:
            async for part in stream:
                if isinstance(part, ResponseDone):
                    response = part.response
                    part = ResponseDone(
                        response=replace(response, items=self.ids.stamp(response.items))
                    )
                yield part
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
