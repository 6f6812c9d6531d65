"""Ladder bots that play people: a person's table (``CreateTable`` with ``ladder_bots``) may
seat a connected ladder bot whose account plays people (its author's opt-in, schema 7).

The bot plays such a match in one of its own match slots, lent by its ladder: the slot is
taken out of the ladder's waiting list (:meth:`LadderRuntime.reserve`, as the shared
scheduler holds a slot for an assigned match), so its ladder neither pairs it there meanwhile
nor counts the match; once the table's match starts, the slot is the match's (the session's
running links count it), and when it ends the bot waits on its ladder again as after any
match. A person never takes a bot out of a match: a bot whose slots all play is lent its
next free one, before its ladder pairs it again (the table waits up to ``people_wait_s``;
at most ``max_people_waiting_per_bot`` tables wait for one bot). A table that never starts
gives the slot back. The match is a table match: no ladder, no rating, no meeting cap.
A bot plays people only the game of its ladder (its ruleset and player count; the number of
deals may differ): what its author built and tested it for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from kozel.engine.rules import Ruleset
from kozel.server import errors
from kozel.server.ladder_runtime import LadderRuntime
from kozel.server.session import RemoteLink, Session

MAX_SEATS = 4  # ladder_bots entries a table request may hold (the most players a table has)


@dataclass(slots=True, eq=False)
class Loan:
    """One match slot of a connected ladder bot, lent to a person's table: granted at once
    (``link`` set) or when the bot's next slot frees up (``on_ready`` is then called)."""

    name: str
    lender: Lender
    ladder: LadderRuntime | None = None
    session: Session | None = None
    link: RemoteLink | None = None
    on_ready: Callable[[Loan], None] = field(default=lambda _: None)
    settled: bool = False

    def grant(self, ladder: LadderRuntime, session: Session) -> None:
        """Take one free slot of ``session`` on ``ladder``."""
        ladder.reserve(session)
        self.ladder, self.session = ladder, session
        self.link = session.new_link()
        self.link.name = self.name
        self.on_ready(self)

    def started(self) -> None:
        """The table's match started: the slot is the match's now."""
        if not self.settled and self.ladder is not None and self.session is not None:
            self.settled = True
            self.ladder.unreserve(self.session)

    def give_back(self) -> None:
        """The table will not be played: the slot waits on the ladder again (or the table
        stops waiting for one)."""
        if self.settled:
            return
        self.settled = True
        if self.ladder is None or self.session is None:
            self.lender.cancel(self)
            return
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


class Lender:
    """The loans of one referee's ladders, and the tables waiting for a busy bot."""

    def __init__(self, ladders: Mapping[str, LadderRuntime], max_waiting: int) -> None:
        self.ladders = ladders
        self.max_waiting = max_waiting
        self.waiting: dict[str, list[Loan]] = {}  # by bot name, oldest first

    def lend(self, name: str, sessions: Iterable[Session], rules: Ruleset, players: int) -> Loan:
        """A slot of the connected ladder bot ``name`` for a table of ``rules`` and
        ``players``: a free one now, else its next (:class:`errors.Conflict` when it is not
        connected here or plays another game, :class:`errors.Exhausted` when too many tables
        wait for it already)."""
        connected = [s for s in ladder_sessions(sessions, self.ladders) if s.bot.name == name]
        if not connected:
            raise errors.Conflict(
                f"bot {name!r} is not connected to a ladder of this referee: "
                "a person can play it only while it is"
            )
        mine = [s for s in connected if plays(self.ladders[str(s.ladder)], rules, players)]
        if not mine:
            spec = self.ladders[str(connected[0].ladder)].spec
            raise errors.Conflict(
                f"bot {name!r} plays {spec.players}-player {spec.ruleset.preset!r} matches "
                f"(ladder {spec.name!r}): a table for it has that ruleset and player count"
            )
        loan = Loan(name, self)
        for session in mine:
            ladder = self.ladders[str(session.ladder)]
            if is_free(session, ladder):
                loan.grant(ladder, session)
                return loan
        queue = self.waiting.setdefault(name, [])
        if len(queue) >= self.max_waiting:
            raise errors.Exhausted(
                f"{len(queue)} tables wait for bot {name!r} already "
                "(limits.max_people_waiting_per_bot); try again later"
            )
        queue.append(loan)
        return loan

    def offer(self, session: Session) -> None:
        """``session`` waits on its ladder again: the tables waiting for its bot take its
        free slots first (the ladder's hook, called before it pairs the bot)."""
        queue = self.waiting.get(session.bot.name) if session.bot is not None else None
        ladder = self.ladders.get(str(session.ladder))
        while queue and ladder is not None and is_free(session, ladder):
            queue.pop(0).grant(ladder, session)
        if queue is not None and not queue:
            del self.waiting[session.bot.name]

    def cancel(self, loan: Loan) -> None:
        """A waiting table closed: it no longer waits for its bot."""
        queue = self.waiting.get(loan.name, [])
        if loan in queue:
            queue.remove(loan)
        if not queue:
            self.waiting.pop(loan.name, None)

    def pending(self, name: str) -> int:
        """Tables waiting for bot ``name``."""
        return len(self.waiting.get(name, ()))


def plays(ladder: LadderRuntime, rules: Ruleset, players: int) -> bool:
    """Whether a table of ``rules`` and ``players`` plays the game of ``ladder`` (any number
    of deals)."""
    spec_rules = ladder.rules
    return ladder.spec.players == players and (
        replace(rules, fixed_deals=spec_rules.fixed_deals) == spec_rules
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
