"""Named tables: created on request (with house bots at some seats), joined by remote bots in
order, started when full, kept a while after for ``WaitTable``, closed if they never fill."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from kozel.core.clock import Clock
from kozel.engine.rules import Ruleset
from kozel.engine.shuffle import new_seed
from kozel.server import errors
from kozel.server.config import ServerConfig
from kozel.server.house import HouseBots
from kozel.server.people import Loan
from kozel.server.runner import FinishedMatch, MatchRunner
from kozel.server.running import MatchStart, OnDone
from kozel.server.seats import LocalLink, SeatLink
from kozel.server.session import RemoteLink, Session


@dataclass(slots=True)
class Table:
    """A named table: house bots sit at their seats, remote bots fill the others in join
    order; the match starts when all are taken."""

    id: str
    rules: Ruleset
    players: int
    clock: Clock
    seed: bytes
    links: list[RemoteLink] = field(default_factory=list)  # remote seats, in join order
    house_at: dict[int, SeatLink] = field(default_factory=dict)  # in-process bots by seat
    runner: MatchRunner | None = None
    done: asyncio.Future[FinishedMatch] | None = None
    owner: str = ""  # the address that created it (tables per address are capped)
    loans: list[Loan] = field(default_factory=list)  # ladder bots' slots (kozel.server.people)

    @property
    def house(self) -> bool:
        """Whether house bots sit at it (then its match needs admission, like queue ones)."""
        return bool(self.house_at)

    @property
    def joined(self) -> bool:
        """Whether a remote bot has taken a seat."""
        return bool(self.links)  # remote seats only: house bots are in house_at

    @property
    def full(self) -> bool:
        return len(self.links) + len(self.house_at) >= self.players

    @property
    def open(self) -> bool:
        """Not yet played to its end (counted against the table limits)."""
        return self.done is None or not self.done.done()

    def seat_links(self) -> list[SeatLink]:
        """Every seat's link, house bots at their seats and remote bots in join order."""
        remote = iter(self.links)
        return [
            self.house_at[s] if s in self.house_at else next(remote) for s in range(self.players)
        ]


@dataclass(frozen=True, slots=True)
class TableRequest:
    """A table to open (``CreateTable``)."""

    table_id: str  # "" for a new id
    rules: Ruleset
    players: int
    clock: Clock
    seed: bytes | None = None
    house: tuple[str, ...] = ()  # by seat; "" leaves a seat to a remote bot
    owner: str = ""
    ladder_bots: tuple[str, ...] = ()  # by seat: connected ladder bots that play people


Starter = Callable[[MatchStart, OnDone | None, bool], MatchRunner]
LendSlot = Callable[[str], Loan]  # a free match slot of the connected ladder bot so named


