"""The rule-vector runner: plays a vector (a parsed JSON object) and reports its outcome.

Pure: it takes and returns plain dicts; reading files is the CLI's job. The format is
``tests/vectors/FORMAT.md``. A vector that cannot be set up raises :class:`SetupError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kozel.engine.actions import ActionKind, Combo
from kozel.engine.cards import CARD_OF, SUITS, codes
from kozel.engine.deal import Deal
from kozel.engine.errors import ErrorCode, IllegalAction, SetupError
from kozel.engine.match import Scoreboard
from kozel.engine.rules import FirstLead, RulesError, Ruleset
from kozel.engine.scoring import deal_penalties, split_pot

ACTION_KEYS = ("lead", "beat", "discard", "declare", "pass")
DEAL_KEYS = (
    "trump",
    "tricks",
    "hands",
    "talon",
    "to_act",
    "decision",
    "error",
    "deal_over",
    "card_points",
    "tricks_won",
    "penalties",
)
MONEY_KEYS = ("pot_winners", "chips")


def run(vector: Mapping[str, Any]) -> dict[str, Any]:
    """The outcome of a vector, with every outcome key of its kind."""
    kind = vector.get("kind", "deal")
    rules, players = _setup(vector)
    if kind == "deal":
        return _run_deal(vector, rules, players)
    if kind == "score":
        return _run_score(vector, rules, players)
    if kind == "match":
        return _run_match(vector, rules, players)
    raise SetupError(f"unknown vector kind {kind!r}; kinds are deal, score, match")


def compare(expect: Mapping[str, Any], outcome: Mapping[str, Any]) -> list[str]:
    """The differences between an ``expect`` block and an outcome, as readable lines."""
    diffs = []
    for key, want in expect.items():
        got = outcome.get(key, "<absent>")
        if key == "hands" and isinstance(want, list) and isinstance(got, list):
            same = len(want) == len(got) and all(sorted(w) == sorted(g) for w, g in zip(want, got))
        else:
            same = want == got
        if not same:
            diffs.append(f"{key}: expected {want!r}, got {got!r}")
    return diffs


def _setup(vector: Mapping[str, Any]) -> tuple[Ruleset, int]:
    try:
        rules = Ruleset.preset(vector.get("ruleset", "classic"), vector.get("options") or {})
        players = vector["players"]
        rules.check_players(players)
    except RulesError as exc:
        raise SetupError(str(exc)) from None
    except KeyError:
        raise SetupError("the vector names no player count ('players')") from None
    return rules, players


def _run_deal(vector: Mapping[str, Any], rules: Ruleset, players: int) -> dict[str, Any]:
    raw_deck = vector.get("deck")
    if not isinstance(raw_deck, list) or not all(c in CARD_OF for c in raw_deck):
        raise SetupError("the deck must be a list of card codes")
    dealer = vector.get("dealer", 0)
    if not isinstance(dealer, int) or not 0 <= dealer < players:
        raise SetupError(f"dealer {dealer!r} is not a seat of {players}")
    first = vector.get("first_leader")
    if first is not None and rules.first_lead != FirstLead.PREV_LAST_TRICK:
        raise SetupError(
            f"first_leader is only for first_lead: prev_last_trick, not "
            f"{rules.first_lead} (the seat left of the dealer leads)"
        )
    if first is not None and (
        not isinstance(first, int) or isinstance(first, bool) or not 0 <= first < players
    ):
        raise SetupError(f"first_leader {first!r} is not a seat of {players}")
    deal = Deal.start(
        rules,
        players,
        [CARD_OF[c] for c in raw_deck],
        dealer,
        trump_index=vector.get("trump_index"),
        first_leader=first,
    )
    error = None
    for i, raw in enumerate(vector.get("actions", [])):
        try:
            seat, kind, cards, combo = parse_action(raw, players)
            deal.play(seat, kind, cards, combo)
        except IllegalAction as exc:
            error = {"action": i, "code": str(exc.code)}
            message = exc.message
            break
    else:
        message = None
    out = deal_outcome(deal, error)
    out["error_message"] = message  # not a FORMAT.md key: the sentence a bot author reads
    return out


def parse_action(raw: Any, players: int) -> tuple[int, ActionKind, list[str], Combo | None]:
    """Read one vector action; raise ``MALFORMED`` for anything that is not an action."""

    def bad(why: str) -> IllegalAction:
        return IllegalAction(ErrorCode.MALFORMED, why)

    if not isinstance(raw, Mapping):
        raise bad(f"an action is an object, not {raw!r}")
    keys = [k for k in raw if k not in ("seat", "comment")]
    if len(keys) != 1 or keys[0] not in ACTION_KEYS:
        raise bad(f"an action has 'seat' and one of {', '.join(ACTION_KEYS)}; got {sorted(raw)}")
    seat = raw.get("seat")
    if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < players:
        raise bad(f"seat {seat!r} is not at this table of {players}")
    key = keys[0]
    value = raw[key]
    if key == "pass":
        if value is not True:
            raise bad("'pass' must be true")
        return seat, ActionKind.PASS, [], None
    if key == "declare":
        try:
            return seat, ActionKind.DECLARE, [], Combo(value)
        except ValueError:
            raise bad(f"declare names moscow or molodka, not {value!r}") from None
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        raise bad(f"{key} takes a list of card codes, not {value!r}")
    unknown = [c for c in value if c not in CARD_OF]
    if unknown:
        raise bad(f"unknown card codes: {', '.join(unknown)}")
    return seat, ActionKind(key), value, None


def deal_outcome(deal: Deal, error: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every outcome key of FORMAT.md for a deal as it stands."""
    out: dict[str, Any] = {
        "trump": SUITS[deal.trump],
        "tricks": [
            {"leader": t.leader, "winner": t.winner, "points": t.points} for t in deal.tricks
        ],
        "hands": [codes(h) for h in deal.hands],
        "talon": deal.talon_left,
        "to_act": list(deal.to_act),
        "decision": str(deal.decision),
        "error": error,
        "deal_over": deal.over,
        "card_points": deal.card_points(),
        "tricks_won": deal.side_tricks(),
        "penalties": deal.penalties(),
    }
    if deal.rules.is_money:
        out["pot_winners"] = list(deal.pot_winners)
        chips = None
        if deal.over:
            stake = deal.rules.stake
            share, _ = split_pot(stake * len(deal.active), len(deal.pot_winners))
            chips = [
                (share if s in deal.pot_winners else 0) - stake if s in deal.active else 0
                for s in range(deal.players)
            ]
        out["chips"] = chips
    return out


