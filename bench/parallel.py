"""Parallel tool calls: 16 read-only calls in one turn, each sleeping 100 ms.

A scripted model asks for 16 calls of a read-only async tool in a single response (distinct
arguments, so the result cache cannot answer any of them), then answers in text. Read-only
calls do not conflict, so agentloop runs them concurrently: the run should take about 100 ms,
the time of the slowest call. For contrast the same run is timed with ``max_parallel_tools=4``
(ideal: 4 waves, 400 ms) and with ``parallel_tool_calls=False`` (one by one, ideal 1,600 ms).

Reported per configuration: median and min wall time of the whole run over ``--reps`` runs, the
ideal, and the ratio median / ideal (1.00 = no overhead at all). Also checked: the peak number
of calls in flight at once.

Run: ``.venv/bin/python bench/parallel.py`` (``make bench``). Writes
``bench/results/parallel.json`` and ``bench/results/parallel.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentloop import Agent, Limits, tool
from agentloop.testing import ScriptedModel, text, tool_call

RESULTS = Path(__file__).resolve().parent / "results"
CALLS = 16
SLEEP_S = 0.1


class InFlight:
    """Counts calls running at the same moment."""

    now = 0
    peak = 0


@tool(read_only=True)
async def slow_lookup(key: int) -> str:
    """Wait 100 ms, then return the key.

    Args:
        key: Which record to look up.
    """
    InFlight.now += 1
    InFlight.peak = max(InFlight.peak, InFlight.now)
    try:
        await asyncio.sleep(SLEEP_S)
    finally:
        InFlight.now -= 1
    return f"record {key}"


@dataclass(frozen=True)
class Config:
    name: str
    label: str
    ideal_s: float
    parallel_tool_calls: bool = True
    max_parallel_tools: int | None = None


CONFIGS = (
    Config("parallel", "parallel (default)", SLEEP_S),
    Config(
        "max_parallel_tools=4", "max_parallel_tools=4", SLEEP_S * CALLS / 4, max_parallel_tools=4
    ),
    Config(
        "parallel_tool_calls=False",
        "parallel_tool_calls=False",
        SLEEP_S * CALLS,
        parallel_tool_calls=False,
    ),
)


@dataclass
class Series:
    seconds: list[float] = field(default_factory=list)
    peaks: list[int] = field(default_factory=list)


def make_agent(config: Config) -> Agent:
    script: list[Any] = [[tool_call("slow_lookup", key=k) for k in range(CALLS)], text("done")]
    return Agent(
        ScriptedModel(script),
        tools=[slow_lookup],
        parallel_tool_calls=config.parallel_tool_calls,
        limits=Limits(max_parallel_tools=config.max_parallel_tools),
        cache=False,  # each run starts cold; the keys differ anyway
    )


async def timed(config: Config) -> tuple[float, int]:
    agent = make_agent(config)
    InFlight.now = InFlight.peak = 0
    started = time.perf_counter()
    result = await agent.run("Look up the 16 records.")
    elapsed = time.perf_counter() - started
    if result.status != "completed" or result.tool_calls != CALLS:
        raise RuntimeError(f"{config.name}: unexpected result {result.status} {result.reason}")
    if any(record.outcome != "success" for record in result.audit):
        raise RuntimeError(f"{config.name}: a call failed: {result.audit}")
    return elapsed, InFlight.peak


async def measure(reps: int) -> dict[str, Series]:
    out = {c.name: Series() for c in CONFIGS}
    for config in CONFIGS:  # warm-up
        await timed(config)
    for _ in range(reps):
        for config in CONFIGS:
            seconds, peak = await timed(config)
            out[config.name].seconds.append(seconds)
            out[config.name].peaks.append(peak)
    return out


def to_json(results: dict[str, Series], reps: int) -> dict[str, Any]:
    configs: dict[str, Any] = {}
    for c in CONFIGS:
        s = results[c.name]
        median = statistics.median(s.seconds)
        configs[c.name] = {
            "ideal_ms": round(c.ideal_s * 1000, 1),
            "median_ms": round(median * 1000, 1),
            "min_ms": round(min(s.seconds) * 1000, 1),
            "ratio_to_ideal": round(median / c.ideal_s, 3),
            "peak_in_flight": max(s.peaks),
            "samples_ms": [round(x * 1000, 1) for x in s.seconds],
        }
    return {
        "benchmark": "parallel",
        "scenario": f"{CALLS} read-only async calls in one turn, each sleeping "
        f"{SLEEP_S * 1000:g} ms; wall time of the whole run",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
        },
        "versions": {"agentloop": importlib.metadata.version("agentloop")},
        "settings": {"calls": CALLS, "sleep_ms": SLEEP_S * 1000, "repetitions": reps},
        "results": configs,
    }


def plot(data: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [c.label for c in CONFIGS]
    rows = [data["results"][c.name] for c in CONFIGS]
    fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=120)
    y = range(len(rows))
    ax.barh(y, [r["median_ms"] for r in rows], color=["#6baed6", "#9ecae1", "#d9d9d9"])
    for i, r in enumerate(rows):
        ax.plot([r["ideal_ms"]] * 2, [i - 0.4, i + 0.4], color="black", linestyle="--", lw=1)
        label = (
            f"{r['median_ms']:,.0f} ms = {r['ratio_to_ideal']:.2f}x ideal "
            f"({r['ideal_ms']:,.0f} ms); peak {r['peak_in_flight']} in flight"
        )
        ax.text(56, i + 0.3, label, va="center", fontsize=8)
    ax.set_yticks(list(y), labels)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(50, 3000)
    ax.set_xlabel("wall time of the run, ms (log scale); dashed: ideal")
    ax.set_title(f"{CALLS} read-only tool calls of {SLEEP_S * 1000:g} ms in one turn", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=5, help="timed runs per configuration")
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for JSON and PNG")
    args = parser.parse_args(argv)

    results = asyncio.run(measure(args.reps))
    data = to_json(results, args.reps)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "parallel.json").write_text(json.dumps(data, indent=2) + "\n")
    plot(data, args.out / "parallel.png")

    print(
        f"{CALLS} read-only calls x {SLEEP_S * 1000:g} ms in one turn (median of {args.reps} runs)"
    )
    print(f"{'configuration':<28}{'ideal':>10}{'median':>10}{'min':>10}{'ratio':>8}{'peak':>6}")
    for c in CONFIGS:
        r = data["results"][c.name]
        print(
            f"{c.label:<28}{r['ideal_ms']:>8.0f}ms{r['median_ms']:>8.1f}ms{r['min_ms']:>8.1f}ms"
            f"{r['ratio_to_ideal']:>7.2f}x{r['peak_in_flight']:>6}"
        )
    print(f"\nwrote {args.out / 'parallel.json'} and {args.out / 'parallel.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
