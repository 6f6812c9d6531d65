"""Where the web gets what it shows: the ladder store and the replay archive, plus the running
matches and their spectator streams.

Inside a referee (``kozel serve``) :class:`LobbySources` reads the lobby: running matches, the
spectator hub of each (exactly the stream ``WatchMatch`` serves), and the set of sealed
duplicate halves. On its own (``kozel web``) :class:`StandaloneSources` reads the store and a
replay folder, and follows live matches through a referee's ``WatchMatch`` when given one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf.json_format import MessageToDict

from kozel.ladder.store import Store
from kozel.server import errors
from kozel.server.peers import FORWARDED, FORWARDED_PEER, PROXY_KEY
from kozel.server.replay.archive import ReplayArchive
from kozel.server.replay.file import ReplayError
from kozel.v1 import game_pb2, match_pb2_grpc
from kozel.v1 import match_pb2 as mpb
from kozel.web.rows import MatchSummary, RunningMatch, SeatSummary

if TYPE_CHECKING:
    from kozel.server.lobby import Lobby


class LiveError(Exception):
    """A live stream the web cannot give, with the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


FIRST_WAIT_S = 2.0  # how long a live stream through a referee waits for its first message
# A remote referee's gRPC statuses, and a local referee's refusals, as HTTP statuses.
_GRPC_TO_HTTP = {
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
}
_HTTP_STATUS: dict[type[errors.Refused], int] = {
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.Exhausted: 429,
    errors.Invalid: 400,
}


def event_dict(event: mpb.SpectatorEvent) -> dict[str, Any]:
    """A spectator event as JSON (proto field names; the same message ``WatchMatch`` sends)."""
    return MessageToDict(event, preserving_proto_field_name=True)


@dataclass
class Sources:
    """What every kind of source shares: the store (None without ladders) and the replays."""

    store: Store | None
    replays: ReplayArchive

    async def sealed(self, match_id: str) -> bool:
        """Whether a match's replay and full view stay secret (a duplicate first half);
        :class:`LiveError` (503) when that cannot be told now (then it is kept secret)."""
        raise NotImplementedError

    async def running(self) -> list[RunningMatch]:
        """The matches running now, newest first."""
        raise NotImplementedError

    async def watch(
        self, match_id: str, full: bool, client: str = ""
    ) -> AsyncIterator[dict[str, Any]]:
        """The spectator stream of a running match for ``client`` (its address: the
        referee's per-address spectator limits count it), checked and subscribed before it
        is returned; raises :class:`LiveError`."""
        raise NotImplementedError

    def live_detail(self, match_id: str) -> mpb.GetMatchResponse | None:
        """The running match's details, when it runs here."""
        return None

    async def replay_bytes(self, match_id: str, limit: int) -> bytes | None:
        """A replay file's bytes from the replays (None: not there); ``OverflowError`` past
        ``limit`` bytes. The caller has checked that it is not sealed."""
        return await asyncio.to_thread(self.replays.read_bytes, match_id, limit)

    def ladder_names(self) -> list[str] | None:
        """The ladders served (None: whatever the store knows)."""
        return None

    def replay_matches(self, limit: int, offset: int) -> tuple[list[MatchSummary], bool]:
        """Without a store: the matches of the replays, newest first (one page, and whether
        more follow). Reads ``limit`` replays."""
        try:
            ids = self.replays.ids()
        except OSError:
            return [], False
        out = []
        for match_id in ids[offset : offset + limit]:
            try:
                r = self.replays.read(match_id)
            except (OSError, ValueError):
                continue
            if r is None:
                continue
            out.append(
                MatchSummary(
                    match_id=r.match_id,
                    ladder="",
                    status="finished",
                    reason=game_pb2.MatchEndReason.Name(r.result.reason),
                    players=r.players,
                    started_at=r.started_at.ToDatetime(tzinfo=UTC),
                    ended_at=r.ended_at.ToDatetime(tzinfo=UTC),
                    seats=[SeatSummary(seat=x.seat, side=x.side, bot=x.name) for x in r.seats],
                )
            )
        return out, offset + limit < len(ids)


