# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Forwarded: an attribute of `LookupAssist` read from, and written to, the proposer it wraps. Device-free."""

from __future__ import annotations


class Forwarded:
    """A data descriptor: reads and writes of the attribute go to the wrapped proposer (`inner`).

    Core asks for `wants_features` and `observe_step` every step and the step logger for the
    counters: through `__getattr__` each read first fails the normal lookup (0.55 us on the H200's
    host against 0.04; session 30's helper, ~5 us a step). A name the inner proposer lacks raises
    AttributeError as it would there (`getattr(proposer, name, None)` still sees None)."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet   # the engine calls it inside a quiet stretch: it does not end one held

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        state = obj.__dict__
        held = state["_held"]
        if not (self.quiet and held.quiet):
            held.flush()   # (DSpark hears of its dormant steps before anything else)
        return getattr(state["inner"], self.name)

    def __set__(self, obj, value) -> None:
        setattr(obj.__dict__["inner"], self.name, value)

    def __delete__(self, obj) -> None:
        delattr(obj.__dict__["inner"], self.name)
