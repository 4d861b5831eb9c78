"""Per-turn overhead of the agent loop: agentloop next to openai-agents, pydantic-ai and LangGraph.

The scenario is the same everywhere: a scripted model asks for one trivial tool call per turn for
N turns (N = 25, 100, 400), then answers in text. The tool is the same async function returning a
constant; there is no network and no tracing, and every framework's turn/recursion limit is
raised so that 400 turns are allowed. Each framework uses its own native fake model:

- agentloop: ``agentloop.testing.ScriptedModel`` through ``Agent.run`` (which streams internally),
  with the default policy, the result cache and events on;
- openai-agents: a ``Model`` subclass returning scripted ``ModelResponse`` objects, tracing off;
- pydantic-ai: ``pydantic_ai.models.function.FunctionModel``, request limit lifted;
- LangGraph: a minimal ``StateGraph`` (model node, ``ToolNode``, ``tools_condition``) with a
  ``BaseChatModel`` subclass bound to the tool.

Measured: wall time of one whole run divided by N, in microseconds per turn. Model and agent
objects are built before the clock starts; the run itself (history growth included) is timed.
Every framework gets warm-up runs, then ``--reps`` timed runs per N, interleaved across
frameworks so that noise from the machine spreads evenly; median and min are reported.

Run: ``.venv/bin/python bench/loop_overhead.py`` (``make bench``). Writes
``bench/results/loop_overhead.json`` and ``bench/results/loop_overhead.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
NS = (25, 100, 400)
GOAL_US = 50.0
FLAT_RATIO = 1.2
LANGGRAPH_REFERENCE_US = 1400.0
"""LangGraph's per-turn cost on the machine where the 50 µs goal was set (issue 2: ~1.4 ms, flat).
Used only to put this machine's numbers on that scale; see ``reference_estimate``."""
TOOL_OUTPUT = "pong"
FINAL_TEXT = "done"

Runner = Callable[[], Awaitable[None]]
"""One prepared run: awaiting it performs the whole N-turn run (and checks its outcome)."""
Prepare = Callable[[int], Runner]
"""Build everything a run needs for N turns (outside the clock); returns the run to time."""


class Counter:
    """Counts tool executions so every framework is checked to have really run N calls."""

    calls = 0


async def ping(i: int) -> str:
    """Return a constant.

    Args:
        i: The turn number (distinct per call, so no result cache can skip a call).
    """
    Counter.calls += 1
    return TOOL_OUTPUT


def _expect(framework: str, n: int, before: int, ok: bool) -> None:
    done = Counter.calls - before
    if not ok or done != n:
        raise RuntimeError(f"{framework}: the run did not do {n} tool calls then answer ({done})")


# --- agentloop --------------------------------------------------------------------------------


def prepare_agentloop(n: int, *, record: bool = False) -> Runner:
    from agentloop import Agent, Limits, tool
    from agentloop.testing import ScriptedModel, text, tool_call

    # read_only: risk "low", so the default policy auto-approves it and it is cacheable (the
    # argument differs per call, so every call is a cache miss and the tool really runs).
    ping_tool = tool(read_only=True)(ping)
    script: list[Any] = [tool_call("ping", i=k) for k in range(n)]
    script.append(text(FINAL_TEXT))
    # record=False: like the other frameworks' fakes, the model keeps no copy of each request
    # (ScriptedModel.requests copies the whole history per turn, an O(N) cost of the test double;
    # the "agentloop[record]" row shows it).
    model = ScriptedModel(script, record=record)
    agent = Agent(model, tools=[ping_tool], limits=Limits(max_turns=n + 1))

    async def run() -> None:
        before = Counter.calls
        result = await agent.run("Call ping once per turn.")
        _expect(
            "agentloop", n, before, result.status == "completed" and result.output == FINAL_TEXT
        )

    return run


def prepare_agentloop_recording(n: int) -> Runner:
    return prepare_agentloop(n, record=True)


# --- openai-agents ----------------------------------------------------------------------------


