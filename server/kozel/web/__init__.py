"""Kozel Arena on the web: a read-only HTTP JSON API, pages and the replay viewer.

``kozel serve`` runs it inside the referee (:func:`kozel.web.child.start_in_referee`);
``kozel web`` runs it on its own over a store and a replay folder.
"""
