"""Several workers, one decision: the worker holding a request decides every settle of it.

`resolve()` is synchronous: it must say True or False before anything is written. It may only
say True if nothing written later can contradict it, so with several workers sharing a
database the rule "a resolve() that returned True is the answer the waiter gets" needs one
arbiter per request, and that arbiter is the worker holding it in memory:

- The worker that creates a request holds it (its row's `held_by`); one that loads a request
  in wait() takes the hold if no live worker has it (a dead or departed creator). A worker is
  alive while its heartbeat row (`holders`) is fresh: it beats every `hold_seconds / 4` while
  it holds a pending request.
- The holder settles in memory first (the claim every settle on the event loop races for, so
  the first one wins) and then writes the compare-and-set, which no other worker can win
  while the holder is alive: the conditional UPDATE also requires the row to be unheld, held
  by the writer, or held by a worker whose heartbeat lapsed.
- Any other worker's settle (`answer()`, `decline()`, a timer, a cut wait) is a proposal:
  written beside the request and NOTIFYed; the holder applies it through that same claim,
  so it wins only if nothing came first, and records its id on the row. The proposer reads
  the row back: its call returns True only if the row settled with its proposal.
- A holder that stops beating (dead, or cut from the database) stops deciding: its own
  resolve() returns False once its last heartbeat is `hold_seconds / 2` old, and the other
  workers settle directly once it is `hold_seconds` old. So a dead holder delays answers by
  at most `hold_seconds`, and the rule holds as long as a worker's clock is within
  `hold_seconds / 2` of the others' and a settle's write lands within that margin too.

Proposals reach the holder through PostgreSQL NOTIFY (the bridge calls `follow()`) and, where
there is no NOTIFY (SQLite), through the heartbeat, which returns the held requests that have
proposals waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta

from bot.human_input.base import HandlerState
from bot.human_input.snapshots import RequestUpdate, timeout_message
from bot.records import (
    CLAIMED,
    FOREIGN,
    HELD,
    Decision,
    PendingInput,
    RequestStatus,
    Settlement,
    StoreClosedError,
    StoreUnavailableError,
    copy_settled,
)

log = logging.getLogger("bot.human_input")

FIRST_POLL_SECONDS = 0.01
MAX_POLL_SECONDS = 0.25


class Holding(HandlerState):
    # -- settles this worker decides, or hands over -------------------------------------------

    async def _record_settle(
        self, request: PendingInput, settlement: Settlement, *, must_record: bool = False
    ) -> bool:
        """Write a settle claimed in memory, then apply what the row says. True if it won.

        A settle the database never took is applied in memory only (a timeout, a withdrawal:
        the waiter must wake), except a person's answer given through `answer()`/`decline()`
        (`must_record`): that one is not taken, the request stays open, and the caller gets
        StoreUnavailableError, so nobody is told "answered" when nothing was recorded.
        """
        store = self.store
        assert store is not None
        if request._flags & FOREIGN:
            return await self._settle_through_holder(request, settlement)
        won = await _with_retries(lambda: store.settle(settlement))
        if won is None and must_record:
            request._flags &= ~CLAIMED
            raise StoreUnavailableError(f"could not record the answer to {request.id}")
        if won is None:
            log.error("could not record %s of %s; applied in memory only",
                      settlement.status, request.id)  # fmt: skip
            self._apply(request, settlement)
            return True
        if won:
            self._apply_written(request, settlement)
            return True
        record = await store.get_request(request.id)
        if record is not None and record.status is not RequestStatus.PENDING:
            self._apply(request, record, tell=False)  # the winner told the observers
            return False
        if record is not None:  # our hold lapsed and another worker holds it now
            self._hold(request, held=False)
            return await self._settle_through_holder(request, settlement)
        # No row (the store came after the request): settle here rather than leave the request
        # claimed, unanswerable and its waiters blocked for good.
        log.error("no row for %s; applied %s in memory only", request.id, settlement.status)
        self._apply(request, settlement)
        return True

    async def _settle_through_holder(self, request: PendingInput, settlement: Settlement) -> bool:
        """A settle of a request held by another worker: propose it, apply the outcome."""
        assert self.store is not None
        proposal = self._settlement(
            request.id, settlement.status, settlement.result, settlement.reason,
            settlement.by, settlement.at, proposal=secrets.token_hex(8),
        )  # fmt: skip
        try:
            won, here = await self._offer(proposal)
            record = None if won else await self.store.get_request(request.id)
        except Exception:
            log.exception("could not hand %s of %s over; applied in memory only",
                          settlement.status, request.id)  # fmt: skip
            self._apply(request, settlement)
            return True
        if won:
            self._apply_won(request, proposal, here)
        elif record is not None and record.status is not RequestStatus.PENDING:
            self._apply(request, record, tell=False)
        else:  # refused, yet no settled row to follow: do not leave the request claimed
            log.error("no settled row for %s; applied %s in memory only",
                      request.id, settlement.status)  # fmt: skip
            self._apply(request, settlement)
        return won

    def _apply_won(self, request: PendingInput, proposal: Settlement, here: bool) -> None:
        """Apply a proposal that won: written `here` (this worker tells the observers), or
        by its holder (which told them)."""
        if here:
            self._apply_written(request, proposal)
        else:
            self._apply(request, proposal, tell=False)

    async def _offer(self, proposal: Settlement) -> tuple[bool, bool]:
        """Settle a request this worker does not hold: (won, and whether it was written here
        rather than by the holder, which then told the observers)."""
        store = self.store
        assert store is not None
        direct = await store.propose(proposal)
        if direct is not None:
            return direct, direct
        delay = FIRST_POLL_SECONDS
        while True:
            await self._hear(proposal.request_id, delay)
            decision = await store.decision(proposal)
            if decision is Decision.ACCEPTED:
                return True, False
            if decision is Decision.REFUSED:
                return False, False
            if decision is Decision.ORPHANED:  # its holder is gone: settle it ourselves
                if await store.settle(proposal):
                    return True, True
                continue
            delay = min(delay * 2, MAX_POLL_SECONDS)

    async def _hear(self, request_id: str, seconds: float) -> None:
        """Sleep until `follow(request_id)` is called (a NOTIFY) or `seconds` pass."""
        heard: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        listeners = self._listeners.setdefault(request_id, [])
        listeners.append(heard)
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await heard
        finally:
            if heard in listeners:
                listeners.remove(heard)
            if not listeners and self._listeners.get(request_id) is listeners:
                del self._listeners[request_id]

    # -- the async settles: answer, decline, expiry -------------------------------------------

    async def answer(
        self,
        pending_id: str,
        result: str,
        *,
        by: str | None = None,
        by_detail: Mapping[str, str] | None = None,
        known: PendingInput | None = None,
    ) -> bool:
        """Resolve and return once the outcome is recorded, True if it is this answer; works
        for requests held by other workers and not in memory here. The answer is checked by
        the tool's validator first: AnswerInvalidError (nothing is settled) if it refuses.
        `by_detail` (a display name, the surface) goes to the audit row. `known`: the request
        as the caller just read it from the store (not read again); settled in place if this
        answer settles it and it is not in memory here."""
        return await self._settle_awaited(
            pending_id, RequestStatus.RESOLVED, result, None, by, by_detail, known
        )

    async def decline(
        self,
        pending_id: str,
        reason: str = "",
        *,
        by: str | None = None,
        by_detail: Mapping[str, str] | None = None,
        known: PendingInput | None = None,
    ) -> bool:
        """Reject and return once the outcome is recorded; works for requests not in memory
        (`known` as for `answer`)."""
        return await self._settle_awaited(
            pending_id, RequestStatus.REJECTED, None, reason, by, by_detail, known
        )

    async def cancel(self, pending_id: str, reason: str = "", *, by: str | None = None) -> bool:
        """Withdraw and return once recorded (its requester gave up on it); works for
        requests not in memory. Its message says it was cancelled."""
        return await self._settle_awaited(pending_id, RequestStatus.CANCELLED, None, reason, by)

    async def undeliverable(self, pending_id: str, reason: str) -> bool:
        """The request could not be shown to anyone (a surface's post failed for good): settle
        it as undeliverable at once, rather than at its deadline; its waiter raises
        UndeliverableError(reason) and the audit log keeps the reason. Returns once recorded,
        True if this settled it (the same compare-and-set as every settle)."""
        return await self._settle_awaited(
            pending_id, RequestStatus.UNDELIVERABLE, None, reason, None
        )

    async def _settle_awaited(
        self,
        pending_id: str,
        status: RequestStatus,
        result: str | None,
        reason: str | None,
        by: str | None,
        by_detail: Mapping[str, str] | None = None,
        known: PendingInput | None = None,
    ) -> bool:
        request = self._active.get(pending_id)
        if request is None and self.store is not None:
            record = known if known is not None else await self.store.get_request(pending_id)
            if record is None or record.status is not RequestStatus.PENDING:
                return False
            request = self._active.get(pending_id)
            if request is None:  # still not in memory here
                if result is not None:
                    result = self._validated(record, result)
                return await self._settle_unheld(record, status, result, reason, by, by_detail)
        if request is None or request.status is not RequestStatus.PENDING:
            return False
        if request._flags & CLAIMED:
            return False
        if result is not None:
            result = self._validated(request, result)
        settlement = self._settlement(request.id, status, result, reason, by, by_detail=by_detail)
        if self.store is None:
            self._apply(request, settlement)
            return True
        request._flags |= CLAIMED
        return await self._record_settle(request, settlement, must_record=by is not None)

    async def _settle_unheld(
        self,
        record: PendingInput,
        status: RequestStatus,
        result: str | None,
        reason: str | None,
        by: str | None,
        by_detail: Mapping[str, str] | None = None,
    ) -> bool:
        """Settle a request this worker does not have in memory: the row (or its holder) decides."""
        proposal = self._settlement(record.id, status, result, reason, by,
                                    proposal=secrets.token_hex(8), by_detail=by_detail)  # fmt: skip
        won, here = await self._offer(proposal)
        request = self._active.get(record.id)
        if request is not None:  # a wait() loaded it meanwhile: wake it now, not at its deadline
            if won:
                self._apply_won(request, proposal, here)
            else:
                self._spawn(self.follow(record.id))
            return won
        if won:
            copy_settled(record, proposal)
            self._retain(record)  # a wait() loading it meanwhile finds it settled
            if here:
                self._tell_observers(RequestUpdate.of(record))
        return won

    async def expire_record(self, record: PendingInput) -> None:
        """Time out a request whose durable deadline passed (the deadline scheduler calls it).
        One held by a live worker is left to that worker's own timer."""
        reason = timeout_message(record.lifetime_seconds or 0.0, record.tool_name)
        result = self._default_answer(record)
        request = self._active.get(record.id)
        if request is not None:
            self._settle(request, RequestStatus.TIMED_OUT, result=result, reason=reason)
            return
        assert self.store is not None
        settlement = self._settlement(record.id, RequestStatus.TIMED_OUT, result, reason)
        if not await self.store.settle(settlement):
            return
        request = self._active.get(record.id)
        if request is not None:  # loaded meanwhile
            self._apply_written(request, settlement)
            return
        copy_settled(record, settlement)
        self._retain(record)
        self._tell_observers(RequestUpdate.of(record))

    async def follow(self, request_id: str) -> None:
        """Something happened to a request in another process (its NOTIFY arrived): wake the
        proposers here waiting on it; as its holder, apply the first proposal waiting; else
        take up the outcome another worker recorded. Observers were told by the worker that
        wrote it, so they are not told here (if that was this worker, its NOTIFY heard before
        its write returned, the write's caller tells them: `_apply_written`)."""
        for heard in self._listeners.pop(request_id, ()):
            if not heard.done():
                heard.set_result(None)
        request = self._active.get(request_id)
        store = self.store
        if request is None or request.status is not RequestStatus.PENDING or store is None:
            return
        if request._flags & HELD:
            if request._flags & CLAIMED:
                return  # being settled here: its write refuses every proposal
            proposals = await store.proposals(request_id)
            if proposals:
                first = proposals[0]
                self._settle(request, first.status, result=first.result, reason=first.reason,
                             by=first.by, proposal=first.proposal)  # fmt: skip
            if proposals is not None:
                return
        record = await store.get_request(request_id)
        if record is not None and record.status is not RequestStatus.PENDING:
            self._apply(request, record, tell=False)

    # -- the hold and the heartbeat -------------------------------------------------------------

    def _hold(self, request: PendingInput, *, held: bool) -> None:
        """Mark a pending request as held here (this worker decides it) or by another worker;
        the heartbeat runs while this worker holds any."""
        if held and not request._flags & HELD:
            self._holding += 1
            if self._beater is None:
                self._beater = asyncio.ensure_future(self._beat_forever())
        elif not held and request._flags & HELD:
            self._holding -= 1
        flags = request._flags & ~(HELD | FOREIGN)
        request._flags = flags | (HELD if held else FOREIGN)

    async def _take(self, request: PendingInput) -> None:
        """Hold a request loaded from the store, unless a live worker holds it."""
        assert self.store is not None
        if not await self._ensure_alive():
            return
        taken = await self.store.hold(request.id, self.worker_id)
        if taken and request.status is RequestStatus.PENDING and request._flags & FOREIGN:
            self._hold(request, held=True)

    def _release_memory(self, request: PendingInput) -> None:
        """Forget a request without settling it (a shutdown): its row stays pending, and unheld,
        for the worker that resumes the run."""
        self._deadlines.disarm(request)
        self._active.pop(request.id, None)
        if request._flags & HELD and self.store is not None:
            self._hold(request, held=False)
            self._spawn(self.store.unhold(request.id, self.worker_id))

    async def _ensure_alive(self) -> bool:
        """Make sure the other workers see this worker alive before it holds a request (beat
        now unless a recent beat covers it). False if the heartbeat could not be written."""
        if asyncio.get_running_loop().time() < self._alive_until - self.hold_seconds / 4:
            return True
        try:
            await self._beat()
        except StoreUnavailableError as err:
            self._failures.failed("the heartbeat", err)
            return False
        except Exception:
            log.warning("heartbeat of %s failed", self.worker_id, exc_info=True)
            return False
        return True

    async def _beat(self) -> None:
        store = self.store
        assert store is not None
        start = asyncio.get_running_loop().time()
        until = datetime.now(UTC) + timedelta(seconds=self.hold_seconds)
        held = await store.beat(self.worker_id, until)
        self._alive_until = max(self._alive_until, start + self.hold_seconds / 2)
        for request_id in held:  # requests held here with proposals waiting
            request = self._active.get(request_id)
            if request is not None and request._flags & HELD:
                self._spawn(self.follow(request_id))
            elif request is None or request.status is not RequestStatus.PENDING:
                # Held here, yet not decided here any more: give it back to the proposers.
                self._spawn(store.unhold(request_id, self.worker_id))

    async def _beat_forever(self) -> None:
        """Beat every `hold_seconds / 4` while this worker holds a pending request."""
        try:
            while True:
                await asyncio.sleep(self.hold_seconds / 4)
                if self._holding <= 0 or self.store is None:
                    return
                try:
                    await self._beat()
                    self._failures.recovered("the heartbeat")
                except StoreClosedError:
                    return
                except StoreUnavailableError as err:
                    self._failures.failed("the heartbeat", err)
                except Exception:
                    log.warning("heartbeat of %s failed", self.worker_id, exc_info=True)
        finally:
            self._beater = None


async def _with_retries(call: Callable[[], Awaitable[bool]], attempts: int = 5) -> bool | None:
    """A settle the database could not take is retried with backoff; None if it never did."""
    for attempt in range(attempts):
        try:
            return await call()
        except Exception:
            log.warning("settle attempt %d failed", attempt + 1, exc_info=True)
            await asyncio.sleep(0.05 * 2**attempt)
    return None
