"""One response being produced: the loop runs in its own task; its events are mapped once and
fanned out to the SSE subscriber (if any); the outcome is stored before the terminal event is
sent, so a client may continue from it the moment it sees ``response.completed``.

:class:`Registry` knows the responses running in this process (for cancel and live retrieval).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from agentloop.errors import ModelError
from agentloop.gateway.ids import TurnIds
from agentloop.gateway.resource import ResponseMeta, snapshot, wire_item, without_output
from agentloop.gateway.streaming import DONE_FRAME, EventMapper, drop_unanswerable, encode_sse
from agentloop.items import Item, item_to_dict
from agentloop.run.agent import Agent
from agentloop.run.events import RunFinished
from agentloop.run.result import RunResult
from agentloop.run.stream import RunStream
from agentloop.store import ResponseRecord, Store

log = logging.getLogger("agentloop.gateway")
audit_log = logging.getLogger("agentloop.audit")


@dataclass(frozen=True, kw_only=True, slots=True)
class Principal:
    """Who is asking: a tenant, and the API key used (None in local single-user mode)."""

    tenant_id: str
    key_id: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Deferred:
    """A stored response that nobody can see while it runs (not streamed, not in the
    background): it is written once, when it ends."""

    tenant_id: str
    key_id: str | None
    model: str
    created_at: int
    background: bool
    previous: ResponseRecord | None
    input_items: list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    status: str
    incomplete_reason: str | None = None
    error: dict[str, str] | None = None


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def outcome_of(result: RunResult | None, *, client_tools_status: str) -> Outcome:
    """The response status for how the run ended."""
    if result is None:
        return Outcome(
            status="failed",
            error={"code": "server_error", "message": "The gateway failed to run the loop."},
        )
    if result.status == "completed":
        return Outcome(status="completed")
    if result.status == "requires_action":
        if result.reason == "client_tool_call":
            return Outcome(status=client_tools_status)
        return Outcome(status="requires_action")
    if result.status == "incomplete":
        reason = result.budget if result.reason == "budget_exceeded" else result.reason
        return Outcome(status="incomplete", incomplete_reason=reason or result.reason)
    if result.status == "cancelled":
        return Outcome(status="cancelled", incomplete_reason="cancelled")
    err = result.error
    if isinstance(err, ModelError):
        error = {"code": _snake(type(err).__name__), "message": str(err) or "model error"}
    else:
        if err is not None:
            log.error("model backend raised", exc_info=err)
        error = {"code": "model_error", "message": "The model backend failed unexpectedly."}
    return Outcome(status="failed", error=error)


class Execution:
    """A response in flight. ``start()`` launches it; ``frames()`` streams it as SSE."""

    def __init__(
        self,
        *,
        principal: Principal,
        meta: ResponseMeta,
        agent: Agent,
        ids: TurnIds,
        conversation: list[Item],
        record: ResponseRecord | None,
        deferred: Deferred | None = None,
        store: Store,
        streaming: bool,
        background: bool,
        client_tools_status: str,
        on_stored: Callable[[str, list[Item]], None] | None = None,
        encrypted: bool = False,
    ) -> None:
        self.principal = principal
        self.encrypted = encrypted
        self.on_stored = on_stored
        self.meta = meta
        self.agent = agent
        self.conversation = conversation
        self.record = record
        self.deferred = deferred
        self.store = store
        self.background = background
        self.client_tools_status = client_tools_status
        spec = getattr(agent, "output", None)
        self.structured = spec is not None
        hidden = frozenset(
            schema.name
            for schema in (getattr(spec, "tool", None), getattr(spec, "submit", None))
            if schema is not None
        )
        self.mapper = EventMapper(ids, emit=streaming, hidden=hidden, encrypted=encrypted)
        self.queue: asyncio.Queue[bytes | None] | None = asyncio.Queue() if streaming else None
        self.final: dict[str, Any] | None = None
        self.finished = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self._stream: RunStream | None = None
        self._cancel_early = False

    @property
    def id(self) -> str:
        return self.meta.id

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name=f"response {self.id}")

    def cancel(self) -> None:
        """Ask the run to stop; it ends ``cancelled`` keeping everything done so far."""
        if self._stream is not None:
            self._stream.cancel()
        else:
            self._cancel_early = True

    async def wait(self) -> dict[str, Any]:
        await self.finished.wait()
        assert self.final is not None
        return self.final

    def live(self) -> dict[str, Any]:
        """The response as it is now."""
        if self.final is not None:
            return self.final
        output = [wire_item(i, encrypted=self.encrypted) for i in self.mapper.output_items()]
        return snapshot(self.meta.base, status="in_progress", output=output)

    def _push(self) -> None:
        events = self.mapper.take()
        if self.queue is not None:
            for event in events:
                self.queue.put_nowait(encode_sse(event))

    async def _run(self) -> None:
        result: RunResult | None = None
        try:
            self.mapper.start(snapshot(self.meta.base, status="in_progress", output=[]))
            self._push()
            self._stream = stream = self.agent.stream(self.conversation)
            if self._cancel_early:
                stream.cancel()
            async for event in stream:
                if isinstance(event, RunFinished):
                    result = event.result
                    break
                self.mapper.feed(event)
                self._push()
        except asyncio.CancelledError:
            log.info("response task cancelled", extra={"response_id": self.id})
        except Exception:
            log.exception("the loop failed", extra={"response_id": self.id})
        try:
            await asyncio.shield(self._finish(result))
        except asyncio.CancelledError:
            await self.finished.wait()
        except Exception:
            log.exception("could not finish the response", extra={"response_id": self.id})
            self._fail_safe()
        finally:
            if self.queue is not None:
                self.queue.put_nowait(None)

    def _fail_safe(self) -> None:
        """End the stream with ``failed`` when finishing normally went wrong (a bug)."""
        if self.finished.is_set():
            return
        error = {"code": "server_error", "message": "The gateway failed to finish the response."}
        final = snapshot(
            self.meta.base, status="failed", output=[], error=error, completed_at=int(time.time())
        )
        self.mapper.terminal(final)
        self.final = final
        self._push()
        self.finished.set()

    async def _finish(self, result: RunResult | None) -> None:
        try:
            self.mapper.reconcile(result)
        except Exception:
            log.exception("could not reconcile the stream", extra={"response_id": self.id})
        outcome = outcome_of(result, client_tools_status=self.client_tools_status)
        structured = self.structured and outcome.status == "completed"
        if structured and result is not None and result.output is not None:
            self.mapper.final_text(json.dumps(result.output, ensure_ascii=False))
        output_items = self.mapper.output_items()
        final = snapshot(
            self.meta.base,
            status=outcome.status,
            output=[wire_item(i, encrypted=self.encrypted) for i in output_items],
            usage=result.usage if result is not None else None,
            error=outcome.error,
            incomplete_reason=outcome.incomplete_reason,
            completed_at=int(time.time()),
        )
        audit = [a.to_dict() for a in result.audit] if result is not None else []
        for record in audit:
            audit_log.info(
                "tool %s %s/%s",
                record["tool"],
                record["decision"],
                record["outcome"],
                extra={
                    "response_id": self.id,
                    "tenant_id": self.principal.tenant_id,
                    "key_id": self.principal.key_id,
                    "call_id": record["call_id"],
                    "tool": record["tool"],
                    "arguments": record["arguments"],
                    "decision": record["decision"],
                    "outcome": record["outcome"],
                    "duration_s": round(record["duration"], 6),
                    "cached": record["cached"],
                    "detail": record["message"],
                },
            )
        if self.stored:
            try:
                final = await self._store(final, outcome.status, output_items, audit)
            except Exception:
                log.exception("could not store the response", extra={"response_id": self.id})
        self.mapper.terminal(final)
        self.final = final
        self._push()
        self.finished.set()
        log.info(
            "response %s %s",
            self.id,
            final["status"],
            extra={
                "response_id": self.id,
                "tenant_id": self.principal.tenant_id,
                "status": final["status"],
                "turns": result.turns if result else 0,
                "tool_calls": result.tool_calls if result else 0,
            },
        )

    @property
    def stored(self) -> bool:
        """Whether this response is (or will be) stored."""
        return self.record is not None or self.deferred is not None

    async def _store(
        self, final: dict[str, Any], status: str, output: list[Item], audit: list[dict[str, Any]]
    ) -> dict[str, Any]:
        outputs = [item_to_dict(i) for i in output]
        if self.record is not None:
            stored = await self.store.finish_response(
                self.record,
                status=status,
                completed_at=final["completed_at"],
                resource=without_output(final),
                output_items=outputs,
                audit=audit,
            )
            if not stored:  # cancelled by another worker meanwhile
                return {**final, "status": "cancelled"}
        else:
            d = self.deferred
            assert d is not None
            await self.store.store_response(
                response_id=self.id,
                tenant_id=d.tenant_id,
                key_id=d.key_id,
                model=d.model,
                created_at=d.created_at,
                background=d.background,
                previous=d.previous,
                status=status,
                completed_at=final["completed_at"],
                resource=without_output(final),
                input_items=d.input_items,
                output_items=outputs,
                audit=audit,
            )
        if self.on_stored is not None:
            self.on_stored(self.id, drop_unanswerable([*self.conversation, *output]))
        return final

    async def frames(self) -> AsyncIterator[bytes]:
        """SSE frames until the terminal event, then ``[DONE]``. If the consumer goes away
        first (client disconnect), a foreground run is cancelled."""
        assert self.queue is not None
        try:
            while True:
                frame = await self.queue.get()
                if frame is None:
                    break
                yield frame
            yield DONE_FRAME
        finally:
            if not self.finished.is_set() and not self.background:
                log.info("client went away; cancelling", extra={"response_id": self.id})
                self.cancel()


class Registry:
    """Responses running in this process.

    While it runs responses whose id is visible (streamed or background, stored as
    ``in_progress``: the only ones another worker can be asked to cancel), a watcher checks the
    store every ``poll_interval`` seconds, with one query for all of them, for cancels asked
    elsewhere, and cancels those runs through the normal path.
    """

    def __init__(self, store: Store | None = None, *, poll_interval: float = 0.5) -> None:
        self._running: dict[str, Execution] = {}
        self.store = store
        self.poll_interval = poll_interval
        self._watcher: asyncio.Task[None] | None = None

    def count(self, tenant_id: str) -> int:
        """Responses of this tenant that have not finished yet."""
        return sum(
            1
            for e in self._running.values()
            if e.principal.tenant_id == tenant_id and not e.finished.is_set()
        )

    def add(self, execution: Execution) -> None:
        self._running[execution.id] = execution
        assert execution.task is not None
        execution.task.add_done_callback(lambda _t: self._running.pop(execution.id, None))
        watching = self._watcher is not None and not self._watcher.done()
        if self.store is not None and execution.record is not None and not watching:
            self._watcher = asyncio.create_task(self._watch(), name="cancel watcher")

    def _watched(self) -> list[Execution]:
        return [
            e for e in self._running.values() if e.record is not None and not e.finished.is_set()
        ]

    async def _watch(self) -> None:
        """Cancel the runs another worker was asked to cancel; ends when none is left."""
        assert self.store is not None
        while self._watched():
            await asyncio.sleep(self.poll_interval)
            watched = {e.id: e for e in self._watched()}
            if not watched:
                break
            try:
                asked = await self.store.cancel_requests(list(watched))
            except Exception:
                log.exception("could not check for cancel requests")
                continue
            for response_id in asked:
                log.info("cancel asked by another worker", extra={"response_id": response_id})
                watched[response_id].cancel()

    def ids(self) -> list[str]:
        """Ids of the responses running now."""
        return list(self._running)

    def get(self, response_id: str, tenant_id: str) -> Execution | None:
        """The tenant's execution while it runs. A finished one is the store's business (it was
        stored before it finished), even if its task has not been reaped yet: otherwise a
        response deleted right after it finished could still be served from memory."""
        execution = self._running.get(response_id)
        if (
            execution is None
            or execution.principal.tenant_id != tenant_id
            or execution.finished.is_set()
        ):
            return None
        return execution

    async def shutdown(self) -> None:
        """Cancel everything still running and wait for it to be stored."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        running = list(self._running.values())
        for execution in running:
            execution.cancel()
        for execution in running:
            await execution.finished.wait()
