# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Stop-string matching over streamed text (stop text excluded from the output)."""

from __future__ import annotations

from collections.abc import Sequence

from deepinfer_recipe.parsing.markers import find_earliest, partial_suffix_len


class StopStringMatcher:
    """Finds the first stop string in a text stream, holding back possible partial matches.

    Args:
        stops: Stop strings (empty strings are ignored).

    Raises:
        ValueError: a stop that is not a string.
    """

    def __init__(self, stops: Sequence[str]) -> None:
        if any(not isinstance(s, str) for s in stops):
            raise ValueError("stop: every stop sequence must be a string")
        self.stops = tuple(s for s in stops if s)
        self._buf = ""
        self.matched: str | None = None

    def push(self, text: str) -> str:
        """Add text; return the part that can be emitted. After a match returns ""."""
        if self.matched is not None:
            return ""
        self._buf += text
        found = find_earliest(self._buf, self.stops)
        if found is not None:
            pos, self.matched = found
            out, self._buf = self._buf[:pos], ""
            return out
        ready = len(self._buf) - partial_suffix_len(self._buf, self.stops)
        out, self._buf = self._buf[:ready], self._buf[ready:]
        return out

    def flush(self) -> str:
        """End of stream: release held-back text (no stop matched)."""
        out, self._buf = self._buf, ""
        return "" if self.matched is not None else out
