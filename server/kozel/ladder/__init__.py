"""Ladders: bot accounts, the persistent store, ratings (the scheduler comes next)."""
