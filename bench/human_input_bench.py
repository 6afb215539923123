"""Benchmark of the in-memory `HumanInputHandler`: latency, throughput and memory.

Run with `.venv/bin/python bench/human_input_bench.py [--repeats N] [--quick]`. It prints figures
and asserts nothing (timed asserts do not belong in tests). Each latency figure is measured over
many iterations, in several separate runs (a fresh handler each time); the median and p99 of
every run are printed, then the median over the runs, because a small shared machine is noisy.

Requests are created and waited for with the same timeout, as HumanInputToolHandler does (a
wait() with a shorter timeout than the request's moves its deadline to another queue, and the
entry it leaves stays until its queue drops it: bot/human_input/deadlines.py).

(a) round trip, in µs per request:
    answered-first   create -> resolve -> wait (the answer is replayed from the request)
    blocked-waiter   a wait() task already blocked, then resolve: time until the waiter runs
(b) 10,000 requests pending at once, each with a blocked waiter: create, block, resolve, wake;
    with the cyclic garbage collector on (as deployed) and off (the handler's own cost)
(c) bytes per pending request (tracemalloc) at 10,000 and 100,000, with a blocked waiter each:
    "handler's own state" is what create() keeps (the request, its id, timestamps, its
    deadline, the index) plus what wait() allocates inside the handler: the wait() coroutine,
    which is also what its task waits on (bot/human_input/waiter.py; it was a coroutine frame
    counted with the task, plus a future and the future's iterator counted here). "The waiter
    task" is the rest of what a blocked wait() costs: the asyncio Task (with its name and
    context), the wake-up callback it hands the wait(), and the task's entry in asyncio's
    all-tasks registry. "total" is both: the same allocations as before, split otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.human_input import HumanInputHandler

TOOL = "AskUserQuestion"
ARGS = {"question": "Which colour?"}
WARMUP = 500
# The requests of (c) must outlive a run under tracemalloc, which creates 100,000 of them in
# over a minute on a loaded machine: a deadline costs the same bytes whatever its length.
MEMORY_TIMEOUT = 3600
# The handler's modules (a tracemalloc filename pattern).
HANDLER_FILE = str(Path(__file__).resolve().parent.parent / "bot" / "human_input" / "*.py")


def _percentile(sorted_values: list[float], fraction: float) -> float:
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


def _summary(samples_ns: list[int]) -> tuple[float, float]:
    """(median, p99) in µs."""
    values = sorted(s / 1000 for s in samples_ns)
    return statistics.median(values), _percentile(values, 0.99)


async def answered_first(iterations: int) -> list[int]:
    handler = HumanInputHandler()
    samples: list[int] = []
    clock = time.perf_counter_ns
    for i in range(WARMUP + iterations):
        start = clock()
        pending = await handler.create(TOOL, ARGS, timeout=60)
        handler.resolve(pending.pending_id, "blue")
        answer = await handler.wait(pending.pending_id, timeout=60)
        end = clock()
        assert answer == "blue"
        if i >= WARMUP:
            samples.append(end - start)
    return samples


async def blocked_waiter(iterations: int) -> list[int]:
    """From resolve() to the moment the blocked wait() returns in its own task."""
    handler = HumanInputHandler()
    samples: list[int] = []
    clock = time.perf_counter_ns
    resumed: list[int] = []

    async def waiter(pending_id: str) -> None:
        await handler.wait(pending_id, timeout=60)
        resumed.append(clock())

    for i in range(WARMUP + iterations):
        pending = await handler.create(TOOL, ARGS, timeout=60)
        task = asyncio.create_task(waiter(pending.pending_id))
        await asyncio.sleep(0)  # the waiter runs up to its block
        start = clock()
        handler.resolve(pending.pending_id, "blue")
        await task
        if i >= WARMUP:
            samples.append(resumed[-1] - start)
    return samples


async def concurrent(count: int) -> dict[str, float]:
    handler = HumanInputHandler()
    clock = time.perf_counter
    t0 = clock()
    ids = [(await handler.create(TOOL, ARGS, timeout=60)).pending_id for _ in range(count)]
    t1 = clock()
    tasks = [asyncio.create_task(handler.wait(pid, timeout=60)) for pid in ids]
    await asyncio.sleep(0)
    t2 = clock()
    for pid in ids:
        handler.resolve(pid, "blue")
    t3 = clock()
    answers = await asyncio.gather(*tasks)
    t4 = clock()
    assert answers == ["blue"] * count and not handler.pending
    return {
        "create": t1 - t0,
        "block": t2 - t1,
        "resolve": t3 - t2,
        "wake": t4 - t3,
        "total": t4 - t0,
    }


def _handler_bytes(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> int:
    """Bytes allocated between two snapshots with bot/human_input/ on the stack."""
    only_handler = [tracemalloc.Filter(True, HANDLER_FILE, all_frames=True)]
    old = before.filter_traces(only_handler)
    new = after.filter_traces(only_handler)
    return sum(stat.size_diff for stat in new.compare_to(old, "filename"))


async def memory(count: int) -> dict[str, float]:
    handler = HumanInputHandler()
    gc.collect()
    tracemalloc.start(32)
    base = tracemalloc.get_traced_memory()[0]
    ids = [
        (await handler.create(TOOL, ARGS, timeout=MEMORY_TIMEOUT)).pending_id for _ in range(count)
    ]
    # The list of ids is the benchmark's, not the handler's: take it out of the figure.
    created = tracemalloc.get_traced_memory()[0] - sys.getsizeof(ids)
    before = tracemalloc.take_snapshot()
    tasks = [asyncio.create_task(handler.wait(pid, timeout=MEMORY_TIMEOUT)) for pid in ids]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    blocked = tracemalloc.get_traced_memory()[0] - sys.getsizeof(ids) - sys.getsizeof(tasks)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    in_wait = _handler_bytes(before, after)
    del before, after
    assert len(handler.pending) == count
    for pid in ids:
        handler.resolve(pid, "blue")
    await asyncio.gather(*tasks)
    return {
        "handler": (created - base) / count,
        "in_wait": in_wait / count,
        "task": (blocked - created - in_wait) / count,
        "total": (blocked - base) / count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="separate runs per latency figure")
    parser.add_argument("--iterations", type=int, default=20_000, help="requests per run")
    parser.add_argument("--quick", action="store_true", help="fewer iterations, no 100k memory")
    options = parser.parse_args()
    iterations = 2_000 if options.quick else options.iterations
    print(f"python {sys.version.split()[0]}, {options.repeats} runs x {iterations} requests")

    print("\n(a) round trip, µs (median / p99 of each run; then median over runs)")
    for name, bench in (("answered-first", answered_first), ("blocked-waiter", blocked_waiter)):
        medians, p99s = [], []
        for _ in range(options.repeats):
            samples = asyncio.run(bench(iterations))
            median, p99 = _summary(samples)
            medians.append(median)
            p99s.append(p99)
        runs = "  ".join(f"{m:.1f}/{p:.1f}" for m, p in zip(medians, p99s, strict=True))
        print(f"  {name:15s} runs: {runs}")
        print(
            f"  {name:15s} median {statistics.median(medians):.1f} µs, "
            f"p99 {statistics.median(p99s):.1f} µs"
        )

    print("\n(b) 10,000 concurrent requests with 10,000 blocked waiters, ms")
    # With the cyclic GC on (the default), its full collections over the growing set of live
    # requests and tasks are a large, noisy share; the run without it shows the handler alone.
    for collector in ("gc on", "gc off"):
        totals = []
        for _ in range(options.repeats):
            gc.collect()
            if collector == "gc off":
                gc.disable()
            try:
                phases = asyncio.run(concurrent(10_000))
            finally:
                gc.enable()
            totals.append(phases["total"])
            print(f"  {collector}: " + "  ".join(f"{k} {v * 1000:.1f}" for k, v in phases.items()))
        print(f"  {collector}: median total {statistics.median(totals) * 1000:.1f} ms")

    print("\n(c) bytes per pending request with a blocked waiter (tracemalloc)")
    for count in (10_000,) if options.quick else (10_000, 100_000):
        figures = asyncio.run(memory(count))
        print(
            f"  {count:>7,}: total {figures['total']:.0f} B = handler's own state"
            f" {figures['handler'] + figures['in_wait']:.0f} B (request {figures['handler']:.0f}"
            f" + its blocked wait() {figures['in_wait']:.0f}) + the waiter task"
            f" {figures['task']:.0f} B (asyncio Task, its wake-up callback, all_tasks entry)"
        )


if __name__ == "__main__":
    main()
