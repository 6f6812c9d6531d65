"""The whole event as a function of its definition, its seed and the results so far.

:func:`run` walks the stages in order: a stage's entrants come from the one before (its best
``top``, seeded as the stage says); a round (a bracket match in a knockout) is paired from the
rounds before it, and its games are known the moment it is; a round whose games all have
results lets the next one be paired. What has no result yet is :attr:`EventState.pending`:
the games to play now. Nothing else is kept, so whoever holds the results (a restarted
referee, the web, the command line) sees the same event, and the same results give the same
schedule, standings and winners.

Withdrawal (``forfeits.withdraw_after``): a bot that has forfeited that many games in a row
when a round ends is withdrawn from then on; its later games are lost without play and a
Swiss no longer pairs it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kozel.tournament import formats, knockout, luck, swiss
from kozel.tournament.crosstable import Cell, crosstable, winners
from kozel.tournament.games import Game, GameResult, Pairing, forfeit_result, games_of
from kozel.tournament.spec import Gauntlet, Knockout, RoundRobin, Swiss, TournamentSpec
from kozel.tournament.standings import PairingOutcome, Row, outcome, standings


@dataclass
class PairingState:
    pairing: Pairing
    games: list[Game]
    results: list[GameResult | None]
    outcome: PairingOutcome | None = None  # once every game has a result
    winner: str | None = None  # knockouts

    @property
    def done(self) -> bool:
        return all(r is not None for r in self.results)


@dataclass
class RoundState:
    label: str  # "1", "2" ... (knockouts: the bracket column, "W1", "L2", "GF")
    pairings: list[PairingState] = field(default_factory=list)
    byes: list[str] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return all(p.done for p in self.pairings)


@dataclass
class StageState:
    index: int
    spec: RoundRobin | Gauntlet | Swiss | Knockout
    entrants: list[str]  # in seed order
    rounds: list[RoundState] = field(default_factory=list)
    standings: list[Row] = field(default_factory=list)
    done: bool = False
    bracket: list[knockout.Resolved] = field(default_factory=list)  # knockouts
    planned_rounds: int = 0

    @property
    def format(self) -> str:
        return self.spec.format


@dataclass
class EventState:
    stages: list[StageState]
    pending: list[Game]
    done: bool
    withdrawn: set[str]
    results: list[GameResult]  # every result, those decided without play included
    crosstable: dict[str, dict[str, Cell]]
    winners: dict[str, str | None]

    @property
    def current(self) -> tuple[int, int] | None:
        """The stage and round being played (None once over)."""
        if self.done:
            return None
        st = self.stages[-1]
        return st.index, max(0, len(st.rounds) - 1)


@dataclass
class _Ctx:
    spec: TournamentSpec
    seed: bytes
    results: Mapping[str, GameResult]
    ratings: Mapping[str, float]
    side_of: tuple[int, ...]
    withdrawn: set[str] = field(default_factory=set)
    streak: dict[str, int] = field(default_factory=dict)  # forfeits in a row
    pending: list[Game] = field(default_factory=list)
    all_results: list[GameResult] = field(default_factory=list)

    def result(self, game: Game, gone: set[str]) -> GameResult | None:
        if gone.intersection(game.seats):
            return forfeit_result(game, gone, self.side_of)
        return self.results.get(game.key)

    def play(self, pairing: Pairing) -> PairingState:
        """A pairing's games and the results they have (withdrawn bots' decided at once)."""
        gone = set(self.withdrawn)
        games = games_of(pairing, self.seed)
        results = [self.result(g, gone) for g in games]
        state = PairingState(pairing, games, results)
        if state.done:
            done = [r for r in results if r is not None]
            state.outcome = outcome(pairing.key, pairing.order, done)
        return state

    def settle(self, states: Sequence[PairingState]) -> None:
        """A round is over: count its results and forfeits (withdrawals take effect now)."""
        limit = self.spec.forfeits.withdraw_after
        for st in states:
            for r in st.results:
                assert r is not None
                self.all_results.append(r)
                if not r.played:
                    continue
                for seat, name in enumerate(r.seats):
                    lost = bool(r.forfeited) and r.forfeited[seat]
                    self.streak[name] = self.streak.get(name, 0) + 1 if lost else 0
                    if limit and self.streak[name] >= limit:
                        self.withdrawn.add(name)

    def unfinished(self, states: Sequence[PairingState]) -> None:
        for st in states:
            self.pending += [g for g, r in zip(st.games, st.results) if r is None]
            self.all_results += [r for r in st.results if r is not None]


def run(
    spec: TournamentSpec,
    seed: bytes,
    results: Mapping[str, GameResult],
    seeding: Sequence[str] | None = None,
    ratings: Mapping[str, float] | None = None,
) -> EventState:
    """The event as ``results`` (by game key) leave it. ``seeding`` is the first stage's order
    (default: the bots in the file's order); ``ratings`` the ratings that seed stages with
    ``seeding: rating`` (read once, when the event was registered)."""
    ctx = _Ctx(spec, seed, results, ratings or {}, spec.rules().side_of(spec.players))
    stages: list[StageState] = []
    entrants = list(seeding or spec.names)
    done = True
    for i, stage in enumerate(spec.stages):
        if i:
            entrants = _entrants(ctx, stage, stages[-1], i)
        elif stage.seeding in ("rating", "random"):
            entrants = _seeded(ctx, stage, entrants, i)
        st = StageState(i, stage, entrants)
        stages.append(st)
        if isinstance(stage, Knockout):
            _knockout(ctx, st)
        else:
            _league(ctx, st)
        _stage_luck(st)
        if not st.done:
            done = False
            break
    names = list(spec.names)
    table = luck.crosstable_luck(crosstable(names, ctx.all_results), ctx.all_results)
    last = stages[-1]
    top = last.standings[0].name if done and last.standings else None
    return EventState(
        stages,
        ctx.pending,
        done,
        set(ctx.withdrawn),
        ctx.all_results,
        table,
        winners(spec.winners, names, ctx.all_results, table, top) if done else {},
    )


def _stage_luck(st: StageState) -> None:
    """Each standings row's luck-corrected game points, over the stage's games so far."""
    results = [r for rnd in st.rounds for p in rnd.pairings for r in p.results if r is not None]
    figures = luck.by_bot(results)
    for row in st.standings:
        row.luck_corrected = figures.get(row.name)


def _entrants(ctx: _Ctx, stage: object, before: StageState, index: int) -> list[str]:
    """The best ``top`` of the stage before (withdrawn bots left out), seeded as asked."""
    ranked = [r.name for r in before.standings if r.name not in ctx.withdrawn]
    top = getattr(stage, "top", None)
    chosen = ranked[:top] if top else ranked
    if getattr(stage, "seeding", "previous") == "previous":
        return chosen
    if stage.seeding == "order":  # type: ignore[attr-defined]
        return [n for n in ctx.spec.names if n in chosen]
    return _seeded(ctx, stage, chosen, index)


def _seeded(ctx: _Ctx, stage: object, names: list[str], index: int) -> list[str]:
    if getattr(stage, "seeding", "") == "random":
        out = list(names)
        random.Random(ctx.seed + index.to_bytes(4, "big")).shuffle(out)
        return out
    order = {n: i for i, n in enumerate(ctx.spec.names)}
    return sorted(names, key=lambda n: (-ctx.ratings.get(n, float("-inf")), order[n]))


def _schedule(ctx: _Ctx, st: StageState) -> list[formats.Round] | None:
    spec, k = st.spec, ctx.spec.players
    if isinstance(spec, RoundRobin):
        return formats.round_robin(st.entrants, k, spec.cycles)
    if isinstance(spec, Gauntlet):
        return formats.gauntlet(st.entrants, spec.challengers, k, spec.cycles)
    return None  # Swiss: paired round by round


def _league(ctx: _Ctx, st: StageState) -> None:
    """Round robin, gauntlet or Swiss: round after round until one is unfinished."""
    spec = st.spec
    assert not isinstance(spec, Knockout)
    fixed = _schedule(ctx, st)
    st.planned_rounds = len(fixed) if fixed is not None else spec.rounds  # type: ignore[union-attr]
    history = swiss.History()
    outcomes: list[PairingOutcome] = []
    byes: dict[str, int] = {}
    groups = ctx.spec.stage_groups(st.index)
    for r in range(st.planned_rounds):
        if fixed is not None:
            tables, rests = list(fixed[r]), list[str]()
        else:
            active = [n for n in st.entrants if n not in ctx.withdrawn]
            if len(active) < ctx.spec.players:
                break
            score = {row.name: row.score for row in _table(ctx, st, outcomes, byes)}
            tables, rests = swiss.pair_round(active, score, history, ctx.spec.players)
        rnd = RoundState(str(r + 1), byes=list(rests))
        for j, order in enumerate(tables):
            pairing = Pairing(f"s{st.index}.r{r}.p{j}", st.index, r, tuple(order), groups)
            rnd.pairings.append(ctx.play(pairing))
        st.rounds.append(rnd)
        if not rnd.done:
            ctx.unfinished(rnd.pairings)
            st.standings = _table(ctx, st, outcomes, byes)
            return
        ctx.settle(rnd.pairings)
        for p in rnd.pairings:
            assert p.outcome is not None
            outcomes.append(p.outcome)
            history.record(p.pairing.order)
        for name in rests:
            byes[name] = byes.get(name, 0) + 1
            history.byes.add(name)
    st.standings = _table(ctx, st, outcomes, byes)
    st.done = True


def _table(
    ctx: _Ctx, st: StageState, outcomes: list[PairingOutcome], byes: Mapping[str, int]
) -> list[Row]:
    spec = st.spec
    return standings(
        st.entrants,
        outcomes,
        byes,
        score=getattr(spec, "score", "pairings"),
        bye_points=getattr(spec, "bye_points", 1.0),
        tie_breaks=spec.tie_breaks,
        withdrawn=ctx.withdrawn,
    )


def _knockout(ctx: _Ctx, st: StageState) -> None:
    """A bracket: every match whose bots are known is played; each decided one may make
    others ready, until nothing changes."""
    spec = st.spec
    assert isinstance(spec, Knockout)
    matches = knockout.build(len(st.entrants), spec.elimination == "double", spec.grand_final_reset)
    seed_of = {n: i for i, n in enumerate(st.entrants)}
    base = ctx.spec.stage_groups(st.index)
    decided: dict[str, str] = {}
    states: dict[str, PairingState] = {}
    while True:
        resolved = knockout.resolve(matches, st.entrants, decided)
        ready = [r for r in resolved.values() if r.ready and r.match.id not in states]
        if not ready:
            break
        for r in ready:
            assert r.a and r.b
            first, second = sorted((r.a, r.b), key=seed_of.__getitem__)
            state = _bracket_pairing(ctx, st, r.match, (first, second), base, spec.extra_groups)
            states[r.match.id] = state
            if state.winner is not None:
                decided[r.match.id] = state.winner
                ctx.settle([state])
    resolved = knockout.resolve(matches, st.entrants, decided)
    st.bracket = [resolved[m.id] for m in matches]
    columns: dict[str, RoundState] = {}
    for m in matches:
        col = columns.setdefault(f"{m.side}{m.round}" if m.side != "F" else m.id, RoundState(""))
        col.label = f"{m.side}{m.round}" if m.side != "F" else m.id
        if m.id in states:
            col.pairings.append(states[m.id])
    st.rounds = list(columns.values())
    unfinished = [s for s in states.values() if s.winner is None]
    ctx.unfinished(unfinished)
    st.done = not unfinished and knockout.champion(matches, resolved) is not None
    st.standings = _bracket_standings(ctx, st, matches, resolved, states)


def _bracket_pairing(
    ctx: _Ctx,
    st: StageState,
    match: knockout.Match,
    order: tuple[str, str],
    base: int,
    extra: int,
) -> PairingState:
    """A bracket match: ``base`` seed groups, one more while tied (up to ``extra`` more), then
    the higher seed goes through."""
    groups = base
    while True:
        pairing = Pairing(
            f"s{st.index}.{match.id}", st.index, match.round, order, groups, label=match.id
        )
        state = ctx.play(pairing)
        if not state.done or state.outcome is None:
            return state
        a, b = (state.outcome.game_points[n] for n in order)
        if a != b:
            state.winner = order[0] if a > b else order[1]
            return state
        if groups >= base + extra:
            state.winner = order[0]  # still tied: the higher seed
            return state
        groups += 1


def _bracket_standings(
    ctx: _Ctx,
    st: StageState,
    matches: Sequence[knockout.Match],
    resolved: Mapping[str, knockout.Resolved],
    states: Mapping[str, PairingState],
) -> list[Row]:
    outcomes = [s.outcome for s in states.values() if s.outcome is not None and s.winner]
    rows = {
        r.name: r
        for r in standings(
            st.entrants, outcomes, {}, score="pairings", bye_points=0.0, tie_breaks=()
        )
    }
    won = dict.fromkeys(st.entrants, 0)
    lost = dict(won)
    for state in states.values():  # bracket matches played (a tie goes to the higher seed)
        if state.winner is not None:
            won[state.winner] += 1
            lost[next(n for n in state.pairing.order if n != state.winner)] += 1
    out = []
    for place, name in knockout.placings(matches, resolved, st.entrants):
        row = rows[name]
        row.wins, row.draws, row.losses, row.score = won[name], 0, lost[name], won[name]
        row.place = place
        row.withdrawn = name in ctx.withdrawn
        out.append(row)
    for i, row in enumerate(out):
        row.rank = i + 1
    return out
