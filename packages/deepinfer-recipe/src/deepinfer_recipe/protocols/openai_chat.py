# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""OpenAI Chat Completions: requests in, responses and ``chat.completion.chunk`` SSE out."""

from __future__ import annotations

import json

from deepinfer_recipe.completion import ChatResult
from deepinfer_recipe.conversation import Conversation, Message, ToolCall, ToolSpec
from deepinfer_recipe.errors import RequestError, field_error
from deepinfer_recipe.events import ContentDelta, Event, ReasoningDelta, ToolCallDelta, ToolCallStart
from deepinfer_recipe.protocols import fields as F
from deepinfer_recipe.protocols import request_parts as P
from deepinfer_recipe.protocols.sse import sse_frame
from deepinfer_recipe.request import ChatRequest, GenerationOptions, ToolChoice

MAX_STOP = 16


def _text(content, name: str) -> str:
    """Message content: a string or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise field_error(name, "expected a string or a list of content parts")
    texts = []
    for j, part in enumerate(content):
        part_name = f"{name}[{j}]"
        if not isinstance(part, dict):
            raise field_error(part_name, "expected a content part object")
        kind = part.get("type")
        if kind not in ("text", "input_text", "output_text"):
            raise field_error(f"{part_name}.type", f"unsupported content part type {kind!r} (only text)")
        texts.append(F.get(part, "text", str, part_name))
    return "".join(texts)


def _tool_calls(raw, name: str) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise field_error(name, "expected an array")
    calls = []
    for j, call in enumerate(raw):
        path = f"{name}[{j}]"
        if not isinstance(call, dict):
            raise field_error(path, "expected an object")
        call_id = F.non_empty_str(call, "id", path)
        fn = F.get(call, "function", dict, path)
        fn_name = F.get(fn, "name", str, f"{path}.function")
        args = F.json_object_text(fn.get("arguments", "{}"), f"{path}.function.arguments")
        calls.append(ToolCall(call_id, fn_name, args))
    return tuple(calls)


def _message(raw, i: int) -> Message:
    path = f"messages[{i}]"
    if not isinstance(raw, dict):
        raise field_error(path, "expected a message object")
    role = F.get(raw, "role", str, path)
    if role not in ("system", "developer", "user", "assistant", "tool"):
        raise field_error(f"{path}.role", f"unknown role {role!r}")
    content = _text(raw.get("content"), f"{path}.content")
    name = F.get(raw, "name", str, path, None)
    if role == "assistant":
        reasoning = F.get(raw, "reasoning_content", str, path, None)
        calls = _tool_calls(raw.get("tool_calls"), f"{path}.tool_calls")
        return Message("assistant", content, reasoning, calls, name=name)
    if raw.get("tool_calls") is not None:
        raise field_error(f"{path}.tool_calls", f"only assistant messages carry tool calls, not {role}")
    if role == "tool":
        call_id = F.non_empty_str(raw, "tool_call_id", path)
        return Message("tool", content, tool_call_id=call_id, name=name)
    return Message(role, content, name=name)


def _tool(tool, path: str) -> ToolSpec:
    """``{"type": "function", "function": {"name", "description", "parameters"}}``."""
    if not isinstance(tool, dict) or tool.get("type", "function") != "function":
        raise field_error(f"{path}.type", "only function tools are supported")
    return P.tool_spec(F.get(tool, "function", dict, path), f"{path}.function")


def _tool_choice(raw, tools: tuple[ToolSpec, ...]) -> ToolChoice:
    if raw is None or isinstance(raw, str):
        return P.tool_choice_mode(raw, tools)
    if not isinstance(raw, dict):
        raise field_error("tool_choice", "expected a string or an object")
    fn = F.get(raw, "function", dict, "tool_choice")
    name = F.get(fn, "name", str, "tool_choice.function")
    return P.named_tool_choice(name, tools, "tool_choice.function.name")


def _response_format(raw) -> dict | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise field_error("response_format", "expected an object")
    kind = F.get(raw, "type", str, "response_format")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        spec = F.get(raw, "json_schema", dict, "response_format")
        return F.get(spec, "schema", dict, "response_format.json_schema", {"type": "object"})
    raise field_error("response_format.type", f"unknown value {kind!r}")


def _thinking(body: dict) -> bool:
    thinking = F.get(body, "thinking", dict, "", None)
    if thinking is not None:
        kind = F.get(thinking, "type", str, "thinking")
        if kind not in ("enabled", "disabled"):
            raise field_error("thinking.type", f"expected 'enabled' or 'disabled', got {kind!r}")
        return kind == "enabled"
    kwargs = F.get(body, "chat_template_kwargs", dict, "", {})
    flag = kwargs.get("thinking", kwargs.get("enable_thinking", False))
    if not isinstance(flag, bool):
        raise field_error("chat_template_kwargs.thinking", "expected a boolean")
    return flag


def conversation_from_openai(
    messages: list[dict],
    tools: list[dict] | None = None,
    *,
    thinking: bool = False,
    reasoning_effort: str | int | None = None,
) -> Conversation:
    """Build a Conversation from Chat Completions ``messages`` (and ``tools``) dicts.

    Args:
        messages: ``[{"role", "content", "tool_calls"?, "tool_call_id"?, "reasoning_content"?}]``.
        tools: ``[{"type": "function", "function": {"name", "description", "parameters"}}]``.
        thinking: Thinking mode.
        reasoning_effort: Format-dependent effort.

    Raises:
        RequestError: (a ValueError) naming the offending field, e.g. ``messages[1].role``.
    """
    if not isinstance(messages, list) or not messages:
        raise field_error("messages", "must be a non-empty list of message objects")
    parsed = [_message(m, i) for i, m in enumerate(messages)]
    try:
        specs = P.tool_list(tools, _tool)
        return Conversation(tuple(parsed), specs, thinking=thinking, reasoning_effort=reasoning_effort)
    except ValueError as err:
        raise RequestError(f"messages: {err}", "messages") from None


def parse_chat_completions_request(body: bytes | str | dict) -> ChatRequest:
    """Parse and validate a ``POST /v1/chat/completions`` body.

    Args:
        body: Raw body bytes (UTF-8 JSON), JSON text, or a parsed dict.

    Returns:
        The protocol-neutral request.

    Raises:
        RequestError: any invalid field; ``.openai_body()`` gives the wire error.
    """
    body = F.load_body(body)
    model = F.get(body, "model", str, "")
    raw_messages = F.get(body, "messages", list, "")
    if not raw_messages:
        raise field_error("messages", "must contain at least one message")
    messages = [_message(m, i) for i, m in enumerate(raw_messages)]
    tools = P.tool_list(body.get("tools"), _tool)
    stream_options = F.get(body, "stream_options", dict, "", {})
    top_logprobs = F.get(body, "top_logprobs", int, "", None)
    if top_logprobs is not None and not 0 <= top_logprobs <= 20:
        raise field_error("top_logprobs", f"must be between 0 and 20, got {top_logprobs}")
    options = GenerationOptions(
        max_tokens=F.positive_int(body, "max_completion_tokens", "", F.positive_int(body, "max_tokens", "")),
        temperature=F.number(body, "temperature", "", 0.0, 2.0),
        top_p=F.number(body, "top_p", "", 0.0, 1.0),
        seed=F.get(body, "seed", int, "", None),
        stop=F.stop_list(body.get("stop"), "stop", MAX_STOP),
        n=F.positive_int(body, "n", "", 1),
        presence_penalty=F.number(body, "presence_penalty", "", -2.0, 2.0),
        frequency_penalty=F.number(body, "frequency_penalty", "", -2.0, 2.0),
        logprobs=F.get(body, "logprobs", bool, "", False),
        top_logprobs=top_logprobs,
    )
    conv = P.conversation(
        "messages",
        messages,
        tools,
        thinking=_thinking(body),
        reasoning_effort=F.get(body, "reasoning_effort", (str, int), "", None),
        response_format=_response_format(body.get("response_format")),
    )
    return ChatRequest(
        protocol="chat_completions",
        model=model,
        conversation=conv,
        options=options,
        tool_choice=_tool_choice(body.get("tool_choice"), tools),
        parallel_tool_calls=F.get(body, "parallel_tool_calls", bool, "", True),
        stream=F.get(body, "stream", bool, "", False),
        include_usage=F.get(stream_options, "include_usage", bool, "stream_options", False),
    )


def conversation_to_openai_messages(conv: Conversation) -> list[dict]:
    """The conversation as a Chat Completions ``messages`` array (inverse of parsing)."""
    out = []
    for msg in conv.messages:
        item: dict = {"role": msg.role, "content": msg.content}
        if msg.reasoning is not None:
            item["reasoning_content"] = msg.reasoning
        if msg.tool_calls:
            item["tool_calls"] = [_call_dict(c) for c in msg.tool_calls]
        if msg.tool_call_id is not None:
            item["tool_call_id"] = msg.tool_call_id
        if msg.name is not None:
            item["name"] = msg.name
        out.append(item)
    return out


def _call_dict(call: ToolCall) -> dict:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


def openai_finish_reason(result: ChatResult, tool_choice: ToolChoice | None = None) -> str:
    """Map the neutral finish reason; a named tool choice reports ``stop`` (as OpenAI does)."""
    if result.finish_reason == "stop_sequence":
        return "stop"
    if result.finish_reason == "tool_calls" and tool_choice is not None and tool_choice.mode == "named":
        return "stop"
    return result.finish_reason


def usage_dict(result_usage) -> dict:
    """Chat Completions ``usage`` object."""
    return {
        "prompt_tokens": result_usage.prompt_tokens,
        "completion_tokens": result_usage.completion_tokens,
        "total_tokens": result_usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": result_usage.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": result_usage.reasoning_tokens},
    }


def chat_completion_response(
    results: list[ChatResult], *, id: str, model: str, created: int, tool_choice: ToolChoice | None = None
) -> dict:
    """A non-streaming ``chat.completion`` object.

    Args:
        results: One result per choice (``n``); usage is summed over choices.
        id: Response id (``chatcmpl-…``).
        model: Model name to report.
        created: Unix time in seconds.
        tool_choice: The request's tool choice (affects ``finish_reason``).
    """
    choices = []
    for r in results:
        message: dict = {"role": "assistant", "content": r.content if (r.content or not r.tool_calls) else None}
        if r.reasoning:
            message["reasoning_content"] = r.reasoning
        if r.tool_calls:
            message["tool_calls"] = [_call_dict(c) for c in r.tool_calls]
        choices.append(
            {
                "index": r.index,
                "message": message,
                "logprobs": None,
                "finish_reason": openai_finish_reason(r, tool_choice),
            }
        )
    first = results[0].usage
    total = type(first)(
        prompt_tokens=first.prompt_tokens,
        completion_tokens=sum(r.usage.completion_tokens for r in results),
        cached_tokens=first.cached_tokens,
        reasoning_tokens=sum(r.usage.reasoning_tokens for r in results),
    )
    return {
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": "deepinfer",
        "choices": choices,
        "usage": usage_dict(total),
    }


def parse_chat_completion_response(body: bytes | str | dict) -> list[ChatResult]:
    """Read a ``chat.completion`` object back into results (inverse of the builder)."""
    body = F.load_body(body)
    results = []
    for choice in F.get(body, "choices", list, ""):
        msg = choice["message"]
        calls = tuple(
            ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or []
        )
        reason = {"stop": "stop", "length": "length", "tool_calls": "tool_calls"}.get(choice["finish_reason"], "stop")
        results.append(
            ChatResult(
                msg.get("content") or "", msg.get("reasoning_content") or "", calls, reason, index=choice["index"]
            )
        )
    return results


class ChatCompletionStreamer:
    """Turns parser events of one choice into ``chat.completion.chunk`` SSE frames.

    Args:
        id: Response id shared by every chunk.
        model: Model name.
        created: Unix time in seconds.
        include_usage: ``stream_options.include_usage``: every chunk carries ``"usage": null``
            and a final chunk with empty ``choices`` carries the usage.
        choice_index: ``choices[].index`` of this choice.
        tool_choice: The request's tool choice (affects ``finish_reason``).
    """

    def __init__(
        self,
        *,
        id: str,
        model: str,
        created: int,
        include_usage: bool = False,
        choice_index: int = 0,
        tool_choice: ToolChoice | None = None,
    ) -> None:
        self.id, self.model, self.created = id, model, created
        self.include_usage = include_usage
        self.choice_index = choice_index
        self.tool_choice = tool_choice

    def _chunk(self, delta: dict, finish_reason: str | None = None) -> dict:
        chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "deepinfer",
            "choices": [{"index": self.choice_index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if self.include_usage:
            chunk["usage"] = None
        return chunk

    def start(self) -> bytes:
        """The first frame: ``{"role": "assistant", "content": ""}``."""
        return sse_frame(self._chunk({"role": "assistant", "content": ""}))

    def events(self, events: list[Event]) -> bytes:
        """Frames for a batch of parser events (empty bytes when nothing is visible)."""
        out = []
        for ev in events:
            if isinstance(ev, ContentDelta) and ev.text:
                out.append(self._chunk({"content": ev.text}))
            elif isinstance(ev, ReasoningDelta) and ev.text:
                out.append(self._chunk({"reasoning_content": ev.text}))
            elif isinstance(ev, ToolCallStart):
                call = {
                    "index": ev.index,
                    "id": ev.id,
                    "type": "function",
                    "function": {"name": ev.name, "arguments": ""},
                }
                out.append(self._chunk({"tool_calls": [call]}))
            elif isinstance(ev, ToolCallDelta) and ev.arguments:
                out.append(self._chunk({"tool_calls": [{"index": ev.index, "function": {"arguments": ev.arguments}}]}))
        return b"".join(sse_frame(c) for c in out)

    def finish(self, result: ChatResult, done: bool = True) -> bytes:
        """The closing frames: empty delta with ``finish_reason``, usage (if asked), ``[DONE]``."""
        out = sse_frame(self._chunk({}, openai_finish_reason(result, self.tool_choice)))
        if self.include_usage:
            usage_chunk = self._chunk({})
            usage_chunk["choices"] = []
            usage_chunk["usage"] = usage_dict(result.usage)
            out += sse_frame(usage_chunk)
        return out + (sse_frame("[DONE]") if done else b"")


def error_frame(err: RequestError) -> bytes:
    """An error object sent as a data frame mid-stream (then the stream is closed)."""
    return sse_frame(err.openai_body())


def request_to_json(req: ChatRequest) -> str:
    """The request as a Chat Completions JSON body (conversation and main options)."""
    body: dict = {"model": req.model, "messages": conversation_to_openai_messages(req.conversation)}
    if req.conversation.tools:
        body["tools"] = [{"type": "function", "function": t.function_dict()} for t in req.conversation.tools]
    if req.options.max_tokens is not None:
        body["max_tokens"] = req.options.max_tokens
    if req.options.stop:
        body["stop"] = list(req.options.stop)
    if req.conversation.thinking:
        body["thinking"] = {"type": "enabled"}
    body["stream"] = req.stream
    return json.dumps(body, ensure_ascii=False)
