# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""A protocol-neutral chat request: the conversation plus how to generate the reply."""

from __future__ import annotations

from dataclasses import dataclass, field

from deepinfer_recipe.conversation import Conversation

TOOL_CHOICE_MODES = ("auto", "none", "required", "named")


@dataclass(frozen=True)
class ToolChoice:
    """Whether and which tool the model must call.

    Args:
        mode: ``auto`` (model decides), ``none``, ``required`` (some tool), ``named``.
        name: The tool for ``named``.

    Raises:
        ValueError: unknown mode, or ``named`` without a name.
    """

    mode: str = "auto"
    name: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in TOOL_CHOICE_MODES:
            raise ValueError(f"tool_choice: unknown mode {self.mode!r}")
        if self.mode == "named" and not self.name:
            raise ValueError("tool_choice.name: a named tool choice needs a tool name")


@dataclass(frozen=True)
class GenerationOptions:
    """Sampling and length settings (None = engine default).

    Attributes:
        max_tokens: Output token limit.
        temperature: Softmax temperature (0 = greedy).
        top_p: Nucleus mass in (0, 1].
        top_k: Top-k cut-off (Anthropic).
        seed: Per-request seed.
        stop: Stop strings (matched in the answer text, excluded from it).
        n: Number of choices.
        presence_penalty: OpenAI presence penalty.
        frequency_penalty: OpenAI frequency penalty.
        logprobs: Return log-probabilities of output tokens.
        top_logprobs: Alternatives per position (0..20).
    """

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    n: int = 1
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logprobs: bool = False
    top_logprobs: int | None = None


@dataclass(frozen=True)
class ChatRequest:
    """A parsed API request.

    Attributes:
        protocol: ``chat_completions``, ``responses`` or ``messages``.
        model: Model name as the client sent it.
        conversation: The conversation to render.
        options: Generation settings.
        tool_choice: Tool policy.
        parallel_tool_calls: Whether several calls may be made in one turn.
        stream: Answer with server-sent events.
        include_usage: Chat Completions ``stream_options.include_usage``.
    """

    protocol: str
    model: str
    conversation: Conversation
    options: GenerationOptions = field(default_factory=GenerationOptions)
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    parallel_tool_calls: bool = True
    stream: bool = False
    include_usage: bool = False
