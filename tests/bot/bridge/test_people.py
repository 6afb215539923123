"""People's names: asked of the directory that owns each id, cached (bounded, short-lived),
and a slow directory never holds a page past its wait."""

from __future__ import annotations

import asyncio

from bot.bridge.people import PeopleNames


class Directory:
    """Names of `U…` ids; `gate`, while unset, holds every lookup."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names, self.asked = names, list[str]()
        self.gate = asyncio.Event()
        self.gate.set()

    def owns(self, person_id: str) -> bool:
        return person_id.startswith("U")

    async def name(self, person_id: str) -> str | None:
        self.asked.append(person_id)
        await self.gate.wait()
        if person_id == "UBROKEN":
            raise RuntimeError("the surface is down")
        return self.names.get(person_id)


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_names_are_cached_for_a_while_and_unknown_ids_are_left_out() -> None:
    directory, clock = Directory({"U1": "alice"}), Clock()
    people = PeopleNames([directory], ttl=60, clock=clock)
    assert await people.names(["U1", "U1", "UNOBODY", "UBROKEN", "T-other", None]) == {
        "U1": "alice"
    }
    assert await people.names(["U1"]) == {"U1": "alice"}
    assert directory.asked == ["U1", "UNOBODY", "UBROKEN"]  # once each; T-other is nobody's
    directory.names["U1"] = "alice b."
    clock.now = 61
    assert await people.names(["U1"]) == {"U1": "alice b."}  # renamed: seen after the ttl


async def test_a_slow_directory_does_not_hold_the_page() -> None:
    directory = Directory({"U1": "alice"})
    directory.gate.clear()
    people = PeopleNames([directory], wait=0.01)
    assert await people.names(["U1"]) == {}  # the page shows the id
    directory.gate.set()
    (lookup,) = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    await lookup  # the lookup went on, and the next page has the name
    assert await people.names(["U1"]) == {"U1": "alice"}


async def test_the_cache_is_bounded() -> None:
    directory = Directory({f"U{n}": f"person {n}" for n in range(5)})
    people = PeopleNames([directory], size=2)
    for n in range(5):
        await people.names([f"U{n}"])
    directory.asked.clear()
    assert await people.names(["U0", "U4"]) == {"U0": "person 0", "U4": "person 4"}
    assert directory.asked == ["U0"]  # the stalest was forgotten, the newest kept


async def test_known_never_waits_and_ask_fills_it() -> None:
    directory, clock = Directory({"U1": "alice"}), Clock()
    people = PeopleNames([directory], ttl=600, clock=clock)
    assert people.known("U1") is None and directory.asked == []
    (lookup,) = people.ask(["U1", "U1", ""])
    await lookup
    assert people.known("U1") == "alice" and people.ask(["U1"]) == []
    clock.now = 601  # expired: not known until asked again
    assert people.known("U1") is None
    await asyncio.gather(*people.ask(["U1"]))
    assert people.known("U1") == "alice" and directory.asked == ["U1", "U1"]


class OtherSurface(Directory):
    def owns(self, person_id: str) -> bool:
        return person_id.startswith("29:")


async def test_a_directory_added_later_shares_the_cache() -> None:
    people = PeopleNames([Directory({"U1": "alice"})])
    assert await people.names(["29:bob"]) == {}  # nobody owns it yet: not cached as unknown
    people.add(OtherSurface({"29:bob": "bob"}))
    assert await people.names(["U1", "29:bob"]) == {"U1": "alice", "29:bob": "bob"}
