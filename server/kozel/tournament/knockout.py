"""Knockout brackets, single and double elimination, with byes.

A bracket has a power-of-two number of places; seeds fill them in the standard order (1 meets
the last seed, and 1 and 2 can only meet in the final); places beyond the field are byes. A
match with a bye on one side is won by the other without play, so byes flow through the
losers' bracket too. Double elimination: the winners' bracket, the losers' bracket (its odd
rounds pair the survivors, its even rounds bring in the losers of the next winners' round, in
reverse order to put off rematches), the grand final between the two champions, and, when
``reset`` is set and the losers' champion wins it, a second final.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

BYE = ""  # an empty place


@dataclass(frozen=True, slots=True)
class Slot:
    """Where a match's bot comes from: a seed (1-based), or the winner or loser of a match."""

    kind: str  # "seed" | "winner" | "loser" | "reset" (the grand final's bot, if a reset is due)
    ref: str  # the seed number, or the match id

    def describe(self) -> str:
        return {"seed": "seed ", "winner": "winner of ", "loser": "loser of "}.get(
            self.kind, "if needed: "
        ) + self.ref


@dataclass(frozen=True, slots=True)
class Match:
    id: str  # "W1-1" (winners' round 1, match 1), "L2-1", "GF", "GF2"
    side: str  # "W" | "L" | "F"
    round: int  # the round within its side (1-based)
    a: Slot
    b: Slot


def seed_order(size: int) -> list[int]:
    """Seeds by place in a bracket of ``size`` (a power of two): [1, 8, 4, 5, 2, 7, 3, 6]."""
    order = [1]
    while len(order) < size:
        n = 2 * len(order) + 1
        order = [x for s in order for x in (s, n - s)]
    return order


def bracket_size(entrants: int) -> int:
    size = 1
    while size < entrants:
        size *= 2
    return max(size, 2)


