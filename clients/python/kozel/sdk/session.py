"""The client's side of the Play protocol as a sans-I/O state machine (the h11 way): what to
send on a new stream, what each message from the referee means, and what to do when a stream
ends (resume, follow a redirect, fall back to the first address, start a new session, wait or
give up). It sends and reads nothing and keeps no time: :mod:`kozel.sdk.client` drives it over
gRPC, tests drive it with a scripted transport.

Its answers are small effect values the driver carries out (:class:`Send`, :class:`Deliver`,
:class:`Lost`, :class:`Cancel`) and, at the end of a stream, one :class:`Next` step.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kozel.v1 import game_pb2, referee_pb2

PROTOCOL_VERSION = 1
CLIENT_NAME = "kozel-python-sdk/0.1"
REDIRECT_GRACE_S = 3.0  # how long a redirected address is retried before the first one again
BACKOFF_START_S = 0.05
BACKOFF_MAX_S = 2.0
ADRIFT_BACKOFF_MAX_S = 5.0  # between tries while no referee answers after losing one
ANSWERS_KEPT = 8  # answers remembered per match, to answer resent requests again
# gRPC status names after which the session may still be resumed: the network dropped
# (UNAVAILABLE, or INTERNAL/UNKNOWN when a send races with the stream dying), or the referee cut
# a stream that read too slowly. If the session is gone, the resume is refused with NOT_FOUND.
RESUMABLE = frozenset({"UNAVAILABLE", "INTERNAL", "UNKNOWN", "RESOURCE_EXHAUSTED"})

Message = Any  # one of the referee_pb2 messages inside a PlayResponse


@dataclass(frozen=True, slots=True)
class Options:
    """What a bot asks of the referee, and how hard it tries to stay connected."""

    name: str
    join_table: str | None = None
    join_queue: tuple[str | game_pb2.Ruleset, int] | None = None
    join_ladder: str | None = None
    token: str = ""
    max_matches: int = 1  # matches at once on the stream
    matches: int | None = None  # Leave once this many started or done; return after them
    reconnect: bool = True
    grace_s: float = 10.0  # resume a dropped stream for this long
    redirect_grace_s: float = REDIRECT_GRACE_S
    skip_events: bool = False

    def __post_init__(self) -> None:
        joins = (self.join_table, self.join_queue, self.join_ladder)
        if sum(x is not None for x in joins) != 1:
            raise ValueError("give exactly one of join_table, join_queue and join_ladder")


class Ended(Enum):
    """How one stream ended."""

    CLOSED = "closed"  # the referee ended it cleanly
    DROPPED = "dropped"  # it broke (an RPC error), or this client cancelled it
    REDIRECTED = "redirected"  # the referee sent a Redirect


# -- effects: what the driver does for the session ---------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    """Write this request on the current stream."""

    request: referee_pb2.PlayRequest


@dataclass(frozen=True, slots=True)
class Deliver:
    """Hand ``msg`` (of oneof ``which``) to the bot of ``match_id``, in order; ``new``: the
    match has just begun here (make its bot first)."""

    match_id: str
    which: str
    msg: Message
    new: bool = False


@dataclass(frozen=True, slots=True)
class Lost:
    """The match is over for this client without a MatchEnd: stop its bot."""

    match_id: str
    why: str


@dataclass(frozen=True, slots=True)
class Cancel:
    """End the current stream from this side."""

    why: str


Effect = Send | Deliver | Lost | Cancel


@dataclass(frozen=True, slots=True)
class Next:
    """What to do once a stream has ended: ``done`` (return the results), ``fail`` (give up,
    saying why), else open a new stream after ``wait`` seconds (on a new channel when
    ``reopen``: the address changed)."""

    done: bool = False
    fail: str = ""
    wait: float = 0.0
    reopen: bool = False
    effects: tuple[Effect, ...] = ()


@dataclass
class MatchState:
    """What the session knows of one running match."""

    match_id: str
    deal_index: int = -1  # the last DealStart delivered
    start: referee_pb2.MatchStart | None = None
    request: referee_pb2.DecisionRequest | None = None  # the latest request
    asked: set[int] = field(default_factory=set)  # request ids handed to the bot
    answers: dict[int, referee_pb2.ActionReply] = field(default_factory=dict)
    refused: dict[int, list[referee_pb2.ActionReply]] = field(default_factory=dict)


class Session:
    """One bot's session with the referee, across streams (see the module docstring)."""

    def __init__(
        self,
        options: Options,
        address: str,
        rng: random.Random | None = None,
        on_result: Callable[[str, referee_pb2.MatchEnd, str], None] = lambda *a: None,
    ) -> None:
        self.options = options
        self.first_address = address  # kept through redirects, to fall back to
        self.address = address
        self.ticket = ""  # Redirect.ticket, sent in the next Hello until a Welcome
        self.resume_token = ""
        self.rng = rng or random.Random()
        self._on_result = on_result  # (match id, MatchEnd, verdict) as each match ends
        # A table holds one match, so a table bot stops after it unless told otherwise.
        table = options.join_table is not None
        self.target = options.matches if options.matches is not None else (1 if table else None)
        self.matches: dict[str, MatchState] = {}  # running matches
        self.done_ids: set[str] = set()  # ended or lost matches (late duplicates are ignored)
        self.results: list[referee_pb2.MatchEnd] = []
        self.lost = 0  # matches given up without a MatchEnd
        self.leave_sent = False
        self.redirect: referee_pb2.Redirect | None = None
        self.welcomed = False  # a Welcome arrived on the current stream
        self.ever_welcomed = False
        self.adrift = False  # the referee was lost: retried without end, fresh sessions
        self.resuming = False  # the current stream's Hello carried a resume token
        self.progress = False  # a match message arrived on the current stream
        self.unconfirmed: set[str] = set()  # running matches not announced after a resume
        self.redirects = self.fallbacks = self.restarts = self.drops = 0  # for logs and tests
        self.restart_why = ""  # why the last new session began
        self._down_since: float | None = None
        self._delay = BACKOFF_START_S

    # -- a stream ------------------------------------------------------------------------------

    def open(self) -> list[Effect]:
        """A new stream starts: the Hello (and Leave again, if it was sent)."""
        self.resuming = bool(self.resume_token)
        self.progress = self.welcomed = False
        out: list[Effect] = [Send(referee_pb2.PlayRequest(hello=self.hello()))]
        if self.leave_sent:
            out.append(Send(referee_pb2.PlayRequest(leave=referee_pb2.Leave())))
        return out

    def hello(self) -> referee_pb2.Hello:
        o = self.options
        hello = referee_pb2.Hello(
            protocol_version=PROTOCOL_VERSION,
            bot_name=o.name,
            token=o.token,
            resume_token=self.resume_token,
            redirect_ticket="" if self.resume_token else self.ticket,
            max_matches=o.max_matches,
            client=CLIENT_NAME,
            skip_events=o.skip_events,
        )
        if o.join_table is not None:
            hello.join_table.table_id = o.join_table
        elif o.join_ladder is not None:
            hello.join_ladder.ladder = o.join_ladder
        else:
            assert o.join_queue is not None
            ruleset, players = o.join_queue
            if isinstance(ruleset, str):
                ruleset = game_pb2.Ruleset(preset=ruleset)
            hello.join_queue.ruleset.CopyFrom(ruleset)
            hello.join_queue.players = players
        return hello

    def receive(self, response: referee_pb2.PlayResponse) -> list[Effect]:
        """A message from the referee."""
        which = response.WhichOneof("message")
        if which is None:
            return []  # empty, or a kind this client does not know
        msg = getattr(response, which)
        if which == "redirect":
            self.redirect = msg
            return [Cancel("following a Redirect")]
        out = self._welcome(msg) if which == "welcome" else self._route(which, msg)
        if self.finished:
            out += self.leave()
        return out

    def leave(self) -> list[Effect]:
        """No new match after the running ones (sent once per session)."""
        if self.leave_sent:
            return []
        self.leave_sent = True
        return [Send(referee_pb2.PlayRequest(leave=referee_pb2.Leave()))]

    def stop(self) -> list[Effect]:
        """Asked to stop: no new match; the running ones finish. On a live stream Leave is
        sent even with none running, and the referee closes the stream: a match it started
        meanwhile (its MatchStart on the way) is played, not abandoned to a forfeit."""
        self.target = len(self.results) + self.lost + len(self.matches)
        if self.matches or self.welcomed:
            return self.leave()
        return [Cancel("asked to stop with no match running")]

    @property
    def finished(self) -> bool:
        """All wanted matches have ended and none is running."""
        return (
            self.target is not None
            and len(self.results) + self.lost >= self.target
            and not self.matches
        )

    @property
    def redirected(self) -> bool:
        """The current address came from a Redirect."""
        return self.address != self.first_address or bool(self.ticket)

    # -- answers -------------------------------------------------------------------------------

    def current(self, match_id: str, request_id: int) -> bool:
        """Whether ``request_id`` is still the match's request to answer."""
        m = self.matches.get(match_id)
        return m is not None and (m.request is None or m.request.request_id == request_id)

    def refused_answers(self, match_id: str, request_id: int) -> list[referee_pb2.ActionReply]:
        m = self.matches.get(match_id)
        return list(m.refused.get(request_id, ())) if m is not None else []

    def answered(self, reply: referee_pb2.ActionReply) -> list[Effect]:
        """The bot answered: remember it (a resent request gets it again) and send it, unless
        the match ended or moved on meanwhile."""
        m = self.matches.get(reply.match_id)
        if m is None:
            return []
        m.answers[reply.request_id] = reply
        while len(m.answers) > ANSWERS_KEPT:
            del m.answers[next(iter(m.answers))]
        if m.request is not None and m.request.request_id != reply.request_id:
            return []
        return [Send(referee_pb2.PlayRequest(action=reply))]

    def rejected(self, rej: referee_pb2.Rejection) -> referee_pb2.DecisionRequest | None:
        """A refused answer: the request to decide again, or None when no retry is allowed
        (the refused answer is kept, so a repeat of it can be told apart)."""
        m = self.matches.get(rej.match_id)
        request = m.request if m is not None else None
        if (
            m is None
            or request is None
            or not rej.retry_allowed
            or rej.code == game_pb2.ERROR_CODE_UNKNOWN_REQUEST
            or request.request_id != rej.request_id
        ):
            return None
        previous = m.answers.pop(rej.request_id, None)
        if previous is not None:
            m.refused.setdefault(rej.request_id, []).append(previous)
        return request

    # -- routing -------------------------------------------------------------------------------

    def _welcome(self, msg: referee_pb2.Welcome) -> list[Effect]:
        self.welcomed = self.ever_welcomed = True
        self.adrift = False
        out: list[Effect] = []
        if self.resuming and not msg.resumed:
            out += [self._lose(m, "the referee did not resume the session") for m in self._all()]
        self.unconfirmed = set(self.matches) if msg.resumed else set()
        self.resume_token = msg.resume_token
        self.ticket = ""  # used: a later drop here resumes with the resume token
        return out

    def _route(self, which: str, msg: Message) -> list[Effect]:
        match_id = msg.match_id
        self.progress = True
        self.unconfirmed.discard(match_id)
        if match_id in self.done_ids:
            return []  # late duplicates of an ended match
        m = self.matches.get(match_id)
        if which == "match_start":
            return [] if m is not None else self._begin(msg)
        new = m is None
        if m is None:
            if which == "match_end":  # for a match it never saw begin
                self.results.append(msg)
                return []
            m = self.matches[match_id] = MatchState(match_id)
        if which == "deal_start":
            if msg.deal_index <= m.deal_index:
                return []  # resent after a resume
            m.deal_index = msg.deal_index
        elif which == "decision":
            return self._decision(m, msg, new)
        elif which == "match_end":
            self._end(m, msg)
        return [Deliver(match_id, which, msg, new)]

    def _begin(self, msg: referee_pb2.MatchStart) -> list[Effect]:
        m = self.matches[msg.match_id] = MatchState(msg.match_id, start=msg)
        out: list[Effect] = [Deliver(m.match_id, "match_start", msg, new=True)]
        if self.target is not None and self._counted() >= self.target:
            out += self.leave()
        return out

    def _decision(self, m: MatchState, msg: referee_pb2.DecisionRequest, new: bool) -> list[Effect]:
        rid = msg.request_id
        m.request = msg
        if rid in m.answers:  # resent: the same answer again
            return [Send(referee_pb2.PlayRequest(action=m.answers[rid]))]
        if rid in m.asked:
            return []  # the bot is on it; the answer goes out when ready
        m.asked.add(rid)
        return [Deliver(m.match_id, "decision", msg, new)]

    def _end(self, m: MatchState, msg: referee_pb2.MatchEnd) -> None:
        del self.matches[m.match_id]
        self.done_ids.add(m.match_id)
        self.results.append(msg)
        self._on_result(m.match_id, msg, verdict(m.start, msg.result))

    def _counted(self) -> int:
        return len(self.results) + self.lost + len(self.matches)

    def _all(self) -> list[MatchState]:
        return list(self.matches.values())

    def _lose(self, m: MatchState, why: str) -> Lost:
        del self.matches[m.match_id]
        self.done_ids.add(m.match_id)
        self.lost += 1
        return Lost(m.match_id, why)

    # -- the end of a stream -------------------------------------------------------------------

    def may_retry(self, code: str) -> bool:
        """Whether a stream that failed with status ``code`` is worth another one."""
        return self.options.reconnect and (
            code in RESUMABLE or self.redirected or self._resume_refused(code)
        )

    def _resume_refused(self, code: str) -> bool:
        """The referee does not know the session we tried to resume: it ended there (its
        referee restarted), or a shared address sent the Hello to another referee."""
        return self.resuming and code == "NOT_FOUND"

    def ended(self, how: Ended, now: float, code: str = "", details: str = "") -> Next:
        """A stream ended (``code``: its gRPC status name, "" when it closed cleanly or this
        side cancelled it): what next."""
        effects: list[Effect] = []
        if how is Ended.CLOSED:  # matches not announced again after a resume are over
            effects += [
                self._lose(self.matches[i], "not resumed by the referee")
                for i in sorted(self.unconfirmed & set(self.matches))
            ]
        if self.finished:
            return Next(done=True, effects=tuple(effects))
        moved = self._move(how, code, details)
        if moved is not None:
            return Next(reopen=True, effects=tuple(effects) + moved)
        if how is Ended.CLOSED and self.target is None and not self.matches:
            return Next(done=True, effects=tuple(effects))  # the referee is done with us
        if not self.options.reconnect:
            return Next(done=True, effects=tuple(effects))
        step = self._wait(how, now, code, details)
        return Next(step.done, step.fail, step.wait, step.reopen, tuple(effects) + step.effects)

    def _move(self, how: Ended, code: str, details: str) -> tuple[Effect, ...] | None:
        """A Redirect followed, a fall-back or a new session (the address or the session
        changes), else None."""
        why = f"{code} {details!r}" if code else "it closed"
        fall_back = self.redirected and (
            (code != "" and code not in RESUMABLE)
            or (how is Ended.CLOSED and not self.matches and not self.leave_sent)
        )
        if how is Ended.REDIRECTED:
            out = self._follow()
        elif fall_back:
            out = self._fall_back(why)
        elif self._resume_refused(code):
            out = self._restart(f"the referee refused to resume the session: {why}")
        else:
            return None
        self._down_since, self._delay = None, BACKOFF_START_S
        return out

    def _wait(self, how: Ended, now: float, code: str, details: str) -> Next:
        """Wait before another stream to the same address; after the grace period, fall back,
        start anew and keep trying, or give up."""
        fruitless = how is Ended.CLOSED and not self.progress
        if (self.welcomed and not fruitless) or self._down_since is None:
            self._down_since, self._delay = now, BACKOFF_START_S
        if self.welcomed:
            self.drops += 1
        self.welcomed = False
        grace = self.options.redirect_grace_s if self.redirected else self.options.grace_s
        left = self._down_since + grace - now
        effects: tuple[Effect, ...] = ()
        reopen = False
        if left <= 0 and (self.redirected or self._keeps_trying()):
            reopen = True
            if self.redirected:
                why = f"{code} {details!r}" if code else "it closed"
                moved = self._fall_back(why)
                self._down_since, self._delay = None, BACKOFF_START_S
                return Next(reopen=True, effects=moved)
            if self.resume_token or self.matches:
                effects = self._restart(f"no referee answered at {self.address} for {grace:g} s")
            self.adrift = True  # from now on, retried until a referee answers
        elif left <= 0:
            return Next(
                fail=f"the stream to {self.address} ended and could not be resumed within "
                f"{self.options.grace_s:g} s"
            )
        cap = ADRIFT_BACKOFF_MAX_S if self.adrift else BACKOFF_MAX_S
        wait = min(self._delay, cap) * self.rng.uniform(0.75, 1.25)
        if not self.adrift:
            wait = min(left, wait)
        self._delay = min(self._delay * 2, cap)
        return Next(wait=wait, reopen=reopen, effects=effects)

    def _keeps_trying(self) -> bool:
        """Whether a lost referee is waited for without end: a queue or ladder bot that has
        been welcomed once (a table lives and dies with its referee; an address that never
        answered is a mistake to report)."""
        return self.adrift or (self.ever_welcomed and self.options.join_table is None)

    def _follow(self) -> tuple[Effect, ...]:
        """Point the next stream at the Redirect's address, with its ticket."""
        assert self.redirect is not None
        lost = tuple(self._lose(m, "redirected to another referee") for m in self._all())
        address, ticket = self.redirect.address, self.redirect.ticket
        self.redirect, self.resume_token, self.leave_sent = None, "", False
        if not address or not ticket:
            return lost + self._fall_back("a Redirect without an address or ticket")
        self.redirects += 1
        self.address, self.ticket = address, ticket
        return lost

    def _fall_back(self, why: str) -> tuple[Effect, ...]:
        """Back to the first address with the first Hello (no ticket, no resume token)."""
        self.fallbacks += 1
        return self._restart(f"redirected referee {self.address!r} lost ({why})")

    def _restart(self, why: str) -> tuple[Effect, ...]:
        """A new session at the first address with the first Hello: the old one is gone, and
        with it the matches it ran (its referee finished or aborted them)."""
        lost = tuple(self._lose(m, "its session ended with its referee") for m in self._all())
        self.restarts += 1
        self.restart_why = why
        self.address, self.ticket, self.resume_token = self.first_address, "", ""
        self.leave_sent = False  # a new session: Leave again once enough matches run
        return lost


