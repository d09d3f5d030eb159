# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Anthropic Messages: requests in, ``message`` responses and SSE events out."""

from __future__ import annotations

import json

from deepinfer_recipe.completion import ChatResult
from deepinfer_recipe.conversation import Conversation, Message, ToolCall, ToolSpec
from deepinfer_recipe.errors import RequestError, field_error
from deepinfer_recipe.events import ContentDelta, Event, ReasoningDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from deepinfer_recipe.protocols import fields as F
from deepinfer_recipe.protocols import request_parts as P
from deepinfer_recipe.protocols.sse import sse_frame
from deepinfer_recipe.request import ChatRequest, GenerationOptions, ToolChoice

MAX_STOP = 16
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "stop_sequence": "stop_sequence", "tool_calls": "tool_use"}


def _blocks(content, path: str) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise field_error(path, "expected a string or a list of content blocks")
    for j, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise field_error(f"{path}[{j}].type", "every content block needs a string type")
    return content


def _result_text(content, path: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise field_error(path, "expected a string or a list of text blocks")
    texts = []
    for j, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise field_error(f"{path}[{j}].type", "only text blocks are supported in tool results")
        texts.append(F.get(block, "text", str, f"{path}[{j}]"))
    return "\n\n".join(texts)


def _user_turn(blocks: list[dict], path: str) -> list[Message]:
    out: list[Message] = []
    texts: list[str] = []
    for j, block in enumerate(blocks):
        bpath = f"{path}[{j}]"
        kind = block["type"]
        if kind == "text":
            texts.append(F.get(block, "text", str, bpath))
        elif kind == "tool_result":
            use_id = F.non_empty_str(block, "tool_use_id", bpath)
            text = _result_text(block.get("content"), f"{bpath}.content")
            is_error = F.get(block, "is_error", bool, bpath, False)
            out.append(Message("tool", text, tool_call_id=use_id, is_error=is_error))
        else:
            raise field_error(f"{bpath}.type", f"unsupported content block {kind!r} in a user turn")
    if texts:
        out.append(Message("user", "".join(texts)))
    return out


def _assistant_turn(blocks: list[dict], path: str) -> Message:
    texts, thoughts, calls = [], [], []
    for j, block in enumerate(blocks):
        bpath = f"{path}[{j}]"
        kind = block["type"]
        if kind == "text":
            texts.append(F.get(block, "text", str, bpath))
        elif kind == "thinking":
            thoughts.append(F.get(block, "thinking", str, bpath))
        elif kind == "redacted_thinking":
            continue
        elif kind == "tool_use":
            use_id = F.non_empty_str(block, "id", bpath)
            args = F.get(block, "input", dict, bpath)
            calls.append(ToolCall(use_id, F.get(block, "name", str, bpath), json.dumps(args, ensure_ascii=False)))
        else:
            raise field_error(f"{bpath}.type", f"unsupported content block {kind!r} in an assistant turn")
    return Message("assistant", "".join(texts), "".join(thoughts) if thoughts else None, tuple(calls))


def _tool(tool, path: str) -> ToolSpec:
    """``{"type"?: "custom", "name", "description", "input_schema"}`` (no server tools)."""
    if not isinstance(tool, dict):
        raise field_error(path, "expected an object")
    if tool.get("type") not in (None, "custom"):
        raise field_error(f"{path}.type", f"server tool {tool.get('type')!r} is not supported")
    return P.tool_spec(tool, path, "input_schema", schema_required=True)


def _tool_choice(raw, tools) -> tuple[ToolChoice, bool]:
    if raw is None:
        return P.tool_choice_mode(None, tools), True
    if not isinstance(raw, dict):
        raise field_error("tool_choice", "expected an object")
    kind = F.get(raw, "type", str, "tool_choice")
    parallel = not F.get(raw, "disable_parallel_tool_use", bool, "tool_choice", False)
    if kind == "tool":
        return P.named_tool_choice(F.get(raw, "name", str, "tool_choice"), tools, "tool_choice.name"), parallel
    modes = {"auto": "auto", "any": "required", "none": "none"}
    if kind not in modes:
        raise field_error("tool_choice.type", f"unknown value {kind!r}")
    return ToolChoice(modes[kind]), parallel


def _system(raw) -> list[Message]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [Message("system", raw)] if raw else []
    if not isinstance(raw, list):
        raise field_error("system", "expected a string or a list of text blocks")
    texts = []
    for j, block in enumerate(raw):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise field_error(f"system[{j}].type", "only text blocks are supported")
        texts.append(F.get(block, "text", str, f"system[{j}]"))
    return [Message("system", "\n\n".join(texts))]


def parse_messages_request(body: bytes | str | dict) -> ChatRequest:
    """Parse and validate a ``POST /v1/messages`` body.

    Args:
        body: Raw body bytes (UTF-8 JSON), JSON text, or a parsed dict.

    Returns:
        The protocol-neutral request. Tool-result blocks become ``tool`` turns placed
        before the user text of the same turn.

    Raises:
        RequestError: any invalid field; ``.anthropic_body()`` gives the wire error.
    """
    body = F.load_body(body)
    model = F.get(body, "model", str, "")
    F.get(body, "max_tokens", int, "")  # required
    max_tokens = F.positive_int(body, "max_tokens", "")
    raw_messages = F.get(body, "messages", list, "")
    if not raw_messages:
        raise field_error("messages", "must contain at least one message")
    messages = _system(body.get("system"))
    for i, raw in enumerate(raw_messages):
        path = f"messages[{i}]"
        if not isinstance(raw, dict):
            raise field_error(path, "expected a message object")
        role = F.get(raw, "role", str, path)
        blocks = _blocks(raw.get("content"), f"{path}.content")
        if role == "user":
            messages.extend(_user_turn(blocks, f"{path}.content"))
        elif role == "assistant":
            messages.append(_assistant_turn(blocks, f"{path}.content"))
        else:
            raise field_error(f"{path}.role", f"unknown role {role!r} (expected user or assistant)")
    tools = P.tool_list(body.get("tools"), _tool)
    tool_choice, parallel = _tool_choice(body.get("tool_choice"), tools)
    thinking = F.get(body, "thinking", dict, "", {"type": "disabled"})
    kind = F.get(thinking, "type", str, "thinking")
    if kind not in ("enabled", "disabled", "adaptive"):
        raise field_error("thinking.type", f"unknown value {kind!r}")
    options = GenerationOptions(
        max_tokens=max_tokens,
        temperature=F.number(body, "temperature", "", 0.0, 1.0),
        top_p=F.number(body, "top_p", "", 0.0, 1.0),
        top_k=F.positive_int(body, "top_k", ""),
        stop=F.stop_list(body.get("stop_sequences"), "stop_sequences", MAX_STOP),
    )
    conv = P.conversation("messages", messages, tools, thinking=kind != "disabled")
    return ChatRequest(
        protocol="messages",
        model=model,
        conversation=conv,
        options=options,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        stream=F.get(body, "stream", bool, "", False),
    )


def usage_dict(result: ChatResult) -> dict:
    """Messages ``usage``: cached prompt tokens are reported apart from ``input_tokens``."""
    u = result.usage
    return {
        "input_tokens": u.prompt_tokens - u.cached_tokens,
        "output_tokens": u.completion_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": u.cached_tokens,
    }


def messages_response(result: ChatResult, *, id: str, model: str) -> dict:
    """A non-streaming ``message`` object (thinking, then text, then tool_use blocks)."""
    content: list[dict] = []
    if result.reasoning:
        content.append({"type": "thinking", "thinking": result.reasoning, "signature": ""})
    if result.content or not result.tool_calls:
        content.append({"type": "text", "text": result.content})
    for call in result.tool_calls:
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments_dict()})
    return {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": STOP_REASONS[result.finish_reason],
        "stop_sequence": result.stop_sequence,
        "usage": usage_dict(result),
    }


