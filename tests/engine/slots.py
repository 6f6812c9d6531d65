"""The attributes of a :class:`Deal`, for tests that compare whole states."""

from __future__ import annotations

from kozel.engine import Deal

DEAL_SLOTS: tuple[str, ...] = vars(Deal).get("__slots__") or vars(Deal)["__mypyc_attrs__"]
"""The deal's slots; compiled by mypyc (a native class has no ``__slots__``), the same names in
the same order, as mypyc records them."""
