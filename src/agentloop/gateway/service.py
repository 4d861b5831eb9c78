"""The gateway's operations, independent of HTTP: create, retrieve, cancel, delete, list.

``create`` decides everything that can be refused before the run starts (model, tools, tool
choice, history, pending tool outputs, limits) so a bad request is a 4xx with nothing stored.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from agentloop.errors import ConfigError, InvalidItem
from agentloop.gateway.config import GatewayConfig
from agentloop.gateway.ids import StampingModel, TurnIds
from agentloop.gateway.resource import (
    ENCRYPTED_REASONING,
    ResponseMeta,
    snapshot,
    wire_stored,
    without_output,
)
from agentloop.gateway.routing import ModelRouter
from agentloop.gateway.runner import Deferred, Execution, Principal, Registry
from agentloop.gateway.streaming import drop_unanswerable
from agentloop.gateway.tooling import request_tools
from agentloop.gateway.wire import (
    AllowedToolsParam,
    ApiError,
    CreateResponseBody,
    SpecificFunctionParam,
    not_found,
)
from agentloop.items import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    item_from_dict,
    item_to_dict,
    new_id,
    to_items,
    with_id,
)
from agentloop.models.base import ModelSettings
from agentloop.models.truncation import TruncatingModel
from agentloop.run.agent import Agent
from agentloop.run.limits import Limits
from agentloop.run.policy import Policy
from agentloop.store import NotFound, ResponseRecord, Store, StoreConflict
from agentloop.store.repository import RUNNING
from agentloop.tools.tool import Tool


def check_include(include: Sequence[str]) -> None:
    """``include`` values the gateway can honour; the rest is a clear 400."""
    for value in include:
        if value == ENCRYPTED_REASONING:
            continue
        if value == "message.output_text.logprobs":
            raise ApiError(
                400,
                "include 'message.output_text.logprobs' is not supported: the gateway's models "
                "do not return log probabilities.",
                code="unsupported_value",
                param="include",
            )
        raise ApiError(400, f"Invalid include value {value!r}.", code="invalid_value",
                       param="include")  # fmt: skip


def _input_items(body: CreateResponseBody) -> list[Item]:
    value = body.input
    if value is None:
        return []
    if isinstance(value, str):
        return to_items(value)
    items: list[Item] = []
    for index, entry in enumerate(value):
        kind = entry.get("type")
        if kind == "item_reference":
            raise ApiError(
                400,
                "Item references are not supported; send the item itself or "
                "use previous_response_id.",
                code="unsupported_item",
                param=f"input[{index}]",
            )
        try:
            items.append(with_id(item_from_dict(entry)))
        except InvalidItem as exc:
            raise ApiError(
                400, f"Invalid input item: {exc}.", code="invalid_item", param=f"input[{index}]"
            ) from None
    return items


def _check_outputs(history: Sequence[Item], new: Sequence[Item]) -> None:
    """Every function call of the history needs an output before the model is called again."""
    answered = {i.call_id for i in (*history, *new) if isinstance(i, FunctionCallOutput)}
    for item in history:
        if isinstance(item, FunctionCall) and item.call_id not in answered:
            raise ApiError(
                400,
                f"No tool output found for function call {item.call_id}.",
                code="missing_tool_output",
                param="input",
            )


def _tool_choice(body: CreateResponseBody, tools: Sequence[Tool]) -> tuple[str, list[str] | None]:
    """The agent's tool_choice and the policy's allowed tools."""
    names = {t.name for t in tools}
    choice = body.tool_choice
    if choice is None or isinstance(choice, str):
        value = choice or "auto"
        if value == "required" and not tools:
            raise ApiError(
                400,
                "tool_choice 'required' needs at least one tool.",
                code="invalid_value",
                param="tool_choice",
            )
        return value, None
    if isinstance(choice, SpecificFunctionParam):
        if choice.name not in names:
            raise ApiError(
                400,
                f"tool_choice names '{choice.name}', which is not in tools.",
                code="invalid_value",
                param="tool_choice.name",
            )
        return choice.name, None
    assert isinstance(choice, AllowedToolsParam)
    allowed = []
    for index, spec in enumerate(choice.tools):
        if spec.name not in names:
            raise ApiError(
                400,
                f"allowed_tools names '{spec.name}', which is not in tools.",
                code="invalid_value",
                param=f"tool_choice.tools[{index}].name",
            )
        allowed.append(spec.name)
    return choice.mode, allowed


def _settings(body: CreateResponseBody) -> ModelSettings:
    extra: dict[str, Any] = {}
    for name in (
        "presence_penalty",
        "frequency_penalty",
        "top_logprobs",
        "service_tier",
        "safety_identifier",
        "prompt_cache_key",
    ):
        value = getattr(body, name)
        if value is not None:
            extra[name] = value
    if body.text is not None and body.text.verbosity is not None:
        extra["verbosity"] = body.text.verbosity
    reasoning = body.reasoning.model_dump(exclude_none=True) if body.reasoning else None
    return ModelSettings(
        temperature=body.temperature,
        top_p=body.top_p,
        max_output_tokens=body.max_output_tokens,
        reasoning=reasoning or None,
        extra=extra,
    )


class HistoryCache:
    """Conversations of recently stored responses (LRU), so a chain continued on the worker
    that stored it skips decoding its items. A response's conversation never changes once it
    is stored, so entries never go stale; deleting a response evicts it."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._entries: OrderedDict[str, list[Item]] = OrderedDict()

    def get(self, response_id: str) -> list[Item] | None:
        items = self._entries.get(response_id)
        if items is not None:
            self._entries.move_to_end(response_id)
        return items

    def put(self, response_id: str, items: list[Item]) -> None:
        self._entries[response_id] = items
        self._entries.move_to_end(response_id)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def evict(self, response_id: str) -> None:
        self._entries.pop(response_id, None)

    def clear(self) -> None:
        self._entries.clear()


