"""``kozel watch``: follow a running match as a spectator, one line per event."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from kozel.cli.tls import add_tls_args, open_channel
from kozel.server.text import escape
from kozel.v1 import game_pb2 as pb
from kozel.v1 import match_pb2 as mpb
from kozel.v1 import referee_pb2 as rpb


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("watch", help="follow a running match as a spectator")
    p.add_argument("match_id")
    p.add_argument("--server", default="127.0.0.1:50051", help="the referee, host:port")
    p.add_argument(
        "--full",
        action="store_true",
        help="every card and hand, held back by the referee's spectator delay",
    )
    add_tls_args(p)
    p.set_defaults(func=cmd_watch)


def cmd_watch(args: argparse.Namespace) -> int:
    import grpc

    from kozel.v1 import match_pb2_grpc

    lines = EventLines()
    try:
        channel = open_channel(args, args.server)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}")
        return 2
    with channel:
        stub = match_pb2_grpc.MatchServiceStub(channel)
        try:
            for resp in stub.WatchMatch(
                mpb.WatchMatchRequest(match_id=args.match_id, full=args.full)
            ):
                for line in lines.of(resp.event):
                    print(escape(line), flush=True)  # names and cards come from clients
        except grpc.RpcError as exc:
            print(escape(f"error: {exc.code().name}: {exc.details()}"), flush=True)
            return 1
    return 0


_KINDS = {
    pb.ACTION_KIND_LEAD: "leads",
    pb.ACTION_KIND_BEAT: "beats with",
    pb.ACTION_KIND_DISCARD: "discards",
}
_NOTICES = {
    rpb.NOTICE_KIND_TIMEOUT: "timed out",
    rpb.NOTICE_KIND_DISCONNECTED: "disconnected",
    rpb.NOTICE_KIND_RESUMED: "resumed",
    rpb.NOTICE_KIND_FORFEIT: "forfeits",
}


def _enum(enum, value: int, prefix: str) -> str:
    return enum.Name(value).removeprefix(prefix).lower()


class EventLines:
    """Turns spectator events into readable lines (remembers the seating)."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def who(self, seat: int) -> str:
        return f"{self.names.get(seat, 'seat')} (seat {seat})"

    def of(self, ev: mpb.SpectatorEvent) -> Iterator[str]:
        which = ev.WhichOneof("kind")
        if which == "snapshot":
            yield from self._snapshot(ev.snapshot)
        elif which == "deal_start":
            d = ev.deal_start
            totals = " / ".join(map(str, d.penalty_totals or d.chips))
            yield (
                f"deal {d.deal_index}: dealer {self.who(d.dealer)}, trump {d.trump} "
                f"({d.trump_card}); {'penalties' if d.penalty_totals else 'chips'} {totals}"
            )
        elif which == "event":
            yield from self._event(ev.event)
        elif which == "deal_end":
            yield self._deal_end(ev.deal_end)
        elif which == "match_end":
            yield self._match_end(ev.match_end)
        drawn = which == "event" and ev.event.WhichOneof("kind") == "drawn"
        if ev.hands and (which in ("snapshot", "deal_start") or drawn):
            yield "  hands: " + " | ".join(f"{h.seat} [{' '.join(h.cards)}]" for h in ev.hands)

    def _snapshot(self, s: mpb.SpectatorSnapshot) -> Iterator[str]:
        m = s.match
        self.names = {p.seat: p.name for p in m.seating}
        view = f"full view, {s.delay_ms} ms behind" if s.full else "public view"
        where = (
            f", ladder {s.ladder}" if s.ladder else f", table {m.table_id}" if m.table_id else ""
        )
        yield f"match {m.match_id}: {m.ruleset.preset}, {m.players} players{where} ({view})"
        for p in m.seating:
            yield f"  seat {p.seat}: {p.name} (side {p.side})"
        if s.HasField("deal"):
            o = s.deal
            yield (
                f"deal {s.deal_start.deal_index} in play: trump {o.trump} ({o.trump_card}), "
                f"{len(o.tricks)} tricks taken, talon {o.talon}, hand sizes "
                + " / ".join(str(x.hand_size) for x in o.seats)
            )

    def _event(self, e: rpb.Event) -> Iterator[str]:
        kind = e.WhichOneof("kind")
        if kind == "played":
            p = e.played
            cards = " ".join(p.cards) if p.cards else f"{p.count} card(s) face down"
            yield f"  {self.who(p.seat)} {_KINDS.get(p.kind, '?')} {cards}" + (
                " (forced)" if p.forced else ""
            )
        elif kind == "trick_taken":
            t = e.trick_taken.trick
            yield f"  trick to {self.who(t.winner)} ({t.known_points} points seen)"
        elif kind == "drawn":
            drawn = e.drawn
            yield f"  draw: {' / '.join(map(str, drawn.counts))} cards, talon {drawn.talon}"
        elif kind == "declared":
            dec = e.declared
            yield (
                f"  {self.who(dec.seat)} declares {_enum(pb.Combo, dec.combo, 'COMBO_')}: "
                f"{' '.join(dec.cards)}"
            )
        elif kind == "notice":
            n = e.notice
            why = (
                f" ({_enum(pb.ForfeitReason, n.forfeit_reason, 'FORFEIT_REASON_')})"
                if n.kind == rpb.NOTICE_KIND_FORFEIT
                else f" (strikes {n.strikes})"
                if n.kind == rpb.NOTICE_KIND_TIMEOUT
                else ""
            )
            yield f"  {self.who(n.seat)} {_NOTICES.get(n.kind, 'notice')}{why}"

    def _deal_end(self, d: rpb.DealEnd) -> str:
        if d.voided:
            return f"deal {d.deal_index} voided"
        if d.chips:
            return f"deal {d.deal_index} over: chips {' / '.join(map(str, d.chips))}"
        sides = "; ".join(
            f"side {s.side} {s.card_points} points {s.tricks} tricks +{s.penalty} "
            f"(total {s.penalty_total})"
            for s in d.scores
            if s.active
        )
        return f"deal {d.deal_index} over: {sides}"

    def _match_end(self, m: rpb.MatchEnd) -> str:
        r = m.result
        reason = _enum(pb.MatchEndReason, r.reason, "MATCH_END_REASON_")
        winner = "draw" if r.draw else f"side {r.winner_side} wins"
        totals = (
            f"chips {' / '.join(map(str, r.chips))}"
            if r.chips
            else f"penalties {' / '.join(map(str, r.penalty_totals))}"
        )
        return f"match over: {winner} ({reason}); {totals}; replay {m.replay_id or '-'}"
