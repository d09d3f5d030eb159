# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Stop-string matching over streamed text."""

from __future__ import annotations

from collections.abc import Sequence

from deepinfer_recipe.parsing.markers import find_earliest, partial_suffix_len


class StopStringMatcher:
    """Finds the first stop string in a text stream, holding back possible partial matches.

    The match is the occurrence that completes first (earliest end; ties: the longest), the
    one a token-by-token stream meets first, so the result does not depend on how the text
    is chunked. Text is withheld only while its tail is a proper prefix of some stop string:
    no stop string, nor the start of one, is ever released, and released text is never
    taken back. Each call scans only the withheld tail plus the new text.

    Args:
        stops: Stop strings (empty strings are ignored).
        include_stop_str_in_output: Release the matched stop string too (it ends the text).

    Attributes:
        matched: The stop string that matched, or None.

    Raises:
        ValueError: a stop that is not a string (names ``stop``).
    """

    def __init__(self, stops: Sequence[str], include_stop_str_in_output: bool = False) -> None:
        if any(not isinstance(s, str) for s in stops):
            raise ValueError("stop: every stop sequence must be a string")
        self.stops = tuple(s for s in stops if s)
        self.include_stop_str_in_output = include_stop_str_in_output
        self._buf = ""
        self.matched: str | None = None

    def push(self, text: str) -> str:
        """Add text; return the part that can be released ("" once a stop matched).

        The call that finds the match returns the text up to the stop string (or through
        it, with ``include_stop_str_in_output``) and sets ``matched``.
        """
        if self.matched is not None:
            return ""
        self._buf += text
        found = find_earliest(self._buf, self.stops)
        if found is not None:
            pos, self.matched = found
            end = pos + len(self.matched) if self.include_stop_str_in_output else pos
            out, self._buf = self._buf[:end], ""
            return out
        ready = len(self._buf) - partial_suffix_len(self._buf, self.stops)
        out, self._buf = self._buf[:ready], self._buf[ready:]
        return out

    def flush(self) -> str:
        """End of stream: release held-back text (no stop matched)."""
        out, self._buf = self._buf, ""
        return "" if self.matched is not None else out