class LobbySources(Sources):
    """A referee's own lobby (same event loop)."""

    def __init__(self, lobby: Lobby, store: Store | None = None) -> None:
        super().__init__(store, lobby.replays)
        self.lobby = lobby

    async def sealed(self, match_id: str) -> bool:
        return self.lobby.replays.sealed(match_id)

    def ladder_names(self) -> list[str] | None:
        return sorted(self.lobby.ladders) if self.lobby.ladders else None

    async def running(self) -> list[RunningMatch]:
        out = []
        for runner in self.lobby.runners.values():
            if runner.outcome is not None:
                continue
            out.append(
                RunningMatch(
                    match_id=runner.match_id,
                    ladder=runner.ladder,
                    table_id=runner.table_id,
                    players=runner.players,
                    seats=[p.name for p in runner.seating],
                    started_at=runner.started_at,
                    deal=len(runner.match.records),
                )
            )
        return sorted(out, key=lambda m: m.started_at, reverse=True)

    def live_detail(self, match_id: str) -> mpb.GetMatchResponse | None:
        from kozel.server.match_details import from_runner

        runner = self.lobby.runners.get(match_id)
        return from_runner(runner) if runner is not None else None

    async def watch(
        self, match_id: str, full: bool, client: str = ""
    ) -> AsyncIterator[dict[str, Any]]:
        runner = self.lobby.runners.get(match_id)
        hub = runner.spectators if runner is not None else None
        if hub is None:
            raise LiveError(404, f"no running match {match_id}")
        if full and self.lobby.replays.sealed(match_id):
            raise LiveError(
                409,
                "this match is the first half of a duplicate pair: its hands "
                "stay secret until its twin has been played",
            )
        try:
            sub = hub.subscribe(full, f"{FORWARDED_PEER}{client}" if client else "")
        except errors.Refused as exc:
            raise LiveError(_HTTP_STATUS.get(type(exc), 503), exc.message) from None

        async def stream() -> AsyncIterator[dict[str, Any]]:
            try:
                while (event := await sub.get()) is not None:
                    yield event_dict(event)
            finally:
                hub.unsubscribe(sub)
            if sub.dropped:
                yield {"dropped": sub.dropped}

        return stream()