def _sides(vector: Mapping[str, Any], key: str = "sides") -> list[Any]:
    sides = vector.get(key)
    if not isinstance(sides, list):
        raise SetupError(f"the vector needs a list '{key}'")
    return sides


def _run_score(vector: Mapping[str, Any], rules: Ruleset, players: int) -> dict[str, Any]:
    sides = _sides(vector)
    if rules.is_money:
        return {"penalties": None}
    n_sides = len(set(rules.side_of(players)))
    if len(sides) != n_sides:
        raise SetupError(
            f"{players} players are {n_sides} sides"
            + (" (two teams)" if rules.teams(players) else "")
            + f"; the vector lists {len(sides)}"
        )
    _check_sides(sides, "sides")
    entry = rules.scoring_for(players)
    pen = deal_penalties(entry, [s["points"] for s in sides], [s["tricks"] for s in sides])
    return {"penalties": pen}


def _check_sides(sides: list[Any], where: str, out: frozenset[int] = frozenset()) -> None:
    """Every side still in is an object of whole-number ``points`` and ``tricks`` (``null``
    only for a side that is out)."""
    for i, side in enumerate(sides):
        if side is None and i in out:
            continue
        if not isinstance(side, Mapping) or any(
            not isinstance(v := side.get(k), int) or isinstance(v, bool) or v < 0
            for k in ("points", "tricks")
        ):
            raise SetupError(
                f"{where}[{i}] must have whole-number 'points' and 'tricks' (null "
                f"only for a side that is out), not {side!r}"
            )


def _run_match(vector: Mapping[str, Any], rules: Ruleset, players: int) -> dict[str, Any]:
    board = Scoreboard(rules, players)
    for k, deal in enumerate(_sides(vector, "deals")):
        if board.over:
            break
        if not isinstance(deal, list) or len(deal) != board.n_sides:
            raise SetupError(f"each deal lists {board.n_sides} sides")
        _check_sides(deal, f"deals[{k}]", frozenset(board.eliminated))
        pts = [None if s is None else s["points"] for s in deal]
        trk = [None if s is None else s["tricks"] for s in deal]
        board.record(pts, trk)
    outcome = board.outcome()
    return {
        "penalty_totals": list(outcome.penalty_totals),
        "eliminated": list(outcome.eliminated),
        "winner": outcome.winner,
        "over": outcome.over,
    }
