"""Benchmark of the in-memory `HumanInputHandler`: latency, throughput and memory.

Run with `.venv/bin/python bench/human_input_bench.py [--repeats N] [--quick] [--against DIR]
[--roomkit DIR] [--profile]`. It prints figures and asserts nothing (timed asserts do not belong
in tests). Each round runs in a process of its own, measuring one implementation: this
checkout's `bot` package ("new"), `--against`'s (another checkout of the project, e.g. `git
worktree add ../old main`: "old"), or RoomKit's own `HumanInputHandler` ("roomkit": `--roomkit`
is an unpacked roomkit wheel, `pip download roomkit --no-deps --python-version 3.12
--only-binary=:all:` then `unzip`; its human_input module and the two model modules it uses are
loaded from there, the framework modules it imports for other paths stubbed, so it runs on this
Python). The rounds of all of them take turns, so a noisy machine weighs on each alike; each is
printed side by side, with the ratios new/roomkit and new/old and each figure's spread (lowest
to highest round). Latency figures are medians over the rounds of each run's median (and p99)
over many iterations, a fresh handler each run. `--profile` prints where the new code's time
goes on (a) and (b) instead (cProfile).

Requests are created and waited for with the same timeout, as HumanInputToolHandler does (a
wait() with a shorter timeout than the request's moves its deadline to another queue, and the
entry it leaves stays until its queue drops it: bot/human_input/ledger.py).

(a) round trip, in µs per request:
    answered-first   create -> resolve -> wait (the answer is replayed from the request)
    blocked-waiter   a wait() task already blocked, then resolve: time until the waiter runs
(b) 10,000 requests pending at once, each with a blocked waiter: create, block, resolve, wake;
    with the cyclic garbage collector on (as deployed) and off (the handler's own cost)
(c) bytes per pending request (tracemalloc) at 10,000 and 100,000, with a blocked waiter each,
    measured in the first round only (they do not vary): "request" is what create() keeps (the
    request, its id, timestamps, its deadline, the index), "wait()" what a blocked wait()
    allocates inside the handler (the wait() coroutine, which is also what its task waits on:
    bot/human_input/waiter.py), "task" the rest of what a blocked wait() costs (the asyncio
    Task with its name and context, the wake-up callback it hands the wait(), its entry in
    asyncio's all-tasks registry), "total" all three. "wait() as a future" is what the plain
    alternative to the hand-written wait() would allocate instead: a blocked `async def` (its
    frame) awaiting an `asyncio.Future` (and its iterator), measured beside it in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import cProfile
import gc
import importlib.util
import json
import pstats
import statistics
import subprocess
import sys
import time
import tracemalloc
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TOOL = "AskUserQuestion"
ARGS = {"question": "Which colour?"}
WARMUP = 500
LATENCY_TIMEOUT = 60.0
# The requests of (c) must outlive a run under tracemalloc, which creates 100,000 of them in
# over a minute on a loaded machine: a deadline costs the same bytes whatever its length.
MEMORY_TIMEOUT = 3600.0

Figures = dict[str, float]
# A fresh handler whose requests (and their waits) time out after the given seconds: ours takes
# it as its default timeout, RoomKit's create() takes none (its wait() alone times out).
Make = Callable[[float], Any]


def _percentile(sorted_values: list[float], fraction: float) -> float:
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


def _summary(samples_ns: list[int]) -> tuple[float, float]:
    """(median, p99) in µs."""
    values = sorted(s / 1000 for s in samples_ns)
    return statistics.median(values), _percentile(values, 0.99)


async def answered_first(make: Make, iterations: int) -> list[int]:
    handler = make(LATENCY_TIMEOUT)
    samples: list[int] = []
    clock = time.perf_counter_ns
    for i in range(WARMUP + iterations):
        start = clock()
        pending = await handler.create(TOOL, ARGS)
        handler.resolve(pending.pending_id, "blue")
        answer = await handler.wait(pending.pending_id, timeout=LATENCY_TIMEOUT)
        end = clock()
        assert answer == "blue"
        if i >= WARMUP:
            samples.append(end - start)
    return samples


async def blocked_waiter(make: Make, iterations: int) -> list[int]:
    """From resolve() to the moment the blocked wait() returns in its own task."""
    handler = make(LATENCY_TIMEOUT)
    samples: list[int] = []
    clock = time.perf_counter_ns
    resumed: list[int] = []

    async def waiter(pending_id: str) -> None:
        await handler.wait(pending_id, timeout=LATENCY_TIMEOUT)
        resumed.append(clock())

    for i in range(WARMUP + iterations):
        pending = await handler.create(TOOL, ARGS)
        task = asyncio.create_task(waiter(pending.pending_id))
        await asyncio.sleep(0)  # the waiter runs up to its block
        start = clock()
        handler.resolve(pending.pending_id, "blue")
        await task
        if i >= WARMUP:
            samples.append(resumed[-1] - start)
    return samples


async def concurrent(make: Make, count: int) -> float:
    """Seconds for `count` requests: created, blocked on, resolved, woken."""
    handler = make(LATENCY_TIMEOUT)
    clock = time.perf_counter
    start = clock()
    ids = [(await handler.create(TOOL, ARGS)).pending_id for _ in range(count)]
    tasks = [asyncio.create_task(handler.wait(pid, timeout=LATENCY_TIMEOUT)) for pid in ids]
    await asyncio.sleep(0)
    for pid in ids:
        handler.resolve(pid, "blue")
    answers = await asyncio.gather(*tasks)
    assert answers == ["blue"] * count and not handler.pending
    return clock() - start


def _bytes_in(pattern: str, before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> int:
    """Bytes allocated between two snapshots with a file matching `pattern` on the stack."""
    only = [tracemalloc.Filter(True, pattern, all_frames=True)]
    old = before.filter_traces(only)
    new = after.filter_traces(only)
    return sum(stat.size_diff for stat in new.compare_to(old, "filename"))


async def _on_a_future(future: asyncio.Future[str]) -> str:
    """The plain alternative to the hand-written wait(): an async def blocked on a future."""
    return await future


async def future_wait_bytes(count: int, task_bytes: float) -> float:
    """Bytes per blocked `async def` on a future of its own, less its task's (`task_bytes`,
    as `memory` measured it: a wait() of either kind is awaited by one such task)."""
    loop = asyncio.get_running_loop()
    gc.collect()
    tracemalloc.start(32)
    base = tracemalloc.get_traced_memory()[0]
    futures = [loop.create_future() for _ in range(count)]
    tasks = [asyncio.create_task(_on_a_future(future)) for future in futures]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    blocked = tracemalloc.get_traced_memory()[0] - sys.getsizeof(futures) - sys.getsizeof(tasks)
    tracemalloc.stop()
    for future in futures:
        future.set_result("blue")
    await asyncio.gather(*tasks)
    return (blocked - base) / count - task_bytes


async def memory(make: Make, pattern: str, count: int) -> Figures:
    handler = make(MEMORY_TIMEOUT)
    gc.collect()
    tracemalloc.start(32)
    base = tracemalloc.get_traced_memory()[0]
    ids = [(await handler.create(TOOL, ARGS)).pending_id for _ in range(count)]
    # The list of ids is the benchmark's, not the handler's: take it out of the figure.
    created = tracemalloc.get_traced_memory()[0] - sys.getsizeof(ids)
    before = tracemalloc.take_snapshot()
    tasks = [asyncio.create_task(handler.wait(pid, timeout=MEMORY_TIMEOUT)) for pid in ids]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    blocked = tracemalloc.get_traced_memory()[0] - sys.getsizeof(ids) - sys.getsizeof(tasks)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    in_wait = _bytes_in(pattern, before, after)
    del before, after
    assert len(handler.pending) == count
    for pid in ids:
        handler.resolve(pid, "blue")
    await asyncio.gather(*tasks)
    return {
        "request": (created - base) / count,
        "wait()": in_wait / count,
        "task": (blocked - created - in_wait) / count,
        "total": (blocked - base) / count,
    }


# -- the implementations ---------------------------------------------------------------------------


def ours(tree: Path) -> tuple[Make, str]:
    """`HumanInputHandler` as the checkout at `tree` has it (first on the path)."""
    sys.path.insert(0, str(tree))
    from bot.human_input import HumanInputHandler, handler

    where = Path(handler.__file__ or "").resolve()
    assert where.is_relative_to(tree.resolve()), f"{where} is not under {tree}"
    return (lambda timeout: HumanInputHandler(default_timeout=timeout)), str(
        tree / "bot" / "human_input" / "*.py"
    )


def roomkit(unpacked: Path) -> tuple[Make, str]:
    """RoomKit's own `HumanInputHandler` from an unpacked wheel: its module and the two model
    modules it uses are RoomKit's; the framework modules it imports for other paths (its
    errors, its tool loop's context, a tool's definition) are stubbed, none on these paths."""

    def stub(name: str, **attributes: Any) -> None:
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        module.__path__ = []
        sys.modules[name] = module

    def load(name: str) -> types.ModuleType:
        path = unpacked / (name.replace(".", "/") + ".py")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None, path
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    for package in ("roomkit", "roomkit.core", "roomkit.models", "roomkit.providers",
                    "roomkit.providers.ai", "roomkit.tools"):  # fmt: skip
        stub(package)
    errors = {n: type(n, (RuntimeError,), {}) for n in (
        "HumanInputRejectedError", "ToolFailedError", "ToolRefusedError", "UnservedToolCallError",
    )}  # fmt: skip
    stub("roomkit.core.exceptions", **errors)
    stub("roomkit.core.task_utils", log_task_exception=lambda task: None)
    stub("roomkit.providers.ai.base", AITool=object)
    stub("roomkit.tools.context", current_tool_actor_id=lambda: None,
         _current_tool_call=contextvars.ContextVar("call", default=None))  # fmt: skip
    for name in ("roomkit.models.enums", "roomkit.models.pending_input",
                 "roomkit.tools._turn_inputs"):  # fmt: skip
        load(name)
    handler_class = load("roomkit.tools.human_input").HumanInputHandler
    return (lambda timeout: handler_class()), str(unpacked / "roomkit" / "*")


# -- one round, in a process of its own -----------------------------------------------------------


def implementation(kind: str, where: Path) -> tuple[Make, str]:
    return roomkit(where.resolve()) if kind == "roomkit" else ours(where.resolve())


def one_round(kind: str, where: Path, iterations: int, memory_counts: list[int]) -> Figures:
    make, pattern = implementation(kind, where)
    figures: Figures = {}
    for name, bench in (("answered-first", answered_first), ("blocked-waiter", blocked_waiter)):
        median, p99 = _summary(asyncio.run(bench(make, iterations)))
        figures[f"(a) {name} median, µs"] = median
        figures[f"(a) {name} p99, µs"] = p99
    for collector in ("gc on", "gc off"):
        gc.collect()
        if collector == "gc off":
            gc.disable()
        try:
            total = asyncio.run(concurrent(make, 10_000))
        finally:
            gc.enable()
        figures[f"(b) 10,000 concurrent, {collector}, ms"] = total * 1000
    for count in memory_counts:
        parts = asyncio.run(memory(make, pattern, count))
        for part, size in parts.items():
            figures[f"(c) {count:,} pending: {part}, B"] = size
        if kind != "roomkit":
            figures[f"(c) {count:,} pending: wait() as a future, B"] = asyncio.run(
                future_wait_bytes(count, parts["task"])
            )
    return figures


def run_round(kind: str, where: Path, iterations: int, memory_counts: list[int]) -> Figures:
    """One round in a fresh process, for one implementation alone."""
    counts = ",".join(map(str, memory_counts))
    command = [sys.executable, __file__, "--round", f"{kind}:{where}", "--iterations",
               str(iterations), "--memory", counts]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the round for {kind} ({where}) failed:\n{done.stderr}")
    figures: Figures = json.loads(done.stdout.splitlines()[-1])
    return figures


def profile(iterations: int) -> None:
    """Where the new code's time goes: (a) blocked-waiter and (b) under cProfile."""
    make, _ = ours(ROOT)
    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(blocked_waiter(make, iterations))
    asyncio.run(concurrent(make, 10_000))
    profiler.disable()
    pstats.Stats(profiler).strip_dirs().sort_stats("tottime").print_stats(25)


