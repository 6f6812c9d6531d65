"""Every replay of an event as one zip archive (with the event's results as JSON), for
``kozel tournament replays`` and the web's download. Replays still sealed are left out."""

from __future__ import annotations

import json
import zipfile
from typing import IO, Any

from kozel.ladder import tournament_store as ts
from kozel.ladder.store import Store
from kozel.server.replay.archive import ReplayArchive
from kozel.tournament.report import event_json


def results_json(view: ts.View) -> dict[str, Any]:
    """The event as JSON (:func:`kozel.tournament.report.event_json`) from the store's view."""
    games = {
        k: {
            "status": g.status,
            "match_id": g.match_id,
            "host_id": g.host_id,
            "attempts": g.attempts,
            "replay": g.status == "finished" and not g.sealed,
        }
        for k, g in view.games.items()
    }
    out = event_json(view.stored.spec, view.state, games, view.stored.seed)
    out["replays"] = sorted(g.match_id for g in view.games.values() if games[g.key]["replay"])
    return out


def write(store: Store, name: str, archive: ReplayArchive, out: IO[bytes]) -> int:
    """(Blocking.) Write the archive of event ``name`` to ``out``; returns the replays in it."""
    view = ts.view(store, name)
    if view is None:
        raise KeyError(name)
    count = 0
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as zf:  # .kzr is gzip'd
        for key, match_id, _ in ts.replays_of(store, name):
            data = archive.read_bytes(match_id) or store.replay_bytes(match_id)
            if data is not None:
                zf.writestr(f"{name}/replays/{key}-{match_id}.kzr", data)
                count += 1
        zf.writestr(f"{name}/results.json", json.dumps(results_json(view), indent=1))
    return count
