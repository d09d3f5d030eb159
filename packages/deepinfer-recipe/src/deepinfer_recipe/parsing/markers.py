# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Marker search helpers shared by the streaming parsers.

The parsers never look back: they emit everything except the shortest tail that could
still grow into a marker (the longest suffix that is a proper prefix of some marker).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass


def find_earliest(buf: str, markers: Sequence[str]) -> tuple[int, str] | None:
    """Find the marker occurrence that completes first in ``buf``.

    "First" is the earliest *end* (ties: the earliest start, i.e. the longest marker). This
    is the match a stream sees first however the text is chunked, so whole-text and
    streamed parses agree.

    Args:
        buf: Text to search.
        markers: Candidate marker strings (non-empty).

    Returns:
        ``(start, marker)`` of that occurrence, or None.
    """
    best: tuple[int, int, str] | None = None
    for marker in markers:
        pos = buf.find(marker)
        if pos < 0:
            continue
        key = (pos + len(marker), pos, marker)
        if best is None or key[:2] < best[:2]:
            best = key
    return None if best is None else (best[1], best[2])


def partial_suffix_len(buf: str, markers: Sequence[str]) -> int:
    """Length of the longest suffix of ``buf`` that is a proper prefix of a marker.

    Args:
        buf: Text seen so far.
        markers: Candidate marker strings.

    Returns:
        Number of trailing characters that must be held back (0 if none).
    """
    best = 0
    for marker in markers:
        limit = min(len(marker) - 1, len(buf))
        for k in range(limit, best, -1):
            if marker.startswith(buf[len(buf) - k :]):
                best = k
                break
    return best


def json_escape(text: str) -> str:
    """JSON string-body escaping of ``text`` (no surrounding quotes).

    Escaping is per character, so escaping chunks and concatenating equals escaping the
    whole text: streamed fragments stay a prefix of the final JSON.
    """
    return json.dumps(text, ensure_ascii=False)[1:-1]


@dataclass
class CallCounter:
    """Hands out tool-call ordinals and ids for one output.

    Args:
        make_id: ``index -> id`` (must be deterministic per index).
    """

    make_id: Callable[[int], str]
    next_index: int = 0

    def new_call(self) -> tuple[int, str]:
        """Return ``(index, id)`` for the next call."""
        index = self.next_index
        self.next_index += 1
        return index, self.make_id(index)