def prepare_openai_agents(n: int) -> Runner:
    from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
    from agents.tracing import set_tracing_disabled
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)

    class ScriptedAgentsModel(Model):
        """Plays N function calls, then a text message."""

        def __init__(self) -> None:
            self.turn = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            k = self.turn
            self.turn += 1
            output: Any
            if k < n:
                output = ResponseFunctionToolCall(
                    type="function_call",
                    id=f"fc_{k}",
                    call_id=f"call_{k}",
                    name="ping",
                    arguments=json.dumps({"i": k}),
                    status="completed",
                )
            else:
                output = ResponseOutputMessage(
                    type="message",
                    id="msg_final",
                    role="assistant",
                    status="completed",
                    content=[
                        ResponseOutputText(type="output_text", text=FINAL_TEXT, annotations=[])
                    ],
                )
            return ModelResponse(output=[output], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark uses Runner.run")

    agent = Agent(name="bench", tools=[function_tool(ping)], model=ScriptedAgentsModel())
    config = RunConfig(tracing_disabled=True)

    async def run() -> None:
        before = Counter.calls
        result = await Runner.run(
            agent, "Call ping once per turn.", max_turns=n + 1, run_config=config
        )
        _expect("openai-agents", n, before, result.final_output == FINAL_TEXT)

    return run


# --- pydantic-ai ------------------------------------------------------------------------------


def prepare_pydantic_ai(n: int) -> Runner:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    turn = [0]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        k = turn[0]
        turn[0] += 1
        if k < n:
            return ModelResponse(
                parts=[ToolCallPart(tool_name="ping", args={"i": k}, tool_call_id=f"call_{k}")]
            )
        return ModelResponse(parts=[TextPart(content=FINAL_TEXT)])

    agent = Agent(FunctionModel(respond), tools=[ping])
    limits = UsageLimits(request_limit=None)

    async def run() -> None:
        before = Counter.calls
        result = await agent.run("Call ping once per turn.", usage_limits=limits)
        _expect("pydantic-ai", n, before, result.output == FINAL_TEXT)

    return run


# --- LangGraph --------------------------------------------------------------------------------


def prepare_langgraph(n: int) -> Runner:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import StructuredTool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    class ScriptedChatModel(BaseChatModel):
        """Plays N tool calls, then a text answer."""

        turn: int = 0

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def _next(self) -> ChatResult:
            k = self.turn
            self.turn += 1
            if k < n:
                message = AIMessage(
                    content="",
                    tool_calls=[
                        {"name": "ping", "args": {"i": k}, "id": f"call_{k}", "type": "tool_call"}
                    ],
                )
            else:
                message = AIMessage(content=FINAL_TEXT)
            return ChatResult(generations=[ChatGeneration(message=message)])

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            return self._next()

        async def _agenerate(
            self, messages: list[BaseMessage], *args: Any, **kwargs: Any
        ) -> ChatResult:
            return self._next()

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self.bind(tools=[getattr(t, "name", str(t)) for t in tools], **kwargs)

    ping_tool = StructuredTool.from_function(coroutine=ping, name="ping")
    model = ScriptedChatModel().bind_tools([ping_tool])

    async def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([ping_tool]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "model")
    app = graph.compile()
    config = {"recursion_limit": 2 * n + 10}

    async def run() -> None:
        before = Counter.calls
        out = await app.ainvoke(
            {"messages": [("user", "Call ping once per turn.")]},
            config,  # type: ignore[arg-type]
        )
        _expect("langgraph", n, before, out["messages"][-1].content == FINAL_TEXT)

    return run


FRAMEWORKS: dict[str, Prepare] = {
    "agentloop": prepare_agentloop,
    "agentloop[record]": prepare_agentloop_recording,
    "openai-agents": prepare_openai_agents,
    "pydantic-ai": prepare_pydantic_ai,
    "langgraph": prepare_langgraph,
}


DISTRIBUTIONS = (
    "agentloop",
    "openai-agents",
    "openai",
    "pydantic-ai-slim",
    "pydantic",
    "langgraph",
    "langchain-core",
)
"""Versions recorded in the JSON."""


# --- measurement ------------------------------------------------------------------------------


@dataclass
class Series:
    """Timed runs of one framework at one N, in microseconds per turn."""

    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)


async def timed(prepare: Prepare, n: int) -> float:
    """One run of N turns; microseconds per turn. Preparation is outside the clock."""
    run = prepare(n)
    gc.collect()
    started = time.perf_counter()
    await run()
    return (time.perf_counter() - started) / n * 1e6


def available(names: list[str]) -> dict[str, Prepare]:
    """The frameworks that import and complete a short run; the others are skipped with a note."""
    out: dict[str, Prepare] = {}
    for name in names:
        prepare = FRAMEWORKS[name]
        try:
            asyncio.run(prepare(3)())
        except ImportError as exc:
            print(
                f"note: skipping {name}: not installed ({exc.name or exc}); "
                "install the bench extra with `make bench`"
            )
            continue
        out[name] = prepare
    return out