class Tables:
    """The open tables of one referee. A full table with house bots waits for ``admits`` (one
    client alone can fill it); ``start(start, on_done, budget)`` runs a match."""

    def __init__(
        self,
        config: ServerConfig,
        house_bots: HouseBots,
        start: Starter,
        admits: Callable[[], bool],
    ) -> None:
        self.config = config
        self.house_bots = house_bots
        self.by_id: dict[str, Table] = {}
        self.waiting: deque[Table] = deque()  # full tables with house bots, not admitted
        self._start = start
        self._admits = admits

    def __contains__(self, table_id: object) -> bool:
        return table_id in self.by_id

    def get(self, table_id: str) -> Table | None:
        return self.by_id.get(table_id)

    def create(self, req: TableRequest, lend: LendSlot | None = None) -> Table:
        """Open a table (raises :class:`errors.Refused` saying why not); ``lend`` seats the
        request's ladder bots."""
        self._check(req)
        table_id = req.table_id or uuid.uuid4().hex[:10]
        if table_id in self.by_id:
            raise errors.AlreadyExists(f"table {table_id!r} exists")
        table = Table(
            table_id, req.rules, req.players, req.clock, req.seed or new_seed(), owner=req.owner
        )
        table.loans = _borrow(req.ladder_bots, lend)
        loop = asyncio.get_running_loop()
        table.done = loop.create_future()
        self.by_id[table_id] = table
        for i, name in enumerate(req.house):
            if name:
                table.house_at[i] = LocalLink(f"{name}-{i}", self.house_bots[name]())
        seats = (i for i, name in enumerate(req.ladder_bots) if name)
        for i, loan in zip(seats, table.loans):
            if loan.link is not None:
                table.house_at[i] = loan.link
            else:  # a busy bot: seated when its next slot frees up
                loan.on_ready = functools.partial(self._seat_loan, table, i)
        if any(loan.link is None for loan in table.loans):
            loop.call_later(self.config.people_wait_s, self._expire_waiting, table)
        self.start_if_full(table)
        loop.call_later(self.config.table_linger_s, self._expire, table)
        if len(table.house_at) < req.players:  # nobody may come: an empty table goes sooner
            loop.call_later(self.config.empty_table_linger_s, self._expire, table, True)
        return table

    def _seat_loan(self, table: Table, seat: int, loan: Loan) -> None:
        """A busy ladder bot's slot freed up: it takes its seat (the match may start)."""
        if self.by_id.get(table.id) is not table or table.runner is not None or not loan.link:
            loan.give_back()
            return
        table.house_at[seat] = loan.link
        self.start_if_full(table)

    def _expire_waiting(self, table: Table) -> None:
        """A table still waiting for a busy ladder bot after ``people_wait_s`` closes."""
        late = [loan.name for loan in table.loans if loan.link is None]
        if late:
            self._expire(
                table,
                why=f"bot {late[0]!r} had no free match slot within "
                f"{self.config.people_wait_s:g} s (limits.people_wait_s)",
            )

    def _check(self, req: TableRequest) -> None:
        config = self.config
        open_tables = [t for t in self.by_id.values() if t.open]
        if len(open_tables) >= config.max_tables:
            raise errors.Exhausted(f"the referee already has {config.max_tables} open tables")
        cap = config.max_tables_per_peer
        if req.owner and sum(1 for t in open_tables if t.owner == req.owner) >= cap:
            raise errors.Exhausted(
                f"your address already has {cap} open tables "
                "(limits.max_tables_per_peer); play or let them expire first"
            )
        if req.seed is not None and len(req.seed) != 32:
            raise errors.Invalid("a seed is exactly 32 bytes")
        unknown = [h for h in req.house if h and h not in self.house_bots]
        if unknown or len(req.house) > req.players:
            raise errors.Invalid(
                f"house bots must be at most {req.players} of "
                f'{sorted(self.house_bots)} ("" for a remote seat); '
                f"got {list(req.house)}"
            )
        check_ladder_bots(req)

    def join(self, table_id: str, session: Session) -> None:
        table = self.by_id.get(table_id)
        if table is None:
            raise errors.NotFound(f"no table {table_id!r}")
        if table.runner is not None or table.full:
            raise errors.Conflict(f"table {table_id!r} is full")
        table.links.append(session.new_link())
        self.start_if_full(table)

    def forget(self, session: Session) -> None:
        """Free the seats ``session`` took at tables not yet started."""
        for table in self.by_id.values():
            if table.runner is None:
                table.links = [link for link in table.links if link.session is not session]

    def start_if_full(self, table: Table) -> None:
        if not table.full or table.runner is not None:
            return
        if table.house and not self._admits():
            # One client alone can fill a table with house bots: such matches wait for
            # admission like queue matches (its remote bots wait too; no clock runs).
            if table not in self.waiting:
                self.waiting.append(table)
            return
        start = MatchStart(
            table.seat_links(), table.rules, table.players, table.clock, table.seed, table.id
        )
        table.runner = self._start(start, lambda _: self._done(table), table.house)
        for loan in table.loans:
            loan.started()

    def start_waiting(self) -> None:
        """Start full tables with house bots while admission allows."""
        while self.waiting and self._admits():
            self.start_if_full(self.waiting.popleft())

    def _done(self, table: Table) -> None:
        _settle(table)
        # Keep a finished table for WaitTable a while, then free its place.
        asyncio.get_running_loop().call_later(
            self.config.table_linger_s, self.by_id.pop, table.id, None
        )

    def _expire(self, table: Table, if_empty: bool = False, why: str = "") -> None:
        """A table that never filled (or, ``if_empty``, that no remote bot joined) is closed;
        its waiting bots are told why (``why``, or that it did not fill in time)."""
        if table.runner is not None or self.by_id.get(table.id) is not table:
            return
        if if_empty and table.joined:
            return
        del self.by_id[table.id]
        if table in self.waiting:
            self.waiting.remove(table)
        for loan in table.loans:
            loan.give_back()
        for link in table.links:
            if (stream := link.session.stream) is not None:
                linger = self.config.table_linger_s
                stream.close(
                    errors.Expired(why or f"table {table.id!r} did not fill within {linger:g} s")
                )
        if table.done is not None and not table.done.done():
            table.done.set_exception(errors.Expired(f"table {table.id!r} never filled"))
            table.done.exception()  # retrieved: nobody may be waiting

    async def wait(self, table_id: str) -> FinishedMatch:
        table = self.by_id.get(table_id)
        if table is None or table.done is None:
            raise errors.NotFound(f"no table {table_id!r}")
        return await asyncio.shield(table.done)


def check_ladder_bots(req: TableRequest) -> None:
    """Ladder bots sit at seats no house bot takes, and leave one for a remote player (they
    are lent to play people, not each other)."""
    bots = req.ladder_bots
    if not any(bots):
        return
    house = req.house + ("",) * (req.players - len(req.house))
    if len(bots) > req.players or any(b and h for b, h in zip(bots, house)):
        raise errors.Invalid(
            f"ladder bots are by seat, at most {req.players}, at seats without a house bot; "
            f"got {list(bots)}"
        )
    taken = sum(1 for b, h in zip(bots + ("",) * req.players, house) if b or h)
    if taken >= req.players:
        raise errors.Invalid("a table with ladder bots keeps a seat for a remote player")
    if len({b for b in bots if b}) < sum(1 for b in bots if b):
        raise errors.Invalid("a ladder bot sits at one seat of a table")


def _borrow(names: tuple[str, ...], lend: LendSlot | None) -> list[Loan]:
    """A slot of each named ladder bot, or none at all (those lent are given back)."""
    loans: list[Loan] = []
    if not any(names):
        return loans
    if lend is None:
        raise errors.Invalid("this referee seats no ladder bots at tables")
    try:
        for name in names:
            if name:
                loans.append(lend(name))  # noqa: PERF401 - the lent so far are given back
    except BaseException:
        for loan in loans:
            loan.give_back()
        raise
    return loans


def _settle(table: Table) -> None:
    fut = table.done
    if fut is None or fut.done():
        return
    outcome = table.runner.outcome if table.runner else None
    if outcome is not None:  # finished, or aborted with its replay written
        fut.set_result(outcome)
    else:
        fut.set_exception(errors.Aborted("the match ended without a result"))
        fut.exception()  # retrieved: nobody may be waiting
