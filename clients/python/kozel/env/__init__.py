"""Kozel for training and self-play, the same rules and messages as the arena.

- :mod:`kozel.env.harness`: ``kozel.sdk.Bot`` objects play matches in-process on the referee's
  own seat protocol (:func:`~kozel.env.harness.play_match`).
- :mod:`kozel.env.aec`: a PettingZoo AEC environment (``kozel.env.aec.env(...)``).
- :mod:`kozel.env.single`: a Gymnasium environment for one seat against chosen opponents.
- :mod:`kozel.env.openspiel`: Kozel as an OpenSpiel game (``pyspiel.load_game("kozel")``).

The observation tensor, action mask and action space are the SDK's
(:mod:`kozel.sdk.encoding`), so a policy trained here plays over gRPC unchanged
(``kozel bot --policy``). Nothing here does I/O or reads a clock. PettingZoo, Gymnasium,
OpenSpiel and numpy come with the ``env`` extra: ``pip install 'kozel-arena[env]'``.
"""
