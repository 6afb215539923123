"""Who webhooks may be sent to now, on this worker: attempts in flight per destination host and
per token, and each host's circuit.

Why: one sender serves every token. Without limits, a receiver that accepts connections and
never answers holds every slot for a whole timeout, and every other token's callback waits
behind it. So a host has at most `per_host` attempts in flight and a token `per_token`; a host
that failed `failures_to_open` times in a row has its circuit opened: its deliveries are
postponed (their rows' next_at moved, no attempt counted: nothing is lost) for `first_open`
seconds, doubling each time it opens again up to `max_open`; once that passes, one attempt at a
time probes it until one is delivered (closed again).

The state is this worker's (another worker learns of a bad host from its own attempts). The
choice among due rows (`Traffic.chooser`) runs in the store's thread, on a copy taken on the
event loop.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from bot.store.webhooks import Choose, WebhookDelivery


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of `Traffic` (see the module's docstring)."""

    per_host: int = 4
    per_token: int = 8
    failures_to_open: int = 5
    first_open: float = 30.0  # seconds
    max_open: float = 600.0


@dataclass(slots=True)
class Circuit:
    """A host's run of failures; open while `open_until` is ahead."""

    failures: int = 0  # in a row
    opened: int = 0  # times opened in a row
    open_until: datetime | None = None


def host_key(url: str) -> str:
    """What limits and circuits are kept by: the URL's host and port, as connected to."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{(parts.hostname or '?').lower()}:{port or (443 if parts.scheme == 'https' else 80)}"


class Traffic:
    """Attempts in flight and circuits of one sender (see the module's docstring)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._hosts: Counter[str] = Counter()
        self._tokens: Counter[str] = Counter()
        self._circuits: dict[str, Circuit] = {}

    def started(self, delivery: WebhookDelivery) -> None:
        self._hosts[host_key(delivery.url)] += 1
        self._tokens[delivery.requester] += 1

    def ended(self, delivery: WebhookDelivery) -> None:
        """An attempt is over (whatever came of it): its slots are free."""
        self._hosts[host_key(delivery.url)] -= 1
        self._tokens[delivery.requester] -= 1
        self._hosts, self._tokens = +self._hosts, +self._tokens  # zeros dropped

    def delivered(self, url: str) -> None:
        self._circuits.pop(host_key(url), None)

    def failed(self, url: str, now: datetime) -> datetime | None:
        """A failure of the host's (a status, a timeout, a refused connection); when its
        circuit reopens if this opened it (or it was open), else None."""
        circuit = self._circuits.setdefault(host_key(url), Circuit())
        circuit.failures += 1
        if circuit.failures >= self.limits.failures_to_open and not self._open(circuit, now):
            seconds = self.limits.first_open * 2 ** min(circuit.opened, 32)
            circuit.open_until = now + timedelta(seconds=min(seconds, self.limits.max_open))
            circuit.opened += 1
        return circuit.open_until if self._open(circuit, now) else None

    def open_until(self, url: str, now: datetime) -> datetime | None:
        """When the host's circuit closes to a probe, if it is open now."""
        circuit = self._circuits.get(host_key(url))
        return circuit.open_until if circuit is not None and self._open(circuit, now) else None

    def full_tokens(self) -> frozenset[str]:
        """The tokens with `per_token` attempts in flight: none of their rows is claimable."""
        return frozenset(t for t, n in self._tokens.items() if n >= self.limits.per_token)

    def chooser(self, room: int, now: datetime, give_up_after: float) -> Choose:
        """The choice among due rows (earliest first) of at most `room` to claim, none over a
        host's or a token's limit, and the postponing of the rows of hosts whose circuit is
        open (until it closes, or the row's last try, `give_up_after` after its first: that
        one is sent); on a copy of the state now (it runs in the store's thread)."""
        hosts, tokens = Counter(self._hosts), Counter(self._tokens)
        opened = {h: c.open_until for h, c in self._circuits.items() if self._open(c, now)}
        probing = {
            h for h, c in self._circuits.items() if c.failures >= self.limits.failures_to_open
        }
        per_host, per_token = self.limits.per_host, self.limits.per_token
        lifetime = timedelta(seconds=give_up_after)

        def choose(due: list[WebhookDelivery]) -> tuple[list[WebhookDelivery], dict[str, datetime]]:
            chosen: list[WebhookDelivery] = []
            postponed: dict[str, datetime] = {}
            for delivery in due:
                host = host_key(delivery.url)
                until = opened.get(host)
                last = delivery.first_at + lifetime if delivery.attempts else until
                if until is not None and last is not None and now < last:
                    postponed[delivery.id] = min(until, last)
                    continue
                cap = 1 if host in probing else per_host
                if (
                    len(chosen) >= room
                    or hosts[host] >= cap
                    or tokens[delivery.requester] >= per_token
                ):
                    continue
                hosts[host] += 1
                tokens[delivery.requester] += 1
                chosen.append(delivery)
            return chosen, postponed

        return choose

    @staticmethod
    def _open(circuit: Circuit, now: datetime) -> bool:
        return circuit.open_until is not None and now < circuit.open_until
