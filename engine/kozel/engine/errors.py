"""Errors: a bot's illegal action (with its vector error code) and a deal that cannot be set up."""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Why an action was refused, in the order the checks are made."""

    MALFORMED = "MALFORMED"
    WRONG_DECISION = "WRONG_DECISION"
    DECLARATION_NOT_ALLOWED = "DECLARATION_NOT_ALLOWED"
    NOT_YOUR_TURN = "NOT_YOUR_TURN"
    DUPLICATE_CARD = "DUPLICATE_CARD"
    CARD_NOT_IN_HAND = "CARD_NOT_IN_HAND"
    WRONG_CARD_COUNT = "WRONG_CARD_COUNT"
    MIXED_SUITS = "MIXED_SUITS"
    LEAD_SIZE_NOT_ALLOWED = "LEAD_SIZE_NOT_ALLOWED"
    DOES_NOT_BEAT = "DOES_NOT_BEAT"
    NOT_A_COMBINATION = "NOT_A_COMBINATION"


class IllegalAction(ValueError):
    """An action the rules refuse. ``code`` says which check failed, the message why."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class SetupError(ValueError):
    """A deal or match that cannot be set up (bad deck, player count, missing trump index)."""