class MessagesStreamer:
    """Turns parser events into Messages SSE events.

    Blocks open and close in order: a ``thinking`` block for reasoning deltas, a ``text``
    block for content, one ``tool_use`` block per call (``input_json_delta`` fragments).
    A delta always targets an open block of its own type.

    Args:
        id: Message id (``msg_…``).
        model: Model name.
        prompt_tokens: Prompt length, reported in ``message_start``.
        cached_tokens: Prompt tokens served from cache.
    """

    def __init__(self, *, id: str, model: str, prompt_tokens: int = 0, cached_tokens: int = 0) -> None:
        self.id, self.model = id, model
        self.prompt_tokens, self.cached_tokens = prompt_tokens, cached_tokens
        self._block = -1
        self._open: str | None = None

    def start(self) -> bytes:
        """``message_start`` with an empty message."""
        message = {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": self.prompt_tokens - self.cached_tokens,
                "output_tokens": 0,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": self.cached_tokens,
            },
        }
        return _frame({"type": "message_start", "message": message})

    def _switch(self, kind: str, block: dict) -> bytes:
        out = self._close()
        self._block += 1
        self._open = kind
        return out + _frame({"type": "content_block_start", "index": self._block, "content_block": block})

    def _close(self) -> bytes:
        if self._open is None:
            return b""
        self._open = None
        return _frame({"type": "content_block_stop", "index": self._block})

    def _delta(self, delta: dict) -> bytes:
        return _frame({"type": "content_block_delta", "index": self._block, "delta": delta})

    def events(self, events: list[Event]) -> bytes:
        """Frames for a batch of parser events."""
        out = b""
        for ev in events:
            if isinstance(ev, ReasoningDelta) and ev.text:
                if self._open != "thinking":
                    out += self._switch("thinking", {"type": "thinking", "thinking": "", "signature": ""})
                out += self._delta({"type": "thinking_delta", "thinking": ev.text})
            elif isinstance(ev, ContentDelta) and ev.text:
                if self._open != "text":
                    out += self._switch("text", {"type": "text", "text": ""})
                out += self._delta({"type": "text_delta", "text": ev.text})
            elif isinstance(ev, ToolCallStart):
                out += self._switch("tool_use", {"type": "tool_use", "id": ev.id, "name": ev.name, "input": {}})
            elif isinstance(ev, ToolCallDelta) and ev.arguments and self._open == "tool_use":
                out += self._delta({"type": "input_json_delta", "partial_json": ev.arguments})
            elif isinstance(ev, ToolCallEnd):
                out += self._close()
        return out

    def finish(self, result: ChatResult) -> bytes:
        """Close the open block, then ``message_delta`` (stop reason, usage) and ``message_stop``."""
        out = self._close()
        delta = {"stop_reason": STOP_REASONS[result.finish_reason], "stop_sequence": result.stop_sequence}
        out += _frame(
            {"type": "message_delta", "delta": delta, "usage": {"output_tokens": result.usage.completion_tokens}}
        )
        return out + _frame({"type": "message_stop"})