async def measure(
    frameworks: dict[str, Prepare], ns: tuple[int, ...], reps: int, warmup: int
) -> dict[str, dict[int, Series]]:
    results = {name: {n: Series() for n in ns} for name in frameworks}
    for _ in range(warmup):
        for prepare in frameworks.values():
            for n in ns:
                await timed(prepare, n)
    for rep in range(reps):
        for name, prepare in frameworks.items():
            for n in ns:
                results[name][n].samples.append(await timed(prepare, n))
        print(f"  repetition {rep + 1}/{reps} done", file=sys.stderr)
    return results


# --- reporting --------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@dataclass(frozen=True, slots=True)
class _Probe:
    a: int
    b: str
    c: float


def _probe(i: int) -> _Probe:
    return _Probe(i, "x", 1.0)


def python_speed_ns() -> float:
    """Nanoseconds per iteration of a fixed pure-Python workload (a call that builds a small
    frozen dataclass, as the loop does many times per turn); min of 5. Compares machines."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for i in range(100_000):
            _probe(i)
        best = min(best, time.perf_counter() - started)
    return best / 100_000 * 1e9


def machine_info() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "python_speed_ns": round(python_speed_ns(), 1),
    }


def goal_check(series: dict[int, Series]) -> dict[str, Any]:
    """agentloop's goal: at most 50 µs/turn, and 400-turn cost within 1.2x of 25-turn cost."""
    worst = max(s.median for s in series.values())
    lo, hi = min(series), max(series)
    ratio = series[hi].median / series[lo].median
    return {
        "goal_us_per_turn": GOAL_US,
        "worst_median_us_per_turn": round(worst, 1),
        "under_goal": worst <= GOAL_US,
        "flatness_ratio": round(ratio, 3),
        "flatness_between": [lo, hi],
        "flat": ratio <= FLAT_RATIO,
    }


def to_json(
    results: dict[str, dict[int, Series]], ns: tuple[int, ...], reps: int, warmup: int
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "benchmark": "loop_overhead",
        "unit": "microseconds per turn (whole run wall time / N)",
        "scenario": "scripted model: one trivial async tool call per turn for N turns, then text",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(),
        "settings": {"ns": list(ns), "repetitions": reps, "warmup_rounds": warmup},
        "versions": {dist: _version(dist) for dist in DISTRIBUTIONS},
        "results": {
            name: {
                str(n): {
                    "median_us": round(s.median, 1),
                    "min_us": round(s.min, 1),
                    "samples_us": [round(x, 1) for x in s.samples],
                }
                for n, s in per_n.items()
            }
            for name, per_n in results.items()
        },
        "skipped": [name for name in FRAMEWORKS if name not in results],
    }
    if "agentloop" in results:
        data["agentloop_goal"] = goal_check(results["agentloop"])
        if "langgraph" in results:
            data["reference_estimate"] = reference_estimate(results)
    return data


def reference_estimate(results: dict[str, dict[int, Series]]) -> dict[str, Any]:
    """agentloop's numbers scaled to the machine the goal was set on, using LangGraph (flat, and
    measured there at ~1.4 ms/turn) as the yardstick. An estimate: it assumes LangGraph's own
    per-turn cost did not change between versions."""
    lg = statistics.mean(s.median for s in results["langgraph"].values())
    factor = lg / LANGGRAPH_REFERENCE_US
    return {
        "note": "estimate: this machine's numbers divided by (LangGraph here / LangGraph there)",
        "langgraph_reference_us": LANGGRAPH_REFERENCE_US,
        "machine_factor": round(factor, 2),
        "agentloop_us_per_turn": {
            str(n): round(s.median / factor, 1) for n, s in results["agentloop"].items()
        },
    }


def table(results: dict[str, dict[int, Series]], ns: tuple[int, ...]) -> str:
    head = f"{'framework':<18}" + "".join(f"{f'N={n} median (min)':>24}" for n in ns)
    head += f"{'400/25':>9}" if {25, 400} <= set(ns) else ""
    lines = [head, "-" * len(head)]
    for name, per_n in results.items():
        row = f"{name:<18}"
        for n in ns:
            s = per_n[n]
            row += f"{f'{s.median:,.1f} ({s.min:,.1f})':>24}"
        if {25, 400} <= set(ns):
            row += f"{per_n[400].median / per_n[25].median:>8.2f}x"
        lines.append(row)
    return "\n".join(lines)


STYLES = {
    "agentloop": ("tab:blue", "-"),
    "agentloop[record]": ("tab:blue", "--"),
    "openai-agents": ("tab:orange", "-"),
    "pydantic-ai": ("tab:green", "-"),
    "langgraph": ("tab:red", "-"),
}


