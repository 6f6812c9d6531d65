"""Ladder bots that play people: a person's table (``CreateTable`` with ``ladder_bots``) may
seat a connected ladder bot whose account plays people (its author's opt-in, schema 7).

The bot plays such a match in one of its own match slots, lent by its ladder: the slot is
taken out of the ladder's waiting list (:meth:`LadderRuntime.reserve`, as the shared
scheduler holds a slot for an assigned match), so its ladder neither pairs it there meanwhile
nor counts the match; once the table's match starts, the slot is the match's (the session's
running links count it), and when it ends the bot waits on its ladder again as after any
match. A table that never starts gives the slot back. A bot is lent only from a free slot:
a person never takes a bot out of a match, and a bot with ``max_matches`` 1 plays a person
only when it is idle. The match is a table match: no ladder, no rating, no meeting cap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kozel.server import errors
from kozel.server.ladder_runtime import LadderRuntime
from kozel.server.session import RemoteLink, Session

MAX_SEATS = 4  # ladder_bots entries a table request may hold (the most players a table has)


@dataclass(slots=True)
class Loan:
    """One match slot of a connected ladder bot, lent to a person's table."""

    ladder: LadderRuntime
    session: Session
    link: RemoteLink
    settled: bool = False

    def started(self) -> None:
        """The table's match started: the slot is the match's now."""
        if not self.settled:
            self.settled = True
            self.ladder.unreserve(self.session)

    def give_back(self) -> None:
        """The table will not be played: the slot waits on the ladder again."""
        if not self.settled:
            self.settled = True
            self.ladder.unreserve(self.session)
            self.ladder.join(self.session)


def ladder_sessions(
    sessions: Iterable[Session], ladders: Mapping[str, LadderRuntime]
) -> list[Session]:
    """The sessions of ladder bots connected now (a stream, not leaving)."""
    return [
        s
        for s in sessions
        if s.bot is not None
        and s.ladder in ladders
        and s.stream is not None
        and not s.stream.closed
        and not s.leaving
    ]


def is_free(session: Session, ladder: LadderRuntime) -> bool:
    """Whether ``session`` has a match slot waiting on its ladder (not paused or retired)."""
    return (
        session in ladder.waiting
        and session.free_slots > 0
        and session.bot.id not in ladder.excluded
    )


def lend(name: str, sessions: Iterable[Session], ladders: Mapping[str, LadderRuntime]) -> Loan:
    """A free match slot of the connected ladder bot ``name`` (:class:`errors.Conflict` when it
    is not connected here or all its slots are busy)."""
    mine = [s for s in ladder_sessions(sessions, ladders) if s.bot.name == name]
    if not mine:
        raise errors.Conflict(
            f"bot {name!r} is not connected to a ladder of this referee: "
            "a person can play it only while it is"
        )
    for session in mine:
        ladder = ladders[str(session.ladder)]
        if is_free(session, ladder):
            ladder.reserve(session)
            link = session.new_link()
            link.name = session.bot.name
            return Loan(ladder, session, link)
    raise errors.Conflict(
        f"bot {name!r} is busy: every match slot it has is playing; try again when one ends"
    )


def opponents(
    sessions: Iterable[Session], ladders: Mapping[str, LadderRuntime], playing: set[str]
) -> dict[str, tuple[str, bool]]:
    """The connected ladder bots of ``playing`` (the names whose accounts play people): by
    name, the ladder and whether a slot is free now."""
    found: dict[str, tuple[str, bool]] = {}
    for s in ladder_sessions(sessions, ladders):
        if s.bot.name in playing:
            ladder = str(s.ladder)
            free = is_free(s, ladders[ladder]) or found.get(s.bot.name, ("", False))[1]
            found[s.bot.name] = (ladder, free)
    return found