# -- pure helpers ------------------------------------------------------------------------------


def verdict(start: referee_pb2.MatchStart | None, result: game_pb2.MatchResult) -> str:
    """ "won", "drawn", "lost" or "aborted", for the seat of ``start``."""
    if result.reason == game_pb2.MATCH_END_REASON_ABORTED:
        return "aborted"
    if result.draw:
        return "drawn"
    if start is None:
        return "ended"
    if not result.penalty_totals:  # the money game: winner_side is a seat
        return "won" if result.winner_side == start.seat else "lost"
    side = next((p.side for p in start.seating if p.seat == start.seat), start.seat)
    return "won" if result.winner_side == side else "lost"


def reply_for(
    request: referee_pb2.DecisionRequest, choice: int | game_pb2.Action
) -> referee_pb2.ActionReply:
    """The answer for what ``Bot.choose`` returned (a legal index or an Action); a bool or an
    index out of range is the bot's bug (TypeError, IndexError)."""
    reply = referee_pb2.ActionReply(match_id=request.match_id, request_id=request.request_id)
    if isinstance(choice, game_pb2.Action):
        reply.action.CopyFrom(choice)
        return reply
    if isinstance(choice, bool):
        raise TypeError("choose returned a bool, not an index")
    index = operator.index(choice)  # ints, numpy integers; TypeError otherwise
    if not 0 <= index < len(request.legal_actions):
        raise IndexError(f"choose returned index {index} of {len(request.legal_actions)}")
    reply.legal_index = index
    return reply


def other_reply(
    request: referee_pb2.DecisionRequest, refused: list[referee_pb2.ActionReply]
) -> referee_pb2.ActionReply:
    """A legal index not refused yet (the first one, if all were)."""
    refused_idx = {r.legal_index for r in refused if r.WhichOneof("choice") == "legal_index"}
    refused_act = [r.action for r in refused if r.WhichOneof("choice") == "action"]
    for i, action in enumerate(request.legal_actions):
        if i not in refused_idx and action not in refused_act:
            break
    else:
        i = 0
    return referee_pb2.ActionReply(
        match_id=request.match_id, request_id=request.request_id, legal_index=i
    )
