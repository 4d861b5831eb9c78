"""What the gateway adds on top of the loop, against a zero-latency upstream.

The upstream is the gateway's ``scripted`` backend (offline, no sleeps): every request is one
model turn that echoes the input, so whatever time a request takes is the gateway's (HTTP,
validation, the loop, the store, SSE) plus the client's. The gateway runs in its own process
(``agentloop serve`` on a loopback port, SQLite store by default, or ``--store postgresql://...``);
the client is raw ``httpx`` (no SDK parsing) in this process.

Measured:

- library baseline: ``Agent(ScriptedBackend()).run(...)`` in-process, the same turn without HTTP;
- per-request latency (p50, p99), sequential, non-streaming, ``store: false`` and ``store: true``;
  the overhead the gateway adds is the gateway's latency minus the library baseline;
- streaming: time to the first SSE event (``response.created``) and to the end of the stream;
- throughput: requests per second with 32 concurrent clients (``store: true``), and the latency
  they see.

Run: ``.venv/bin/python bench/gateway.py [--requests 300] [--store URL]``. Writes
``bench/results/gateway.json`` and ``bench/results/gateway.png`` (``gateway_postgresql.*`` with
a PostgreSQL store).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

RESULTS = Path(__file__).resolve().parent / "results"
CONCURRENCY = 32


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 3),
        "p99_ms": round(percentile(ms, 99), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_gateway(store: str, port: int) -> subprocess.Popen[bytes]:
    exe = shutil.which("agentloop", path=str(Path(sys.executable).parent)) or "agentloop"
    return subprocess.Popen(
        [exe, "serve", "--port", str(port), "--store", store, "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def wait_ready(client: httpx.AsyncClient, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the gateway exited during start-up")
        try:
            if (await client.get("/healthz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("the gateway did not start in time")


def body(i: int, *, store: bool, stream: bool = False) -> dict[str, Any]:
    return {"model": "scripted", "input": f"hello {i}", "store": store, "stream": stream}


async def timed_create(client: httpx.AsyncClient, payload: dict[str, Any]) -> float:
    started = time.perf_counter()
    response = await client.post("/v1/responses", json=payload)
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200 and response.json()["status"] == "completed", response.text
    return elapsed


async def sequential(client: httpx.AsyncClient, n: int, *, store: bool) -> list[float]:
    for i in range(20):  # warm-up
        await timed_create(client, body(i, store=store))
    return [await timed_create(client, body(i, store=store)) for i in range(n)]


async def streaming(client: httpx.AsyncClient, n: int) -> tuple[list[float], list[float]]:
    first, total = [], []
    for i in range(n + 20):
        started = time.perf_counter()
        first_at = None
        async with client.stream(
            "POST", "/v1/responses", json=body(i, store=True, stream=True)
        ) as r:
            async for line in r.aiter_lines():
                if first_at is None and line.startswith("event: "):
                    first_at = time.perf_counter()
                if line == "data: [DONE]":
                    break
        ended = time.perf_counter()
        if i >= 20 and first_at is not None:
            first.append((first_at - started) * 1000)
            total.append((ended - started) * 1000)
    return first, total


async def concurrent(client: httpx.AsyncClient, total: int) -> tuple[float, list[float]]:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(total):
        queue.put_nowait(i)
    latencies: list[float] = []

    async def worker() -> None:
        while True:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            latencies.append(await timed_create(client, body(i, store=True)))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    elapsed = time.perf_counter() - started
    return total / elapsed, latencies


async def library_baseline(n: int) -> list[float]:
    from agentloop import Agent
    from agentloop.gateway.scripted import ScriptedBackend

    agent = Agent(ScriptedBackend())
    out = []
    for i in range(n + 20):
        started = time.perf_counter()
        result = await agent.run(f"hello {i}")
        elapsed = (time.perf_counter() - started) * 1000
        assert result.status == "completed"
        if i >= 20:
            out.append(elapsed)
    return out


async def measure(store: str, n: int) -> dict[str, Any]:
    port = free_port()
    proc = start_gateway(store, port)
    limits = httpx.Limits(max_connections=CONCURRENCY * 2, max_keepalive_connections=CONCURRENCY)
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=120
        ) as client:
            await wait_ready(client, proc)
            library = await library_baseline(n)
            floor = []
            for _ in range(n):
                started = time.perf_counter()
                assert (await client.get("/v1/models")).status_code == 200
                floor.append((time.perf_counter() - started) * 1000)
            no_store = await sequential(client, n, store=False)
            stored = await sequential(client, n, store=True)
            first, whole = await streaming(client, n)
            rps, loaded = await concurrent(client, n * 4)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    lib = summary(library)
    results: dict[str, Any] = {
        "library_turn": lib,
        "http_floor_get_models": summary(floor),
        "create_store_false": summary(no_store),
        "create_store_true": summary(stored),
        "stream_first_event": summary(first),
        "stream_complete": summary(whole),
        "concurrent_32": {"requests_per_s": round(rps, 1), **summary(loaded)},
    }
    results["overhead_ms"] = {
        name: {
            "p50": round(results[name]["p50_ms"] - lib["p50_ms"], 3),
            "p99": round(results[name]["p99_ms"] - lib["p99_ms"], 3),
        }
        for name in ("create_store_false", "create_store_true")
    }
    return results


def plot(results: dict[str, Any], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [
        ("library_turn", "library\n(no HTTP)"),
        ("http_floor_get_models", "GET\n/v1/models"),
        ("create_store_false", "create\nstore=false"),
        ("create_store_true", "create\nstore=true"),
        ("stream_first_event", "stream:\nfirst event"),
        ("stream_complete", "stream:\ncomplete"),
    ]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [3, 1]})
    xs = range(len(names))
    p50 = [results[k]["p50_ms"] for k, _ in names]
    p99 = [results[k]["p99_ms"] for k, _ in names]
    left.bar([x - 0.2 for x in xs], p50, width=0.4, label="p50")
    left.bar([x + 0.2 for x in xs], p99, width=0.4, label="p99")
    left.set_xticks(list(xs), [label for _, label in names])
    left.set_ylabel("milliseconds per request (sequential)")
    left.set_title("latency, one client")
    left.legend()
    conc = results["concurrent_32"]
    right.bar(["p50", "p99"], [conc["p50_ms"], conc["p99_ms"]], color=["C0", "C1"])
    right.set_ylabel("milliseconds per request")
    right.set_title(f"{CONCURRENCY} concurrent clients:\n{conc['requests_per_s']} requests/s")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--store", default=None, help="store URL (default: a temporary SQLite)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or f"sqlite:///{Path(tmp) / 'bench.db'}"
        results = asyncio.run(measure(store, args.requests))
    kind = store.split(":", 1)[0]
    out = {
        "benchmark": "gateway",
        "store": kind,
        "requests_per_scenario": args.requests,
        "concurrency": CONCURRENCY,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "results": results,
    }
    RESULTS.mkdir(exist_ok=True)
    stem = "gateway" if kind == "sqlite" else f"gateway_{kind}"
    (RESULTS / f"{stem}.json").write_text(json.dumps(out, indent=2) + "\n")
    plot(results, RESULTS / f"{stem}.png", f"agentloop gateway, zero-latency upstream ({kind})")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