def plot(results: dict[str, dict[int, Series]], ns: tuple[int, ...], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    for name, per_n in results.items():
        color, style = STYLES.get(name, (None, "-"))
        medians = [per_n[n].median for n in ns]
        mins = [per_n[n].min for n in ns]
        (line,) = ax.plot(
            ns, medians, marker="o", linewidth=2, color=color, linestyle=style, label=name
        )
        ax.plot(ns, mins, linestyle=":", color=line.get_color(), linewidth=1)
        if name in STYLES and style != "-":
            continue  # a variant: its end label would sit on top of the main line's
        ax.annotate(
            f"{medians[-1]:,.0f}",
            (ns[-1], medians[-1]),
            textcoords="offset points",
            xytext=(6, 0),
            va="center",
            fontsize=8,
            color=line.get_color(),
        )
    ax.axhline(GOAL_US, color="grey", linestyle="--", linewidth=1)
    ax.text(ns[0], GOAL_US * 1.08, f"agentloop goal: {GOAL_US:g} µs/turn", fontsize=8, color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(ns[0] / 1.25, ns[-1] * 1.6)
    ax.set_xticks(list(ns), [str(n) for n in ns])
    ax.minorticks_off()
    ax.set_xlabel("turns per run (N)")
    ax.set_ylabel("µs per turn (log scale)")
    ax.set_title(
        "Loop overhead: one scripted tool call per turn (lower and flatter is better)", fontsize=10
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.text(0.01, 0.01, "lines: median; dotted: min", fontsize=7, color="grey")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=7, help="timed runs per framework and N")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    parser.add_argument("--ns", type=int, nargs="+", default=list(NS), help="turn counts")
    parser.add_argument("--only", nargs="+", choices=list(FRAMEWORKS), default=list(FRAMEWORKS))
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for JSON and PNG")
    parser.add_argument(
        "--replot", action="store_true", help="redraw the PNG and table from the saved JSON"
    )
    args = parser.parse_args(argv)
    ns = tuple(sorted(set(args.ns)))
    if args.replot:
        saved = json.loads((args.out / "loop_overhead.json").read_text())
        ns = tuple(saved["settings"]["ns"])
        results = {
            name: {int(n): Series(list(v["samples_us"])) for n, v in per_n.items()}
            for name, per_n in saved["results"].items()
        }
        plot(results, ns, args.out / "loop_overhead.png")
        print(table(results, ns))
        return 0

    # Deprecation chatter from the anchors is not what this benchmark is about.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
    warnings.filterwarnings("ignore", message=".*deprecated.*")

    frameworks = available(args.only)
    if not frameworks:
        print("nothing to measure")
        return 1
    print(
        f"loop overhead: N={list(ns)}, {args.reps} repetitions after {args.warmup} warm-up "
        f"round(s); frameworks: {', '.join(frameworks)}",
        file=sys.stderr,
    )
    results = asyncio.run(measure(frameworks, ns, args.reps, args.warmup))

    data = to_json(results, ns, args.reps, args.warmup)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "loop_overhead.json").write_text(json.dumps(data, indent=2) + "\n")
    plot(results, ns, args.out / "loop_overhead.png")

    print()
    print("Microseconds per turn (total run wall time / N), median (min) of", args.reps, "runs")
    print(table(results, ns))
    if "reference_estimate" in data:
        est = data["reference_estimate"]
        per_n = ", ".join(f"N={n}: {v} µs" for n, v in est["agentloop_us_per_turn"].items())
        print(
            f"\nthis machine is ~{est['machine_factor']}x slower than the reference one "
            f"(LangGraph {LANGGRAPH_REFERENCE_US / 1000:g} ms/turn there); agentloop scaled "
            f"to it (estimate): {per_n}"
        )
    if "agentloop_goal" in data:
        g = data["agentloop_goal"]
        print(
            f"\nagentloop goal: <= {GOAL_US:g} µs/turn -> worst median "
            f"{g['worst_median_us_per_turn']} µs ({'met' if g['under_goal'] else 'NOT met'}); "
            f"flat within {FLAT_RATIO}x -> {g['flatness_ratio']}x "
            f"({'met' if g['flat'] else 'NOT met'})"
        )
    for name in data["skipped"]:
        print(f"(skipped {name}: not installed)")
    print(f"\nwrote {args.out / 'loop_overhead.json'} and {args.out / 'loop_overhead.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
