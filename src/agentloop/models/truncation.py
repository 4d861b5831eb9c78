"""Context truncation: when the conversation no longer fits, drop its oldest turns and retry.

This is the Open Responses ``truncation: "auto"`` behaviour, usable by any agent:
``Agent(TruncatingModel(model))``. The run's own history is never changed; only what the model
is sent. Leading system/developer messages are always kept, and a cut never separates a
``function_call`` from its ``function_call_output`` (providers reject orphaned outputs). Once a
cut worked it is applied up front on later turns, so a long run pays for the failed call once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

from agentloop.errors import ContextWindowExceeded
from agentloop.items import FunctionCall, FunctionCallOutput, Item, Message
from agentloop.models.base import Model, ModelRequest, ModelResponse, StreamPart


def _head_length(items: Sequence[Item]) -> int:
    """How many leading system/developer messages there are (always kept)."""
    n = 0
    for item in items:
        if isinstance(item, Message) and item.role in ("system", "developer"):
            n += 1
        else:
            break
    return n


def clean_cut(body: Sequence[Item], start: int) -> int | None:
    """The first index >= ``start`` where ``body`` can be cut without orphaning an output,
    or None when no such place leaves anything to send."""
    pending: set[str] = set()  # calls before the cut still waiting for their output
    answered_later: set[str] = set()
    for item in body[start:]:
        if isinstance(item, FunctionCallOutput):
            answered_later.add(item.call_id)
    for item in body[:start]:
        if isinstance(item, FunctionCall):
            pending.add(item.call_id)
    for cut in range(start, len(body)):
        item = body[cut]
        if not isinstance(item, FunctionCallOutput) and not (pending & answered_later):
            return cut
        if isinstance(item, FunctionCall):
            pending.add(item.call_id)
        elif isinstance(item, FunctionCallOutput):
            answered_later.discard(item.call_id)
            pending.discard(item.call_id)
    return None


class TruncatingModel(Model):
    """Wraps a model; on :class:`ContextWindowExceeded` drops about half of the oldest items
    (after the leading instructions) and tries again, up to ``max_cuts`` times."""

    def __init__(self, inner: Model, *, max_cuts: int = 4) -> None:
        self.inner = inner
        self.name = inner.name
        self.max_cuts = max_cuts
        self.dropped = 0
        """How many of the oldest non-instruction items the last successful call left out."""

    def _cut(self, request: ModelRequest, drop: int) -> ModelRequest | None:
        items = request.items
        head = _head_length(items)
        body = items[head:]
        if drop <= 0:
            return request
        cut = clean_cut(body, min(drop, len(body)))
        if cut is None or cut >= len(body):
            return None
        return replace(request, items=[*items[:head], *body[cut:]])

    def _next_drop(self, request: ModelRequest, drop: int) -> int:
        body = len(request.items) - _head_length(request.items)
        return drop + max(1, (body - drop) // 2)

    async def request(self, request: ModelRequest) -> ModelResponse:
        drop = self.dropped
        for _ in range(self.max_cuts + 1):
            attempt = self._cut(request, drop)
            if attempt is None:
                break
            try:
                response = await self.inner.request(attempt)
            except ContextWindowExceeded:
                drop = self._next_drop(request, drop)
                continue
            self.dropped = drop
            return response
        raise ContextWindowExceeded(
            "the conversation does not fit the model's context window even after truncation"
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        drop = self.dropped
        for _ in range(self.max_cuts + 1):
            attempt = self._cut(request, drop)
            if attempt is None:
                break
            started = False
            try:
                async for part in self.inner.stream(attempt):
                    started = True
                    yield part
            except ContextWindowExceeded:
                if started:
                    raise
                drop = self._next_drop(request, drop)
                continue
            self.dropped = drop
            return
        raise ContextWindowExceeded(
            "the conversation does not fit the model's context window even after truncation"
        )

    async def aclose(self) -> None:
        await self.inner.aclose()