class Gateway:
    """Shared by every request of an app."""

    def __init__(
        self,
        *,
        config: GatewayConfig,
        store: Store,
        router: ModelRouter,
        toolsets: Mapping[str, Sequence[Tool]],
    ) -> None:
        self.config = config
        self.store = store
        self.router = router
        self.toolsets = toolsets
        self.registry = Registry(store, poll_interval=config.server.cancel_poll_interval)
        self.history = HistoryCache()

    async def _history(
        self, principal: Principal, body: CreateResponseBody
    ) -> tuple[list[Item], ResponseRecord | None]:
        """The conversation to continue: from the in-process cache when this worker stored the
        previous response (one query to check it), else rebuilt from the store (two)."""
        prev_id = body.previous_response_id
        if prev_id is None:
            return [], None
        cached = self.history.get(prev_id)
        try:
            if cached is not None:
                record = await self.store.get_record(principal.tenant_id, prev_id)
            else:
                chain = await self.store.load_chain(principal.tenant_id, prev_id)
                record = chain.response
        except NotFound:
            raise ApiError(
                404,
                f"Previous response with id '{prev_id}' not found.",
                code="previous_response_not_found",
                param="previous_response_id",
            ) from None
        if record.status in RUNNING:
            raise ApiError(
                409,
                f"Previous response '{prev_id}' is still in progress; wait for "
                "it to finish or cancel it.",
                code="response_in_progress",
                param="previous_response_id",
            )
        if cached is not None:
            return cached, record
        items = drop_unanswerable([item_from_dict(d) for d in chain.items])
        self.history.put(prev_id, items)
        return items, record

    async def create(self, principal: Principal, body: CreateResponseBody) -> Execution:
        cfg = self.config.server
        model_name = body.model or cfg.default_model
        if not model_name:
            raise ApiError(
                400,
                "Missing required parameter: 'model'.",
                code="missing_required_parameter",
                param="model",
            )
        check_include(body.include)
        model = self.router.get(model_name)
        tools = request_tools(body.tools, self.toolsets)
        tool_choice, allowed = _tool_choice(body, tools)
        if body.background and not body.store:
            raise ApiError(
                400,
                "background responses must be stored (store: true).",
                code="invalid_value",
                param="background",
            )
        new_items = _input_items(body)
        if not new_items and body.previous_response_id is None:
            raise ApiError(
                400,
                "Missing required parameter: 'input'.",
                code="missing_required_parameter",
                param="input",
            )
        if self.registry.count(principal.tenant_id) >= cfg.max_concurrent_per_tenant:
            raise ApiError(
                429,
                "Too many responses in progress for this tenant; retry later.",
                code="rate_limit_exceeded",
            )
        history, previous = await self._history(principal, body)
        _check_outputs(history, new_items)
        ids = TurnIds()
        schema = None
        fmt = body.text.format if body.text is not None else None
        if fmt is not None and fmt.type == "json_schema":
            schema = fmt.schema_
        if body.truncation == "auto":
            model = TruncatingModel(model)
        wrapped = StampingModel(model, ids)
        try:
            agent = Agent(
                wrapped,
                instructions=body.instructions,
                tools=tools,
                limits=Limits(
                    max_turns=cfg.max_turns,
                    max_tool_calls=body.max_tool_calls,
                    tool_timeout=cfg.tool_timeout,
                ),
                policy=Policy(allowed_tools=allowed, auto_approve="high"),
                parallel_tool_calls=(
                    True if body.parallel_tool_calls is None else body.parallel_tool_calls
                ),
                tool_choice=tool_choice,
                settings=_settings(body),
                workspace=cfg.workspace,
                output_type=schema,
            )
        except ConfigError as exc:
            raise ApiError(400, str(exc), code="invalid_value") from None
        created_at = int(time.time())
        meta = ResponseMeta.build(
            response_id=new_id("resp"),
            created_at=created_at,
            model=model_name,
            body=body,
            tools=[t.schema for t in tools],
        )
        record, deferred = None, None
        inputs = [item_to_dict(i) for i in new_items]
        if body.store and (body.stream or body.background):
            # its id is visible while it runs (stream, background): stored now, finished later
            record = await self.store.create_response(
                response_id=meta.id,
                tenant_id=principal.tenant_id,
                key_id=principal.key_id,
                model=model_name,
                created_at=created_at,
                background=body.background,
                status="in_progress",
                resource=without_output(snapshot(meta.base, status="in_progress", output=[])),
                input_items=inputs,
                previous=previous,
            )
        elif body.store:
            deferred = Deferred(
                tenant_id=principal.tenant_id,
                key_id=principal.key_id,
                model=model_name,
                created_at=created_at,
                background=False,
                previous=previous,
                input_items=inputs,
            )
        execution = Execution(
            principal=principal,
            meta=meta,
            agent=agent,
            ids=ids,
            conversation=[*history, *new_items],
            record=record,
            deferred=deferred,
            store=self.store,
            streaming=body.stream,
            background=body.background,
            client_tools_status=cfg.client_tools_status,
            on_stored=self.history.put,
            encrypted=ENCRYPTED_REASONING in body.include,
        )
        execution.start()
        self.registry.add(execution)
        return execution

    async def retrieve(
        self, principal: Principal, response_id: str, *, include: Sequence[str] = ()
    ) -> dict[str, Any]:
        """The response; encrypted reasoning only with ``include=reasoning.encrypted_content``
        (as on create, the store always keeps it)."""
        running = self.registry.get(response_id, principal.tenant_id)
        if running is not None and running.stored:
            return running.live()
        try:
            record, output = await self.store.get_response(principal.tenant_id, response_id)
        except NotFound:
            raise not_found("response", response_id) from None
        encrypted = ENCRYPTED_REASONING in include
        return {**record.resource, "output": [wire_stored(d, encrypted=encrypted) for d in output]}

    async def cancel(self, principal: Principal, response_id: str) -> dict[str, Any]:
        running = self.registry.get(response_id, principal.tenant_id)
        if running is not None and not running.finished.is_set():
            running.cancel()
            return await running.wait()
        current = await self.retrieve(principal, response_id)
        status = current["status"]
        if status == "cancelled":
            return current
        if status in RUNNING:  # started by another worker, or by one that is gone
            finished = await self._cancel_elsewhere(principal, response_id)
            if finished is not None:
                return finished
            ended = {
                **current,
                "status": "cancelled",
                "completed_at": int(time.time()),
                "incomplete_details": {"reason": "cancelled"},
            }
            marked = await self.store.mark_ended(
                principal.tenant_id,
                response_id,
                status="cancelled",
                resource=without_output(ended),
            )
            if not marked:  # it ended meanwhile
                return await self.retrieve(principal, response_id)
            return ended
        raise ApiError(
            409,
            f"Response '{response_id}' has already finished ({status}); only "
            "responses in progress can be cancelled.",
            code="response_not_cancellable",
        )

    async def _cancel_elsewhere(
        self, principal: Principal, response_id: str
    ) -> dict[str, Any] | None:
        """Ask the worker running the response to cancel it, and wait (``cancel_wait``
        seconds at most) for it to store what it did. None if it did not end in time (its
        worker is gone)."""
        cfg = self.config.server
        if not await self.store.request_cancel(principal.tenant_id, response_id):
            return None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + cfg.cancel_wait
        while loop.time() < deadline:
            await asyncio.sleep(min(cfg.cancel_poll_interval, max(deadline - loop.time(), 0)))
            try:
                record = await self.store.get_record(principal.tenant_id, response_id)
            except NotFound:
                raise not_found("response", response_id) from None
            if record.status not in RUNNING:
                return await self.retrieve(principal, response_id)
        return None

    async def delete(self, principal: Principal, response_id: str) -> dict[str, Any]:
        self.history.evict(response_id)
        try:
            await self.store.delete_response(principal.tenant_id, response_id)
        except NotFound:
            raise not_found("response", response_id) from None
        except StoreConflict:
            raise ApiError(
                409,
                f"Response '{response_id}' is in progress; cancel it first.",
                code="response_in_progress",
            ) from None
        return {"id": response_id, "object": "response.deleted", "deleted": True}

    async def input_items(
        self,
        principal: Principal,
        response_id: str,
        *,
        after: str | None,
        limit: int,
        order: str,
    ) -> dict[str, Any]:
        try:
            data, more = await self.store.input_items(
                principal.tenant_id, response_id, after=after, limit=limit, order=order
            )
        except NotFound:
            raise not_found("response", response_id) from None
        items = [wire_stored(d) for d in data]
        return {
            "object": "list",
            "data": items,
            "first_id": items[0].get("id") if items else None,
            "last_id": items[-1].get("id") if items else None,
            "has_more": more,
        }
