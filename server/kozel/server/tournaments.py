"""The tournaments of a referee, from start to stop: each event is checked against this referee
(its house bots, its match length limit), registered in the store the first time (its seed
drawn then, or the file's; ratings read then for rating seeding) and served by a
:class:`~kozel.server.tournament_runtime.TournamentRuntime`."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence

from kozel.ladder import tournament_store
from kozel.ladder.config import ConfigError
from kozel.ladder.store import Store
from kozel.server import errors
from kozel.server.config import ServerConfig
from kozel.server.house import HouseBots
from kozel.server.lobby import Lobby
from kozel.server.store_queue import StoreQueue
from kozel.server.tournament_runtime import TournamentRuntime
from kozel.server.tournament_seats import TournamentParts
from kozel.tournament.spec import TournamentSpec


def check(spec: TournamentSpec, lobby: Lobby, parts: TournamentParts) -> None:
    """Refuse an event this referee cannot play (the message names the field)."""
    known = set(lobby.house_bots)
    for i, bot in enumerate(spec.bots):
        if bot.house and bot.house not in known:
            raise ConfigError(
                f"tournaments: {spec.name}: bots.{i}.house: no house bot {bot.house!r}; "
                f"house bots: {', '.join(sorted(known)) or 'none'}"
            )
        if bot.command and parts.launch is None:
            raise ConfigError(
                f"tournaments: {spec.name}: bots.{i}.command: this referee cannot start commands"
            )
    try:
        lobby.check_length(spec.rules())
    except errors.Invalid as exc:
        raise ConfigError(f"tournaments: {spec.name}: ruleset: {exc.message}") from None


def register(store: Store, spec: TournamentSpec) -> tournament_store.Stored:
    """(Blocking.) The event as the store holds it (recorded now if new)."""
    seed = bytes.fromhex(spec.seed) if spec.seed else secrets.token_bytes(32)
    ratings: dict[str, float] = {}
    for stage in spec.stages:
        if stage.seeding == "rating" and stage.rating_ladder:
            for row in store.standings(stage.rating_ladder):
                if row.name in spec.names:
                    ratings.setdefault(row.name, row.ordinal)
    return tournament_store.register(store, spec, seed, spec.names, ratings)


async def serve(
    lobby: Lobby,
    config: ServerConfig,
    store: Store,
    queue: StoreQueue,
    referee_id: str,
    address: str,
    parts: TournamentParts,
    house: HouseBots,
) -> list[TournamentRuntime]:
    """Register and serve ``config.tournaments`` (not started: :meth:`TournamentRuntime.start`)."""
    specs: Sequence[TournamentSpec] = config.tournaments
    for spec in specs:
        check(spec, lobby, parts)
    out = []
    for spec in specs:
        await asyncio.to_thread(register, store, spec)
        rt = TournamentRuntime(
            spec,
            store,
            lobby.start_game,
            lobby.replays,
            queue,
            referee_id,
            address=address,
            poll_s=config.cluster_poll_s,
            house=house,
            parts=parts,
            log_dir=config.data_dir / "tournaments" / spec.name,
            draining=lambda: lobby.draining,
        )
        lobby.tournaments[spec.name] = rt
        out.append(rt)
    return out
