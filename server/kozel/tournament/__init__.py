"""Tournaments as pure functions: the event's definition (:mod:`.spec`), its pairings (round
robin, gauntlet, Swiss, knockout brackets), the schedule and state computed from the seed and
the results so far (:mod:`.director`), standings with tie-breaks, crosstables with intervals and
the winners by each rule (:mod:`.standings`, :mod:`.crosstable`):

- :mod:`.spec`: the file's models (pydantic), errors naming the field;
- :mod:`.games`: a game's key, seats by rotation and seed; points from side ranks;
- :mod:`.formats`: round robin (circle method; every table at 3 and 4) and gauntlet;
- :mod:`.swiss`: Swiss pairing (score groups, no repeats, seat balance, backtracking);
- :mod:`.knockout`: single and double elimination brackets, byes, placings;
- :mod:`.standings`: pairing outcomes, scores and tie-breaks;
- :mod:`.crosstable`: cells with intervals and P(row beats column), the winner rules;
- :mod:`.luck`: luck-corrected standings and crosstable cells (docs/luck.md);
- :mod:`.intervals`: a mean with its 95 % interval clustered by seed group (also the ladder's);
- :mod:`.director`: ``run(spec, seed, results)``: stages, rounds, pending games, withdrawals;
- :mod:`.assign`: the scheduler's plan (which pending games start where, and their bots);
- :mod:`.report`: an event as JSON (the command line's and the API's).

No I/O and no clock: the store keeps the definition, the seed and the games' results, and
everything else is recomputed from them, so a restarted referee (or the web, or ``kozel
tournament show``) sees the same event. The referee's side is
:mod:`kozel.server.tournament_runtime`; the SQL is :mod:`kozel.ladder.tournament_store`.
"""