class StandaloneSources(Sources):
    """The store and the replays (a folder), without a lobby; a referee (``referee``, a gRPC
    address) for live matches, the list of running matches and the replays it holds.

    Sealing fails closed. With a referee, a replay is public once the referee's
    ``DownloadReplay`` gives it (it refuses sealed halves; a public replay never becomes sealed
    again, so the answer is kept); a refusal, and any failure that leaves the question open
    (the referee busy, unreachable, too slow), keeps it sealed for now (:class:`LiveError` 503
    from :meth:`sealed`). When the referee does not know the match (another referee's, or
    none is followed), the replay archive judges it from the records
    (:meth:`~kozel.server.replay.archive.ReplayArchive.sealed_on_record`): a duplicate match
    stays sealed until its group's last match is on record; a replay that cannot be read is
    sealed too (one past the replay limits is refused as such: :class:`LiveError` 422, never
    served).
    """

    FETCHED_KEPT = 8  # replays fetched to check their seal, kept for the download that follows

    def __init__(
        self,
        store: Store | None,
        replays: ReplayArchive,
        *,
        referee: str = "",
        duplicate_ladders: frozenset[str] = frozenset(),
        check_limit: int = 32 * 1024 * 1024,
        proxy_key: str = "",
    ) -> None:
        super().__init__(store, replays)
        self.referee = referee
        self.proxy_key = proxy_key  # shown to the referee with its visitors' addresses
        self.duplicate_ladders = duplicate_ladders
        self.check_limit = check_limit
        self._channel: grpc.aio.Channel | None = None
        self._public: set[str] = set()  # known not to be sealed (never sealed again)
        self._fetched: dict[str, bytes] = {}

    async def sealed(self, match_id: str) -> bool:
        if self.replays.sealed(match_id):  # sealed where the archive is shared
            return True
        if match_id in self._public:
            return False
        if self.referee:
            try:
                data = await self._from_referee(match_id, self.check_limit)
            except LiveError as exc:
                if exc.status == 403:
                    return True
                raise LiveError(
                    503,
                    f"cannot tell now whether match {match_id} is sealed (the referee "
                    f"answered: {exc.message}); retry in a moment",
                ) from None
            except OverflowError:
                data = b""  # it was sent, so it is not sealed (the download will refuse it)
            if data is not None:
                self._public.add(match_id)
                if data:
                    while len(self._fetched) >= self.FETCHED_KEPT:
                        self._fetched.pop(next(iter(self._fetched)))
                    self._fetched[match_id] = data
                return False
        return await asyncio.to_thread(self._sealed_here, match_id)

    def _sealed_here(self, match_id: str) -> bool:
        """(Blocking.) Asked of the archive, from the records (see
        :meth:`~kozel.server.replay.archive.ReplayArchive.sealed_on_record`); a file past the
        replay limits is refused as such (:class:`LiveError`, which callers that only list it
        take as sealed). A public answer is kept: it never becomes sealed again."""
        try:
            sealed = self.replays.sealed_on_record(match_id, self.store, self.duplicate_ladders)
        except ReplayError as exc:  # served to nobody either way: say why
            raise LiveError(422, f"replay {match_id} cannot be read: {exc}") from None
        if sealed is False:
            self._public.add(match_id)
        return bool(sealed)

    async def replay_bytes(self, match_id: str, limit: int) -> bytes | None:
        """From the replays, else from the referee (DownloadReplay): a web server on
        another machine needs no copy of the replays."""
        data = self._fetched.pop(match_id, None)
        if data is not None:
            if len(data) > limit:
                raise OverflowError(limit)
            return data
        data = await super().replay_bytes(match_id, limit)
        if data is not None or not self.referee:
            return data
        return await self._from_referee(match_id, limit)

    async def _from_referee(self, match_id: str, limit: int) -> bytes | None:
        """The referee's replay (None: it has none); LiveError 403 when sealed."""
        from kozel.v1 import ladder_pb2, ladder_pb2_grpc

        stub = ladder_pb2_grpc.LadderServiceStub(self._chan())
        chunks, size = [], 0
        try:
            async for msg in stub.DownloadReplay(
                ladder_pb2.DownloadReplayRequest(replay_id=match_id), timeout=60
            ):
                size += len(msg.chunk)
                if size > limit:
                    raise OverflowError(limit)
                chunks.append(msg.chunk)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return None
            if exc.code() == grpc.StatusCode.FAILED_PRECONDITION:
                raise LiveError(403, exc.details() or "sealed") from None
            raise LiveError(502, f"the referee did not send the replay: {exc.details()}") from None
        return b"".join(chunks)

    def _chan(self) -> grpc.aio.Channel:
        if self._channel is None:
            self._channel = grpc.aio.insecure_channel(self.referee)
        return self._channel

    async def running(self) -> list[RunningMatch]:
        if self.referee:
            try:
                got = await match_pb2_grpc.MatchServiceStub(self._chan()).ListLiveMatches(
                    mpb.ListLiveMatchesRequest(limit=100), timeout=10
                )
                return [
                    RunningMatch(
                        match_id=m.match_id,
                        ladder=m.ladder,
                        table_id=m.table_id,
                        players=m.players,
                        seats=list(m.seats),
                        started_at=m.started_at.ToDatetime(tzinfo=UTC),
                        deal=m.deal_index,
                    )
                    for m in got.matches
                ]
            except grpc.aio.AioRpcError:
                pass  # an older or unreachable referee: the store's running ladder matches
        if self.store is None:
            return []
        from kozel.web.queries import MatchFilter, WebQueries

        page, _ = await asyncio.to_thread(
            WebQueries(self.store).matches, MatchFilter(status="running"), 100
        )
        return [
            RunningMatch(
                match_id=m.match_id,
                ladder=m.ladder,
                table_id="",
                players=m.players,
                seats=[x.bot for x in m.seats],
                started_at=m.started_at,
                deal=None,
            )
            for m in page
        ]

    async def watch(
        self, match_id: str, full: bool, client: str = ""
    ) -> AsyncIterator[dict[str, Any]]:
        if not self.referee:
            raise LiveError(503, "this web server follows no referee (kozel web --referee)")
        stub = match_pb2_grpc.MatchServiceStub(self._chan())
        # The visitor's address, counted where the referee trusts this web (its own child
        # shows the key; another web must be named in the referee's trusted_proxies).
        metadata = [(FORWARDED, client)] if client else []
        if self.proxy_key and client:
            metadata.append((PROXY_KEY, self.proxy_key))
        call = stub.WatchMatch(
            mpb.WatchMatchRequest(match_id=match_id, full=full), metadata=metadata or None
        )
        it = call.__aiter__()
        first = asyncio.ensure_future(it.__anext__())
        # A refusal comes at once; a full view's first message may wait for the delay, so
        # after a moment the response starts and a later refusal arrives in the stream.
        await asyncio.wait({first}, timeout=FIRST_WAIT_S)
        if first.done() and isinstance(first.exception(), grpc.aio.AioRpcError):
            exc = first.exception()
            call.cancel()
            raise LiveError(_GRPC_TO_HTTP.get(exc.code(), 502), exc.details() or "")

        async def stream() -> AsyncIterator[dict[str, Any]]:
            try:
                yield event_dict((await first).event)
                async for msg in it:
                    yield event_dict(msg.event)
            except StopAsyncIteration:
                return
            except grpc.aio.AioRpcError as exc:
                yield {"dropped": exc.details() or str(exc.code())}
            finally:
                first.cancel()
                call.cancel()

        return stream()

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
