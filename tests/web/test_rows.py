"""The web's rows are declared once: the API serves the models its queries return, and a
rating's figures are the store's own, by name."""

from __future__ import annotations

import dataclasses

from kozel.ladder.store import Standing as StoreStanding
from kozel.web import api, rows


def test_a_ratings_figures_are_the_stores_standing_fields() -> None:
    store_fields = {f.name for f in dataclasses.fields(StoreStanding)} - {"name"}
    assert set(rows.RatingFigures.model_fields) == store_fields
    line = StoreStanding("b", 1.5, 25.0, 8.0, 3, 2, 4.5, 1, 0)
    standing = rows.Standing.of(7, line)
    assert (standing.rank, standing.bot, standing.avg_penalty) == (7, "b", 4.5)


def test_the_api_declares_no_row_of_its_own() -> None:
    declared = {
        name
        for name, value in vars(api).items()
        if isinstance(value, type) and value.__module__ == api.__name__
    }
    assert declared and not declared & set(vars(rows)), "a row declared in both modules"
    assert api.BotPage.__mro__[1] is rows.BotInfo  # the page adds lists to the bot's row
