# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""A rendered prompt as a list of template (control) and client (content) segments.

Encoders never paste client text into a string that is later tokenised with special
tokens on. They emit segments instead: control segments are template text where special
tokens are recognised; content segments (everything a client supplied) are encoded as
plain text, so ``<｜User｜>`` typed by a user stays ordinary characters
(see :mod:`deepinfer_recipe.tokenization`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    """A run of prompt text.

    Args:
        text: The characters.
        control: True for template text (special tokens allowed), False for client content.
    """

    text: str
    control: bool


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt.

    Args:
        segments: Non-empty segments in order; neighbours differ in ``control``.
    """

    segments: tuple[Segment, ...]

    @property
    def text(self) -> str:
        """The prompt as one string (what a text-only engine would tokenise)."""
        return "".join(seg.text for seg in self.segments)

    def content_text(self) -> str:
        """All client-supplied characters, concatenated (useful in tests)."""
        return "".join(seg.text for seg in self.segments if not seg.control)


class PromptBuilder:
    """Collects segments, merging neighbours of the same kind and dropping empty ones."""

    def __init__(self) -> None:
        self._segments: list[Segment] = []

    def control(self, text: str) -> PromptBuilder:
        """Append template text."""
        return self._add(text, True)

    def content(self, text: str) -> PromptBuilder:
        """Append client-supplied text."""
        return self._add(text, False)

    def extend(self, prompt: Prompt) -> PromptBuilder:
        """Append every segment of another prompt."""
        for seg in prompt.segments:
            self._add(seg.text, seg.control)
        return self

    def build(self) -> Prompt:
        """The prompt built so far."""
        return Prompt(tuple(self._segments))

    def _add(self, text: str, control: bool) -> PromptBuilder:
        if not text:
            return self
        if self._segments and self._segments[-1].control == control:
            last = self._segments[-1]
            self._segments[-1] = Segment(last.text + text, control)
        else:
            self._segments.append(Segment(text, control))
        return self
