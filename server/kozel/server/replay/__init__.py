"""Replays: the self-contained record of one match (``proto/kozel/v1/replay.proto``).

One module per concern: :mod:`.build` makes a replay from an engine match, :mod:`.file` is the
``.kzr`` file format (gzip, atomic writes), :mod:`.archive` names, keeps and seals the replays
of a referee, :mod:`.verify` re-plays one with the engine and :mod:`.render` shows it as text.
"""
