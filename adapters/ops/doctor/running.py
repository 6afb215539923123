"""The checks run side by side, each within its time: a check that raises, or outlasts its
time, is one failed line naming it, never a traceback, and the others go on."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from adapters.ops.doctor.results import Result, failed

CHECK_SECONDS = 20.0  # a check that has not answered by then is a failure (a hung server)

Probe = Callable[[], Awaitable[list[Result]]]


@dataclass(frozen=True, slots=True)
class Check:
    """What is checked (named in the line of a failure) and how."""

    name: str
    probe: Probe
    fix: str = "run with --debug and --verbose to see what happened"


async def run_checks(checks: Sequence[Check], seconds: float = CHECK_SECONDS) -> list[Result]:
    """Every check's results, in the order of `checks`, all of them run at once."""
    found = await asyncio.gather(*(_bounded(check, seconds) for check in checks))
    return [result for results in found for result in results]


async def _bounded(check: Check, seconds: float) -> list[Result]:
    try:
        async with asyncio.timeout(seconds):
            return await check.probe()
    except TimeoutError:
        return [failed(check.name, f"no answer within {seconds:g} s", check.fix)]
    except Exception as err:
        return [failed(check.name, f"the check failed: {first_line(err)}", check.fix)]


def first_line(err: BaseException) -> str:
    """The kind of an error and the first line of what it says."""
    said = str(err).strip().splitlines()
    return f"{type(err).__name__}: {said[0]}" if said else type(err).__name__
