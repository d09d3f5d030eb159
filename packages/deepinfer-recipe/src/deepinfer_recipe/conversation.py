# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The single internal conversation model that every protocol and encoder shares.

A conversation is a list of messages (system, developer, user, assistant with optional
reasoning and tool calls, tool results), the tools on offer, and the few settings that
change the prompt (thinking on/off, reasoning effort, response format).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

ROLES = ("system", "developer", "user", "assistant", "tool")


@dataclass(frozen=True)
class ToolCall:
    """One function call made by the assistant.

    Args:
        id: Call id that tool results refer to (non-empty).
        name: Function name (non-empty).
        arguments: The arguments as JSON object text (as OpenAI sends them).

    Raises:
        ValueError: empty id or name, or arguments that are not a JSON object.
    """

    id: str
    name: str
    arguments: str = "{}"

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError("tool_call.id: must be a non-empty string")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("tool_call.name: must be a non-empty string")
        if not isinstance(self.arguments, str):
            raise ValueError("tool_call.arguments: must be JSON text")
        try:
            parsed = json.loads(self.arguments)
        except ValueError as err:
            raise ValueError(f"tool_call.arguments: not valid JSON ({err})") from None
        if not isinstance(parsed, dict):
            raise ValueError("tool_call.arguments: must be a JSON object")

    def arguments_dict(self) -> dict:
        """Return the arguments parsed into a dict."""
        return json.loads(self.arguments)


@dataclass(frozen=True)
class ToolSpec:
    """A function the model may call.

    Args:
        name: Function name.
        description: Free text shown to the model.
        parameters: JSON schema of the arguments object.
    """

    name: str
    description: str = ""
    parameters: dict = field(default_factory=lambda: {"type": "object", "properties": {}})

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("tool.name: must be a non-empty string")
        if not isinstance(self.description, str):
            raise ValueError("tool.description: must be a string")
        if not isinstance(self.parameters, dict):
            raise ValueError("tool.parameters: must be a JSON schema object")

    def function_dict(self) -> dict:
        """The OpenAI ``function`` object: ``{"name", "description", "parameters"}``."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True)
class Message:
    """One turn of a conversation.

    Args:
        role: One of ``system, developer, user, assistant, tool``.
        content: The text of the turn ("" when absent).
        reasoning: Assistant chain of thought (``reasoning_content``), or None.
        tool_calls: Calls made by an assistant turn.
        tool_call_id: For ``tool`` turns: the id of the call this result answers.
        name: Optional participant or tool name.
        is_error: For ``tool`` turns: the tool reported an error.

    Raises:
        ValueError: unknown role, non-string content, tool calls on a non-assistant
            turn, or a tool turn without ``tool_call_id``.
    """

    role: str
    content: str = ""
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role: unknown role {self.role!r} (expected one of {ROLES})")
        if not isinstance(self.content, str):
            raise ValueError("content: must be a string")
        if self.reasoning is not None and not isinstance(self.reasoning, str):
            raise ValueError("reasoning: must be a string or None")
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"tool_calls: only assistant turns carry tool calls, not {self.role}")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("tool_call_id: a tool result needs the id of the call it answers")


@dataclass(frozen=True)
class Conversation:
    """A whole chat: messages plus the settings that shape the prompt.

    Args:
        messages: The turns, oldest first (at least one).
        tools: Functions on offer.
        thinking: Ask the model to reason before answering (thinking mode).
        reasoning_effort: ``low|high|xhigh|max`` or an int 1..100 (format dependent), or None.
        response_format: A JSON schema (or ``{"type": "json_object"}``) the reply must follow.

    Raises:
        ValueError: no messages, or a tool result whose ``tool_call_id`` matches no call.
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    thinking: bool = False
    reasoning_effort: str | int | None = None
    response_format: dict | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(self.messages))
        object.__setattr__(self, "tools", tuple(self.tools))
        if not self.messages:
            raise ValueError("messages: a conversation needs at least one message")
        known_ids: set[str] = set()
        for i, msg in enumerate(self.messages):
            if not isinstance(msg, Message):
                raise ValueError(f"messages[{i}]: must be a Message")
            known_ids.update(call.id for call in msg.tool_calls)
            if msg.role == "tool" and msg.tool_call_id not in known_ids:
                raise ValueError(f"messages[{i}].tool_call_id: {msg.tool_call_id!r} matches no earlier tool call")
