"""Kozel analysis: every decision of a deal scored. Pure (no I/O, no clock); it imports only
the engine.

:mod:`~kozel.analysis.solver` values every legal action with the cards open (the open-hand,
or "double dummy", solver); :mod:`~kozel.analysis.endgame` solves the last tricks for any
reward (the ``ismcts`` house bot's); the modules run compiled by mypyc when `make setup`
built them from the sources as they are now (:mod:`kozel.analysis.native`).
"""

from kozel.analysis import native as _native

if _native.wanted():  # the compiled solvers (kozel.analysis.native)
    __path__.insert(0, str(_native.FOLDER))
