"""What every referee sharing a store is doing, and each ladder, as an operator asks for it
(``kozel cluster status``, the admin RPC and the operators' web page): read from the store
alone, so it works with any referee down, or none running.

Each referee publishes its status at every poll or lease renewal (running matches, capacity,
streams, admission, and per ladder its waiting bots and, where it schedules, why nothing
starts); the ladders' states, scheduler roles, tickets and assignments are rows of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kozel.ladder import presence
from kozel.ladder.models import (
    AssignmentRow,
    LadderHostRow,
    LadderStateRow,
    MatchRow,
    RefereeRow,
    TicketRow,
)
from kozel.ladder.store import Store, db_now

STALE_S = 30.0  # a referee's status older than this is shown as stale


@dataclass(frozen=True, slots=True)
class RefereeInfo:
    """One referee as it last published itself."""

    id: str
    address: str
    live: bool
    lease_age_s: float
    draining: bool
    running_matches: int
    capacity: int
    streams: int
    waiting: int
    admits: bool
    status_age_s: float
    version: str


@dataclass(frozen=True, slots=True)
class LadderInfo:
    """One ladder across the cluster."""

    name: str
    state: str
    scheduler: str
    waiting_bots: int
    running_matches: int
    assigned: int
    stalled: str
    changed_by: str
    reason: str
    players: int
    capped: int = 0  # groups of the waiting bots at their meeting cap (its scheduler's count)
    groups: int = 0  # groups they could form


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    referees: tuple[RefereeInfo, ...]
    ladders: tuple[LadderInfo, ...]

    @property
    def problems(self) -> list[str]:
        """What an operator should look at (empty when all is well)."""
        out = [f"ladder {x.name}: {x.stalled}" for x in self.ladders if x.stalled]
        out += [f"referee {r.id} is draining" for r in self.referees if r.live and r.draining]
        return out


def read_status(store: Store) -> ClusterStatus:
    """(Blocking.) The cluster now, from the store."""
    with store.transaction() as s:
        now = db_now(s)
        rows = list(s.scalars(select(RefereeRow).order_by(RefereeRow.id)))
        held = presence.held_keys(s)
        live = {
            r.id
            for r in rows
            if r.lease_until > now and (held is None or r.lock_key is None or r.lock_key in held)
        }
        referees = [_referee(r, r.id in live, now) for r in rows]
        referees.sort(key=lambda r: (not r.live, r.id))
        ladders = _ladders(s, [r for r in rows if r.id in live])
    return ClusterStatus(tuple(referees), tuple(ladders))


def _referee(row: RefereeRow, live: bool, now: float) -> RefereeInfo:
    status: dict[str, Any] = row.status or {}
    return RefereeInfo(
        id=row.id,
        address=row.address or "",
        live=live,
        lease_age_s=max(0.0, now - (row.lease_until - float(status.get("lease_s", 0) or 0))),
        draining=bool(row.draining),
        running_matches=int(status.get("running", 0)),
        capacity=int(status.get("capacity", 0)),
        streams=int(status.get("streams", 0)),
        waiting=int(status.get("waiting", 0)),
        admits=bool(status.get("admits", False)),
        status_age_s=now - row.status_at if row.status_at is not None else -1.0,
        version=str(status.get("version", "")),
    )


def _ladders(s: Session, live: list[RefereeRow]) -> list[LadderInfo]:
    published: dict[str, list[dict[str, Any]]] = {}
    for r in live:
        for name, info in ((r.status or {}).get("ladders") or {}).items():
            published.setdefault(name, []).append({**info, "_referee": r.id})
    states = {x.ladder: x for x in s.scalars(select(LadderStateRow))}
    hosts = dict(s.execute(select(LadderHostRow.ladder, LadderHostRow.referee_id)).all())
    schedulers = _schedulers(s, live, sorted(published), hosts)
    running = dict(
        s.execute(
            select(MatchRow.ladder, func.count())
            .where(MatchRow.status == "running")
            .group_by(MatchRow.ladder)
        ).all()
    )
    assigned = dict(
        s.execute(select(AssignmentRow.ladder, func.count()).group_by(AssignmentRow.ladder)).all()
    )
    ticketed = dict(
        s.execute(
            select(TicketRow.ladder, func.count(func.distinct(TicketRow.bot_id)))
            .where(TicketRow.referee_id.in_([r.id for r in live]))
            .group_by(TicketRow.ladder)
        ).all()
    )
    out = []
    for name in sorted(published):
        infos = published[name]
        state = states.get(name)
        scheduler = schedulers.get(name, "")
        why = next((i.get("stalled", "") for i in infos if i["_referee"] == scheduler), "")
        capped, groups = next(
            (i.get("capped") or (0, 0) for i in infos if i["_referee"] == scheduler), (0, 0)
        )
        if state is not None and state.state != "running":
            why = f"stopped by {state.changed_by or 'an operator'}" + (
                f": {state.reason}" if state.reason else ""
            )
        elif not scheduler:
            why = "no live referee schedules it"
        shared = any(i.get("shared") for i in infos)
        out.append(
            LadderInfo(
                name=name,
                state=state.state if state is not None else "running",
                scheduler=scheduler,
                waiting_bots=int(
                    ticketed.get(name, 0) if shared else sum(i.get("waiting", 0) for i in infos)
                ),
                running_matches=int(running.get(name, 0)),
                assigned=int(assigned.get(name, 0)),
                stalled=why,
                changed_by=state.changed_by if state is not None else "",
                reason=state.reason if state is not None else "",
                players=int(infos[0].get("players", 0)),
                capped=int(capped),
                groups=int(groups),
            )
        )
    return out


def _schedulers(
    s: Session, live: list[RefereeRow], ladders: list[str], hosts: dict[str, str]
) -> dict[str, str]:
    """Which live referee schedules each ladder: the holder of its advisory lock on
    PostgreSQL (matched to a referee by the backend holding its presence lock), else the one
    whose host row it is."""
    holders = presence.scheduler_holders(s)
    alive = {r.id for r in live}
    if holders is None or not any(r.lock_key for r in live):
        return {name: host for name, host in hosts.items() if host in alive}
    by_pid = presence.presence_pids(s)
    key_of = {r.lock_key: r.id for r in live if r.lock_key is not None}
    out = {}
    for name in ladders:
        pid = holders.get(presence.ladder_key(name))
        owner = next((key_of[k] for k, p in by_pid.items() if p == pid and k in key_of), "")
        if owner:
            out[name] = owner
        elif hosts.get(name) in alive:
            out[name] = hosts[name]
    return out
