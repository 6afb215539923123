"""Who may answer a request: its actor, configured approvers and admins."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AnswerPolicy:
    """Checked at click time, against the user the platform authenticated."""

    admins: frozenset[str] = frozenset()
    approvers: frozenset[str] = frozenset()

    def may_answer(self, user_id: str, actor_id: str | None) -> bool:
        """A request without an actor is anyone's in its conversation; otherwise the actor's."""
        if actor_id is None or user_id == actor_id:
            return True
        return user_id in self.approvers or user_id in self.admins

    def is_admin(self, user_id: str, aliases: tuple[str, ...] = ()) -> bool:
        """Whether this person (by any of their ids) is one of HITL_ADMINS."""
        return any(user in self.admins for user in (user_id, *aliases))
