"""``agentloop demo``: offline, scripted runs that show the loop's main moves.

Part 1 (library): parallel read-only calls, a cache hit, a write that pauses for approval, the
resume after the approval (through a JSON round trip of the run state), and the final answer.
Part 2 (gateway): the gateway in-process on SQLite, driven by the official openai SDK.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from rich.console import Console

from agentloop import Agent, RunResult, RunState, ToolContext, tool
from agentloop.run.events import Event, TextDelta, ToolCallFinished, ToolCallStarted, TurnStarted
from agentloop.run.stream import RunStream
from agentloop.testing import ScriptedModel, Turn, text, tool_call

console = Console(highlight=False)


@tool(read_only=True, paths=("path",))
async def read_file(ctx: ToolContext, path: str) -> str:
    """Read a text file from the workspace.

    Args:
        path: File path, relative to the workspace.
    """
    await asyncio.sleep(0.2)  # pretend the disk is slow: parallel calls share the wait
    return ctx.resolve(path).read_text()


@tool(paths=("path",), risk="medium")
def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Write a text file in the workspace.

    Args:
        path: File path, relative to the workspace.
        content: The new content.
    """
    target = ctx.resolve(path)
    old = target.read_text().splitlines() if target.exists() else []
    target.write_text(content)
    ctx.record_change(path, abs(len(content.splitlines()) - len(old)) or 1)
    return f"wrote {len(content)} characters to {path}"


SCRIPT: list[Turn] = [
    [
        tool_call("read_file", path="todo.txt"),
        tool_call("read_file", path="notes.txt"),
        tool_call("read_file", path="README"),
    ],
    tool_call("read_file", path="todo.txt"),
    tool_call("write_file", path="todo.txt", content="- ship the demo (done)\n"),
    text("I read the three files in parallel, re-read todo.txt from the cache, and marked "
         "the demo as shipped once you approved the write."),
]  # fmt: skip


def _show(event: Event) -> None:
    if isinstance(event, TurnStarted):
        console.print(f"[bold cyan]── turn {event.turn}[/]")
    elif isinstance(event, ToolCallStarted):
        console.print(f"  [yellow]→ {event.name}[/] {event.arguments}")
    elif isinstance(event, ToolCallFinished):
        tag = " [magenta](cached)[/]" if event.cached else ""
        out = event.output.replace("\n", " ⏎ ")[:60]
        ms = event.duration * 1000
        console.print(f"  [green]← {event.name}[/] {out!r} [dim]{ms:.0f} ms[/]{tag}")
    elif isinstance(event, TextDelta):
        console.print(f"  [bold]assistant:[/] {event.delta}")


async def _drive(stream: RunStream) -> RunResult:
    async for event in stream:
        _show(event)
    return stream.result


async def run_demo(workspace: Path) -> RunResult:
    (workspace / "todo.txt").write_text("- ship the demo\n")
    (workspace / "notes.txt").write_text("parallel reads, cached re-reads, approvals\n")
    (workspace / "README").write_text("agentloop demo workspace\n")
    agent = Agent(ScriptedModel(SCRIPT), tools=[read_file, write_file], workspace=workspace)

    console.print("[bold]agentloop demo[/] — a scripted model, real tools, no network\n")
    paused = await _drive(agent.stream("Tidy up my todo list."))
    console.print(f"\n[bold red]⏸  {paused.status}[/] ({paused.reason})")
    for call in paused.pending:
        console.print(f"   {call.name} (risk {call.risk}) needs your approval: {call.arguments}")
    saved = paused.state.to_json()
    console.print(f"   run state saved as JSON ({len(saved)} bytes); approving and resuming…\n")

    result = await _drive(
        agent.stream_resume(RunState.from_json(saved), approvals={paused.pending[0].call_id: True})
    )
    console.print(f"\n[bold green]✔ {result.status}[/] ({result.reason})")
    console.print(
        f"   turns={result.turns} tool_calls={result.tool_calls} "
        f"tokens={result.usage.total_tokens} files_changed={len(result.state.files_modified)}"
    )
    console.print("   audit:")
    for record in result.audit:
        cached = " cached" if record.cached else ""
        console.print(f"     {record.tool:<11} {record.decision:<9} {record.outcome}{cached}")
    console.print(f"   todo.txt now reads: {(workspace / 'todo.txt').read_text().strip()!r}")
    return result


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="agentloop-demo-") as tmp:
        asyncio.run(run_demo(Path(tmp)))
    console.print("\n[bold]Part 2: the same loop behind the Open Responses gateway[/]\n")
    from agentloop.gateway.demo import run_gateway_demo

    run_gateway_demo()
