"""``kozel demo``: placeholder until the referee exists (replaced by the referee issue)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="play a small demo ladder")
    p.set_defaults(func=lambda args: 0)
