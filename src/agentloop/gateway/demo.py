"""The gateway part of ``make demo``: start the gateway in-process (SQLite, a free loopback
port, uvicorn), then drive an agentic run through it with the official ``openai`` SDK and the
offline ``scripted`` backend, printing the stream as it arrives.

Call :func:`run_gateway_demo` (it runs its own event loop).
"""

from __future__ import annotations

import asyncio
import json
import socket
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from agentloop.gateway.app import create_app
from agentloop.gateway.config import GatewayConfig

console = Console(highlight=False)

SERVER_TOOLS = {"type": "agentloop:toolset", "name": "demo"}
BOOKING_TOOL = {
    "type": "function",
    "name": "book_table",
    "description": "Book a table; executed by the client application.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "people": {"type": "integer"}},
        "required": ["city", "people"],
    },
}
SCRIPT = {
    "script": [
        [
            {"think": "I need the weather in both cities, and the sum of the guests."},
            {"call": "get_weather", "arguments": {"city": "Paris"}},
            {"call": "get_weather", "arguments": {"city": "Tokyo"}},
            {"call": "add", "arguments": {"a": 2, "b": 3}},
        ],
        [
            {"say": "Tokyo is dry, so I will book there."},
            {"call": "book_table", "arguments": {"city": "Tokyo", "people": 5}},
        ],
        {"say": "Booked a table for 5 in Tokyo, where it is clear and 24°C."},
    ]
}


def _show(event: Any, state: dict[str, bool]) -> None:
    kind = event.type
    if kind in ("response.created", "response.in_progress"):
        console.print(f"[dim]<- {kind} ({event.response.id})[/]")
    elif kind == "response.output_text.delta" or kind == "response.reasoning_summary_text.delta":
        if not state.get("inline"):
            label = "thinking" if "reasoning" in kind else "assistant"
            console.print(f"[cyan]{label}:[/] ", end="")
            state["inline"] = True
        console.print(event.delta, end="", style="italic" if "reasoning" in kind else "")
    elif kind == "response.output_item.done":
        if state.pop("inline", False):
            console.print()
        item = event.item
        if item.type == "function_call":
            console.print(f"[yellow]call[/]  {item.name}({item.arguments})  [dim]{item.call_id}[/]")
        elif item.type == "function_call_output":
            console.print(f"[green]output[/] {item.output}  [dim]{item.call_id}[/]")
    elif kind in ("response.completed", "response.incomplete", "response.failed"):
        usage = event.response.usage
        tokens = f", {usage.total_tokens} tokens" if usage else ""
        console.print(f"[dim]<- {kind}: status {event.response.status}{tokens}[/]")


async def _drive(base_url: str) -> None:
    import openai

    client = openai.AsyncOpenAI(api_key="local", base_url=base_url, max_retries=0)
    console.rule("[bold]1. One streamed request, several server-side turns")
    stream: Any = await client.responses.create(
        model="scripted",
        input=json.dumps(SCRIPT),
        tools=[SERVER_TOOLS, BOOKING_TOOL],  # type: ignore[list-item]
        stream=True,
    )
    state: dict[str, bool] = {}
    final: Any = None
    async for event in stream:
        _show(event, state)
        if event.type == "response.completed":
            final = event.response
    assert final is not None
    pending = [o for o in final.output if o.type == "function_call" and o.name == "book_table"]
    console.rule("[bold]2. The client runs its own tool and continues the conversation")
    call = pending[0]
    args = json.loads(call.arguments)
    result = f"confirmed: table for {args['people']} in {args['city']} at 20:00"
    console.print(f"[magenta]client[/] executes book_table -> {result}")
    stream = await client.responses.create(
        model="scripted",
        previous_response_id=final.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": result}],
        tools=[SERVER_TOOLS, BOOKING_TOOL],  # type: ignore[list-item]
        stream=True,
    )
    async for event in stream:
        _show(event, state)
        if event.type == "response.completed":
            final = event.response
    console.rule("[bold]3. Stored: retrieve the response and its input items")
    stored = await client.responses.retrieve(final.id)
    items = await client.responses.input_items.list(final.id)
    console.print(
        f"{stored.id}: status {stored.status}, previous {stored.previous_response_id}, "
        f"{len(items.data)} input item(s); answer: {stored.output_text!r}"
    )
    await client.close()


async def _main() -> None:
    import uvicorn

    with tempfile.TemporaryDirectory() as tmp:
        store = f"sqlite:///{Path(tmp) / 'gateway.db'}"
        config = GatewayConfig.model_validate(
            {"server": {"store": store}, "toolsets": {"demo": "agentloop.gateway.demo_tools:TOOLS"}}
        )
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        uv_config = uvicorn.Config(create_app(config), log_level="warning", lifespan="on")
        server = uvicorn.Server(uv_config)
        uv_config.load()
        server.lifespan = uv_config.lifespan_class(uv_config)
        await server.startup(sockets=[sock])
        loop = asyncio.create_task(server.main_loop())
        console.print(f"[bold]agentloop gateway[/] on http://127.0.0.1:{port}/v1 ({store})")
        try:
            await _drive(f"http://127.0.0.1:{port}/v1")
        finally:
            server.should_exit = True
            await loop
            await server.shutdown(sockets=[sock])


def run_gateway_demo() -> None:
    """Run the gateway demo (blocking)."""
    asyncio.run(_main())


if __name__ == "__main__":
    run_gateway_demo()