def error_frame(err: RequestError) -> bytes:
    """An ``event: error`` frame in the Messages error shape."""
    return sse_frame(err.anthropic_body(), "error")


def _frame(payload: dict) -> bytes:
    return sse_frame(payload, payload["type"])


def conversation_to_anthropic(conv: Conversation) -> dict:
    """The conversation as Messages ``system`` + ``messages`` (inverse of parsing)."""
    system = "\n\n".join(m.content for m in conv.messages if m.role in ("system", "developer"))
    messages: list[dict] = []
    for msg in conv.messages:
        if msg.role == "user":
            _append_user(messages, {"type": "text", "text": msg.content})
        elif msg.role == "tool":
            block = {"type": "tool_result", "tool_use_id": msg.tool_call_id, "content": msg.content}
            if msg.is_error:
                block["is_error"] = True
            _append_user(messages, block)
        elif msg.role == "assistant":
            blocks: list[dict] = []
            if msg.reasoning is not None:
                blocks.append({"type": "thinking", "thinking": msg.reasoning, "signature": ""})
            if msg.content:
                blocks.append({"type": "text", "text": msg.content})
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments_dict()} for c in msg.tool_calls
            ]
            messages.append({"role": "assistant", "content": blocks})
    out: dict = {"messages": messages}
    if system:
        out["system"] = system
    return out


def _append_user(messages: list[dict], block: dict) -> None:
    if messages and messages[-1]["role"] == "user":
        messages[-1]["content"].append(block)
    else:
        messages.append({"role": "user", "content": [block]})
