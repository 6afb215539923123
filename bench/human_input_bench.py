"""Benchmark of the in-memory `HumanInputHandler`: latency, throughput and memory.

Run with `.venv/bin/python bench/human_input_bench.py [--repeats N] [--quick] [--against DIR]`.
It prints figures and asserts nothing (timed asserts do not belong in tests). Each round runs
in a process of its own, measuring one checkout's `bot` package (this one's, or `--against`'s:
another checkout of the project, e.g. `git worktree add ../old main`); with `--against` the
rounds of the two alternate, so a noisy machine weighs on both alike, and both are printed
side by side with the ratio new/old. Latency figures are medians over the rounds of each run's
median (and p99) over many iterations, a fresh handler each run.

Requests are created and waited for with the same timeout, as HumanInputToolHandler does (a
wait() with a shorter timeout than the request's moves its deadline to another queue, and the
entry it leaves stays until its queue drops it: bot/human_input/deadlines.py).

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
    asyncio's all-tasks registry), "total" all three.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.human_input import HumanInputHandler

ROOT = Path(__file__).resolve().parent.parent
TOOL = "AskUserQuestion"
ARGS = {"question": "Which colour?"}
WARMUP = 500
# The requests of (c) must outlive a run under tracemalloc, which creates 100,000 of them in
# over a minute on a loaded machine: a deadline costs the same bytes whatever its length.
MEMORY_TIMEOUT = 3600

Figures = dict[str, float]
Handler = type["HumanInputHandler"]


def _percentile(sorted_values: list[float], fraction: float) -> float:
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


def _summary(samples_ns: list[int]) -> tuple[float, float]:
    """(median, p99) in µs."""
    values = sorted(s / 1000 for s in samples_ns)
    return statistics.median(values), _percentile(values, 0.99)


async def answered_first(make: Handler, iterations: int) -> list[int]:
    handler = make()
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


async def blocked_waiter(make: Handler, iterations: int) -> list[int]:
    """From resolve() to the moment the blocked wait() returns in its own task."""
    handler = make()
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


async def concurrent(make: Handler, count: int) -> float:
    """Seconds for `count` requests: created, blocked on, resolved, woken."""
    handler = make()
    clock = time.perf_counter
    start = clock()
    ids = [(await handler.create(TOOL, ARGS, timeout=60)).pending_id for _ in range(count)]
    tasks = [asyncio.create_task(handler.wait(pid, timeout=60)) for pid in ids]
    await asyncio.sleep(0)
    for pid in ids:
        handler.resolve(pid, "blue")
    answers = await asyncio.gather(*tasks)
    assert answers == ["blue"] * count and not handler.pending
    return clock() - start


def _handler_bytes(tree: Path, before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> int:
    """Bytes allocated between two snapshots with the tree's bot/human_input/ on the stack."""
    pattern = str(tree / "bot" / "human_input" / "*.py")
    only_handler = [tracemalloc.Filter(True, pattern, all_frames=True)]
    old = before.filter_traces(only_handler)
    new = after.filter_traces(only_handler)
    return sum(stat.size_diff for stat in new.compare_to(old, "filename"))


async def memory(make: Handler, tree: Path, count: int) -> Figures:
    handler = make()
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
    in_wait = _handler_bytes(tree, before, after)
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


# -- one round, in a process of its own -----------------------------------------------------------


def handler_of(tree: Path) -> Handler:
    """`HumanInputHandler` as the checkout at `tree` has it (first on the path)."""
    sys.path.insert(0, str(tree))
    from bot.human_input import HumanInputHandler, handler

    where = Path(handler.__file__ or "").resolve()
    assert where.is_relative_to(tree.resolve()), f"{where} is not under {tree}"
    return HumanInputHandler


def one_round(tree: Path, iterations: int, memory_counts: list[int]) -> Figures:
    tree = tree.resolve()
    make = handler_of(tree)
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
        for part, size in asyncio.run(memory(make, tree, count)).items():
            figures[f"(c) {count:,} pending: {part}, B"] = size
    return figures


def run_round(tree: Path, iterations: int, memory_counts: list[int]) -> Figures:
    """One round in a fresh process, for `tree`'s code alone."""
    counts = ",".join(map(str, memory_counts))
    command = [sys.executable, __file__, "--round", str(tree), "--iterations", str(iterations)]
    done = subprocess.run([*command, "--memory", counts], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the round for {tree} failed:\n{done.stderr}")
    figures: Figures = json.loads(done.stdout.splitlines()[-1])
    return figures


# -- the report -----------------------------------------------------------------------------------


def report(rounds: dict[str, list[Figures]]) -> None:
    """Each figure's median over the rounds, per checkout; with two, the ratio new/old."""
    names = list(rounds)
    header = "".join(f"{name:>10}" for name in names)
    print(f"\n{'figure':48}{header}" + ("   new/old" if len(names) == 2 else ""))
    for figure in rounds[names[0]][0]:
        values = [statistics.median(r[figure] for r in rounds[n] if figure in r) for n in names]
        line = f"{figure:48}" + "".join(f"{v:>10.1f}" for v in values)
        if len(values) == 2 and values[0]:
            line += f"{values[1] / values[0]:>10.3f}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds per checkout")
    parser.add_argument("--iterations", type=int, default=20_000, help="requests per run")
    parser.add_argument("--quick", action="store_true", help="fewer iterations, no 100k memory")
    parser.add_argument("--against", type=Path, help="another checkout, measured alongside")
    parser.add_argument("--round", type=Path, help=argparse.SUPPRESS)  # one round, as JSON
    parser.add_argument("--memory", default="", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.round is not None:
        counts = [int(c) for c in options.memory.split(",") if c]
        print(json.dumps(one_round(options.round, options.iterations, counts)))
        return
    iterations = 2_000 if options.quick else options.iterations
    memory_counts = [10_000] if options.quick else [10_000, 100_000]
    trees = {"old": options.against, "new": ROOT} if options.against else {"new": ROOT}
    print(f"python {sys.version.split()[0]}, {options.repeats} rounds x {iterations} requests")
    for name, tree in trees.items():
        print(f"  {name}: {tree}")
    rounds: dict[str, list[Figures]] = {name: [] for name in trees}
    for r in range(options.repeats):
        order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
        for name, tree in order:
            rounds[name].append(run_round(tree, iterations, memory_counts if r == 0 else []))
    report(rounds)


if __name__ == "__main__":
    main()
