"""Actions a seat can take and the decisions a deal can await."""

from __future__ import annotations

from enum import StrEnum
from typing import Final, NamedTuple

from kozel.engine.cards import codes, mask_of_codes


class Decision(StrEnum):
    """What the deal awaits now."""

    LEAD = "lead"
    RESPOND = "respond"
    DECLARE = "declare"
    NONE = "none"


class ActionKind(StrEnum):
    LEAD = "lead"
    BEAT = "beat"
    DISCARD = "discard"
    DECLARE = "declare"
    PASS = "pass"


class Combo(StrEnum):
    """A four-card combination that can be declared."""

    MOSCOW = "moscow"
    MOLODKA = "molodka"


DECISION_OF_KIND: Final = {
    ActionKind.LEAD: Decision.LEAD,
    ActionKind.BEAT: Decision.RESPOND,
    ActionKind.DISCARD: Decision.RESPOND,
    ActionKind.DECLARE: Decision.DECLARE,
    ActionKind.PASS: Decision.DECLARE,
}


class Action(NamedTuple):
    """One decision of one seat: a kind, the cards as a mask, and the combination if declared.

    For ``DECLARE`` the cards are the whole hand; for ``PASS`` they are empty.
    """

    kind: ActionKind
    cards: int = 0
    combo: Combo | None = None

    @property
    def codes(self) -> list[str]:
        """The cards as codes in canonical order."""
        return codes(self.cards)

    def __str__(self) -> str:
        if self.kind == ActionKind.PASS:
            return "pass"
        if self.kind == ActionKind.DECLARE:
            return f"declare {self.combo} ({' '.join(self.codes)})"
        return f"{self.kind} {' '.join(self.codes)}"

    def to_json(self) -> dict[str, object]:
        """The action in the vector format (``{"lead": [...]}``, ``{"pass": true}`` ...)."""
        if self.kind == ActionKind.PASS:
            return {"pass": True}
        if self.kind == ActionKind.DECLARE:
            return {"declare": str(self.combo)}
        return {str(self.kind): self.codes}

    @staticmethod
    def lead(*card_codes: str) -> Action:
        return Action(ActionKind.LEAD, mask_of_codes(card_codes))

    @staticmethod
    def beat(*card_codes: str) -> Action:
        return Action(ActionKind.BEAT, mask_of_codes(card_codes))

    @staticmethod
    def discard(*card_codes: str) -> Action:
        return Action(ActionKind.DISCARD, mask_of_codes(card_codes))


PASS: Final = Action(ActionKind.PASS)