def build(entrants: int, double: bool, reset: bool) -> list[Match]:
    """The matches of a bracket for ``entrants`` bots, in an order in which every match comes
    after the matches it draws from."""
    size = bracket_size(entrants)
    rounds = size.bit_length() - 1
    order = seed_order(size)
    out: list[Match] = []
    for j in range(size // 2):
        a, b = order[2 * j], order[2 * j + 1]
        out.append(Match(f"W1-{j + 1}", "W", 1, Slot("seed", str(a)), Slot("seed", str(b))))
    for r in range(2, rounds + 1):
        out.extend(
            Match(
                f"W{r}-{j + 1}",
                "W",
                r,
                Slot("winner", f"W{r - 1}-{2 * j + 1}"),
                Slot("winner", f"W{r - 1}-{2 * j + 2}"),
            )
            for j in range(size >> r)
        )
    if not double:
        return out
    champion = _losers(out, size, rounds)
    final_w = f"W{rounds}-1"
    out.append(Match("GF", "F", 1, Slot("winner", final_w), champion))
    if reset:
        out.append(Match("GF2", "F", 2, Slot("reset", "GF"), Slot("reset", "GF")))
    return out


def _losers(out: list[Match], size: int, rounds: int) -> Slot:
    """Append the losers' bracket; returns where its champion comes from."""
    if rounds == 1:
        return Slot("loser", "W1-1")
    n = size // 4
    out.extend(
        Match(
            f"L1-{j + 1}",
            "L",
            1,
            Slot("loser", f"W1-{2 * j + 1}"),
            Slot("loser", f"W1-{2 * j + 2}"),
        )
        for j in range(n)
    )
    last = 1
    for k in range(1, rounds):
        even = 2 * k
        # survivors against the losers of winners' round k + 1, in reverse order
        out.extend(
            Match(
                f"L{even}-{j + 1}",
                "L",
                even,
                Slot("winner", f"L{even - 1}-{j + 1}"),
                Slot("loser", f"W{k + 1}-{n - j}"),
            )
            for j in range(n)
        )
        last = even
        if k == rounds - 1:
            break
        n //= 2
        out.extend(
            Match(
                f"L{even + 1}-{j + 1}",
                "L",
                even + 1,
                Slot("winner", f"L{even}-{2 * j + 1}"),
                Slot("winner", f"L{even}-{2 * j + 2}"),
            )
            for j in range(n)
        )
    return Slot("winner", f"L{last}-1")


@dataclass(frozen=True, slots=True)
class Resolved:
    """A match as the results so far make it: its bots ("" a bye, None not known yet) and its
    winner and loser once decided."""

    match: Match
    a: str | None
    b: str | None
    winner: str | None = None
    loser: str | None = None

    @property
    def ready(self) -> bool:
        """Both bots known and real: the match is to be played (or is being played)."""
        return bool(self.a) and bool(self.b) and self.winner is None

    @property
    def decided(self) -> bool:
        return self.winner is not None


def resolve(
    matches: Sequence[Match], seeds: Sequence[str], played: Mapping[str, str]
) -> dict[str, Resolved]:
    """Every match's bots and outcome from the seeding (``seeds[0]`` is seed 1) and the
    winners of the matches played (``played``: match id -> winner's name)."""
    out: dict[str, Resolved] = {}

    def bot(slot: Slot) -> str | None:
        if slot.kind == "seed":
            i = int(slot.ref) - 1
            return seeds[i] if i < len(seeds) else BYE
        src = out[slot.ref]
        if slot.kind == "winner":
            return src.winner
        if slot.kind == "loser":
            return src.loser
        return None  # "reset": filled below

    for m in matches:
        if m.a.kind == "reset":
            out[m.id] = _reset(m, out[m.a.ref], played)
            continue
        a, b = bot(m.a), bot(m.b)
        out[m.id] = _outcome(m, a, b, played)
    return out


def _outcome(m: Match, a: str | None, b: str | None, played: Mapping[str, str]) -> Resolved:
    if a is None or b is None:
        return Resolved(m, a, b)
    if a == BYE or b == BYE:  # a bye: the other goes through without play
        return Resolved(m, a, b, winner=a or b, loser=BYE)
    won = played.get(m.id)
    if won is None:
        return Resolved(m, a, b)
    return Resolved(m, a, b, winner=won, loser=b if won == a else a)


def _reset(m: Match, final: Resolved, played: Mapping[str, str]) -> Resolved:
    """The second final: played only when the losers' champion won the first."""
    if final.winner is None:
        return Resolved(m, None, None)
    if final.winner != final.b:
        return Resolved(m, BYE, BYE, winner=final.winner, loser=BYE)  # not needed
    return _outcome(m, final.a, final.b, played)


def champion(matches: Sequence[Match], resolved: Mapping[str, Resolved]) -> str | None:
    """The bracket's winner once decided."""
    last = resolved[matches[-1].id]
    return last.winner or None


def placings(
    matches: Sequence[Match], resolved: Mapping[str, Resolved], seeds: Sequence[str]
) -> list[tuple[int, str]]:
    """(place, bot) for every seeded bot: the champion first, then by how late each lost its
    last match (bots out in the same round share the place), each place in seed order."""
    index = {m.id: i for i, m in enumerate(matches)}
    out_at: dict[str, int] = {}
    for r in resolved.values():
        if r.loser:  # a bot's last loss is what put it out
            out_at[r.loser] = max(out_at.get(r.loser, -1), index[r.match.id])
    top = champion(matches, resolved)
    stage_of = {m.id: (m.side, m.round) for m in matches}
    keyed = []
    for name in seeds:
        if name == top:
            keyed.append(((1, 0), name))
        elif name in out_at:
            side, rnd = stage_of[matches[out_at[name]].id]
            keyed.append(((2, -_depth(side, rnd)), name))
        else:
            keyed.append(((2, 1), name))  # still in: below everyone out (placed at the end)
    keyed.sort(key=lambda kv: (kv[0], seeds.index(kv[1])))
    out: list[tuple[int, str]] = []
    for i, (k, name) in enumerate(keyed):
        place = out[-1][0] if i and keyed[i - 1][0] == k else i + 1
        out.append((place, name))
    return out


def _depth(side: str, rnd: int) -> int:
    """How far a bot got when it lost a match of this side and round (larger is later)."""
    return {"F": 1000 + rnd, "W": 2 * rnd, "L": rnd + 1}[side]
