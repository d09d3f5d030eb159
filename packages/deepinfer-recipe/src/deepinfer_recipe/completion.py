# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The finished assistant turn, protocol-neutral: text, reasoning, calls, why it ended, usage."""

from __future__ import annotations

from dataclasses import dataclass

from deepinfer_recipe.conversation import ToolCall
from deepinfer_recipe.events import ParsedOutput

ENGINE_FINISH = ("stop", "length", "abort")
FINISH_REASONS = ("stop", "length", "stop_sequence", "tool_calls")


@dataclass(frozen=True)
class Usage:
    """Token counts of one request.

    Args:
        prompt_tokens: Prompt length in tokens (cached ones included).
        completion_tokens: Generated tokens (reasoning included).
        cached_tokens: Prompt tokens served from the prefix cache.
        reasoning_tokens: Generated tokens spent on reasoning.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ChatResult:
    """One finished choice.

    Attributes:
        content: Answer text.
        reasoning: Chain of thought ("" when none).
        tool_calls: Complete, well-formed calls.
        finish_reason: ``stop`` (end of turn), ``length`` (token limit), ``stop_sequence``
            (a stop string matched; see ``stop_sequence``) or ``tool_calls``.
        stop_sequence: The matched stop string, or None.
        usage: Token counts.
        index: Choice index (for ``n > 1``).
    """

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    stop_sequence: str | None = None
    usage: Usage = Usage()
    index: int = 0

    def __post_init__(self) -> None:
        if self.finish_reason not in FINISH_REASONS:
            raise ValueError(f"finish_reason: {self.finish_reason!r} not in {FINISH_REASONS}")

    @classmethod
    def from_parsed(
        cls, parsed: ParsedOutput, engine_finish: str, usage: Usage = Usage(), index: int = 0
    ) -> ChatResult:
        """Build the result of a parsed output.

        Rules: ``length`` wins even inside a tool call (a truncated call is never reported
        as ``tool_calls``); then a matched stop string; then ``tool_calls`` when at least
        one complete call was parsed; else ``stop``.

        Args:
            parsed: Accumulated parser events.
            engine_finish: Why generation ended: ``stop`` (EOS / stop string), ``length``, ``abort``.
            usage: Token counts.
            index: Choice index.

        Raises:
            ValueError: unknown ``engine_finish``.
        """
        if engine_finish not in ENGINE_FINISH:
            raise ValueError(f"engine_finish: {engine_finish!r} not in {ENGINE_FINISH}")
        calls = tuple(parsed.tool_calls)
        if engine_finish == "length":
            reason = "length"
        elif parsed.stop is not None:
            reason = "stop_sequence"
        elif calls:
            reason = "tool_calls"
        else:
            reason = "stop"
        return cls(parsed.content, parsed.reasoning, calls, reason, parsed.stop, usage, index)