# -- the report -----------------------------------------------------------------------------------


def report(rounds: dict[str, list[Figures]]) -> None:
    """Each figure's median over the rounds (and its spread, lowest-highest), per
    implementation; the ratios of new to roomkit and to old."""
    names = list(rounds)
    ratios = [other for other in ("roomkit", "old") if other in rounds]
    header = "".join(f"{name:>22}" for name in names)
    header += "".join(f"{'new/' + other:>12}" for other in ratios)
    print(f"\n{'figure':46}{header}")
    figures = {figure: None for name in names for r in rounds[name] for figure in r}
    for figure in figures:
        line = f"{figure:46}"
        medians: dict[str, float] = {}
        for name in names:
            values = [r[figure] for r in rounds[name] if figure in r]
            if not values:
                line += f"{'-':>22}"
                continue
            medians[name] = statistics.median(values)
            spread = f" ({min(values):.1f}-{max(values):.1f})" if len(values) > 1 else ""
            line += f"{f'{medians[name]:.1f}{spread}':>22}"
        for other in ratios:
            if "new" in medians and medians.get(other):
                line += f"{medians['new'] / medians[other]:>12.3f}"
            else:
                line += f"{'-':>12}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds per implementation")
    parser.add_argument("--iterations", type=int, default=20_000, help="requests per run")
    parser.add_argument("--quick", action="store_true", help="fewer iterations, no 100k memory")
    parser.add_argument("--against", type=Path, help="another checkout, measured alongside")
    parser.add_argument("--roomkit", type=Path, help="an unpacked roomkit wheel, alongside")
    parser.add_argument("--profile", action="store_true", help="cProfile the new code instead")
    parser.add_argument("--round", help=argparse.SUPPRESS)  # one round, as JSON
    parser.add_argument("--memory", default="", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.round is not None:
        kind, _, where = options.round.partition(":")
        counts = [int(c) for c in options.memory.split(",") if c]
        print(json.dumps(one_round(kind, Path(where), options.iterations, counts)))
        return
    iterations = 2_000 if options.quick else options.iterations
    if options.profile:
        profile(iterations)
        return
    memory_counts = [10_000] if options.quick else [10_000, 100_000]
    trees: dict[str, tuple[str, Path]] = {}
    if options.roomkit:
        trees["roomkit"] = ("roomkit", options.roomkit)
    if options.against:
        trees["old"] = ("ours", options.against)
    trees["new"] = ("ours", ROOT)
    print(f"python {sys.version.split()[0]}, {options.repeats} rounds x {iterations} requests")
    for name, (_, where) in trees.items():
        print(f"  {name}: {where}")
    rounds: dict[str, list[Figures]] = {name: [] for name in trees}
    order = list(trees.items())
    for r in range(options.repeats):
        for name, (kind, where) in order[r % len(order) :] + order[: r % len(order)]:
            counts = memory_counts if r == 0 else []
            rounds[name].append(run_round(kind, where, iterations, counts))
    report(rounds)


if __name__ == "__main__":
    main()
