"""Ladder data and policy: bot accounts, the persistent store, ratings, the scheduler and ladder
files. Nothing here knows the referee; :mod:`kozel.server.ladder_runtime` runs a ladder in one."""
