"""Kozel Arena on the web: a read-only HTTP JSON API, pages and the replay viewer.

``kozel serve`` runs it beside the referee (:func:`kozel.web.child.start_in_referee`);
``kozel web`` runs it on its own over a store and a replay folder. The app is
:mod:`kozel.web.app`, served by :mod:`kozel.web.serving`; its data come from
:mod:`kozel.web.sources` (live matches, replays) and :mod:`kozel.web.queries` (the store) as
the typed rows of :mod:`kozel.web.rows`, which the API serves as they are.
"""
