"""Tournaments as pure functions: the event's definition (:mod:`.spec`), its pairings (round
robin, gauntlet, Swiss, knockout brackets), the schedule and state computed from the seed and
the results so far (:mod:`.director`), standings with tie-breaks, crosstables with intervals and
the winners by each rule (:mod:`.standings`, :mod:`.crosstable`).

No I/O and no clock: the store keeps the definition, the seed and the games' results, and
everything else is recomputed from them, so a restarted referee (or the web, or ``kozel
tournament show``) sees the same event. The referee's side is
:mod:`kozel.server.tournament_runtime`; the SQL is :mod:`kozel.ladder.tournament_store`.
"""
