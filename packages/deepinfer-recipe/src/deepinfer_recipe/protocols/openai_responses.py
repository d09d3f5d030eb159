# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""OpenAI Responses: requests in, ``response`` objects and named SSE events out."""

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

_TEXT_PARTS = ("input_text", "output_text", "text")


def _text(content, path: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise field_error(path, "expected a string or a list of content parts")
    texts = []
    for j, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in _TEXT_PARTS:
            kind = part.get("type") if isinstance(part, dict) else None
            raise field_error(f"{path}[{j}].type", f"unsupported content part {kind!r} (only text)")
        texts.append(F.get(part, "text", str, f"{path}[{j}]"))
    return "".join(texts)


def _input(raw) -> list[Message]:
    if isinstance(raw, str):
        return [Message("user", raw)]
    if not isinstance(raw, list) or not raw:
        raise field_error("input", "expected a string or a non-empty list of items")
    out: list[Message] = []
    pending_reasoning: str | None = None
    for i, item in enumerate(raw):
        path = f"input[{i}]"
        if not isinstance(item, dict):
            raise field_error(path, "expected an object")
        kind = item.get("type", "message")
        if kind == "message":
            role = F.get(item, "role", str, path)
            if role not in ("system", "developer", "user", "assistant"):
                raise field_error(f"{path}.role", f"unknown role {role!r}")
            text = _text(item.get("content"), f"{path}.content")
            if role == "assistant":
                out.append(Message("assistant", text, pending_reasoning))
                pending_reasoning = None
            else:
                out.append(Message(role, text))
        elif kind == "reasoning":
            parts = item.get("content") or []
            pending_reasoning = "".join(F.get(p, "text", str, f"{path}.content") for p in parts)
        elif kind == "function_call":
            call_id = F.non_empty_str(item, "call_id", path)
            args = F.json_object_text(item.get("arguments", "{}"), f"{path}.arguments")
            call = ToolCall(call_id, F.get(item, "name", str, path), args)
            last = out[-1] if out else None
            if last is not None and last.role == "assistant" and pending_reasoning is None:
                out[-1] = Message("assistant", last.content, last.reasoning, (*last.tool_calls, call))
            else:
                out.append(Message("assistant", "", pending_reasoning, (call,)))
                pending_reasoning = None
        elif kind == "function_call_output":
            call_id = F.get(item, "call_id", str, path)
            output = item.get("output")
            text = output if isinstance(output, str) else _text(output, f"{path}.output")
            out.append(Message("tool", text, tool_call_id=call_id))
        else:
            raise field_error(f"{path}.type", f"unsupported input item {kind!r}")
    return out


def _tool(tool, path: str) -> ToolSpec:
    """``{"type": "function", "name", "description", "parameters"}``."""
    if not isinstance(tool, dict) or tool.get("type") != "function":
        raise field_error(f"{path}.type", "only function tools are supported")
    return P.tool_spec(tool, path)


def _tool_choice(raw, tools) -> ToolChoice:
    if raw is None or isinstance(raw, str):
        return P.tool_choice_mode(raw, tools)
    if not isinstance(raw, dict) or raw.get("type") != "function":
        raise field_error("tool_choice", "expected a string or {type: function, name}")
    return P.named_tool_choice(F.get(raw, "name", str, "tool_choice"), tools, "tool_choice.name")


def parse_responses_request(body: bytes | str | dict) -> ChatRequest:
    """Parse and validate a ``POST /v1/responses`` body.

    Raises:
        RequestError: any invalid field; ``.openai_body()`` gives the wire error.
    """
    body = F.load_body(body)
    model = F.get(body, "model", str, "")
    if body.get("input") is None:
        raise field_error("input", "field is required")
    messages = _input(body["input"])
    instructions = F.get(body, "instructions", str, "", None)
    if instructions:
        messages.insert(0, Message("system", instructions))
    tools = P.tool_list(body.get("tools"), _tool)
    reasoning = F.get(body, "reasoning", dict, "", {})
    effort = F.get(reasoning, "effort", str, "reasoning", None)
    text_cfg = F.get(body, "text", dict, "", {})
    fmt = F.get(text_cfg, "format", dict, "text", {"type": "text"})
    kind = F.get(fmt, "type", str, "text.format")
    if kind not in ("text", "json_object", "json_schema"):
        raise field_error("text.format.type", f"unknown value {kind!r}")
    response_format = None if kind == "text" else (fmt.get("schema") or {"type": "json_object"})
    options = GenerationOptions(
        max_tokens=F.positive_int(body, "max_output_tokens", ""),
        temperature=F.number(body, "temperature", "", 0.0, 2.0),
        top_p=F.number(body, "top_p", "", 0.0, 1.0),
    )
    conv = P.conversation(
        "input",
        messages,
        tools,
        thinking=effort not in (None, "none", "minimal"),
        reasoning_effort=effort if effort not in (None, "none", "minimal", "medium") else None,
        response_format=response_format,
    )
    return ChatRequest(
        protocol="responses",
        model=model,
        conversation=conv,
        options=options,
        tool_choice=_tool_choice(body.get("tool_choice"), tools),
        parallel_tool_calls=F.get(body, "parallel_tool_calls", bool, "", True),
        stream=F.get(body, "stream", bool, "", False),
    )


def _usage(result: ChatResult) -> dict:
    u = result.usage
    return {
        "input_tokens": u.prompt_tokens,
        "input_tokens_details": {"cached_tokens": u.cached_tokens},
        "output_tokens": u.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.total_tokens,
    }


def _reasoning_item(item_id: str, text: str) -> dict:
    return {"type": "reasoning", "id": item_id, "summary": [], "content": [{"type": "reasoning_text", "text": text}]}


def _message_item(item_id: str, text: str, status: str = "completed") -> dict:
    content = [{"type": "output_text", "text": text, "annotations": []}] if status == "completed" else []
    return {"type": "message", "id": item_id, "role": "assistant", "status": status, "content": content}


def _call_item(item_id: str, call_id: str, name: str, arguments: str, status: str = "completed") -> dict:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


def responses_response(
    result: ChatResult, *, id: str, model: str, created: int, tool_choice: ToolChoice | None = None, tools=()
) -> dict:
    """A non-streaming ``response`` object (reasoning, message, function_call items)."""
    output: list[dict] = []
    if result.reasoning:
        output.append(_reasoning_item(f"rs_{id}", result.reasoning))
    if result.content or not result.tool_calls:
        output.append(_message_item(f"msg_{id}", result.content))
    for i, call in enumerate(result.tool_calls):
        output.append(_call_item(f"fc_{id}_{i}", call.id, call.name, call.arguments))
    return _response_object(result, id, model, created, output, tool_choice, tools)


def _response_object(result, id, model, created, output, tool_choice, tools, status=None) -> dict:
    incomplete = result is not None and result.finish_reason == "length"
    if status is None:
        status = "incomplete" if incomplete else "completed"
    choice = tool_choice or ToolChoice()
    return {
        "id": id,
        "object": "response",
        "created_at": created,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete and status != "in_progress" else None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": {"type": "function", "name": choice.name} if choice.mode == "named" else choice.mode,
        "tools": [{"type": "function", **t.function_dict(), "strict": False} for t in tools],
        "usage": _usage(result) if result is not None and status != "in_progress" else None,
    }


class ResponsesStreamer:
    """Turns parser events into Responses SSE events (each with a ``sequence_number``).

    Args:
        id: Response id (``resp_…``).
        model: Model name.
        created: Unix time in seconds.
        tool_choice: The request's tool choice.
        tools: The request's tools (echoed in the response object).
    """

    def __init__(self, *, id: str, model: str, created: int, tool_choice: ToolChoice | None = None, tools=()) -> None:
        self.id, self.model, self.created = id, model, created
        self.tool_choice, self.tools = tool_choice, tuple(tools)
        self._seq = 0
        self._output: list[dict] = []
        self._open: dict | None = None
        self._text = ""

    def _event(self, kind: str, **payload) -> bytes:
        data = {"type": kind, "sequence_number": self._seq, **payload}
        self._seq += 1
        return sse_frame(data, kind)

    def start(self) -> bytes:
        """``response.created`` and ``response.in_progress``."""
        snapshot = _response_object(
            None, self.id, self.model, self.created, [], self.tool_choice, self.tools, "in_progress"
        )
        return self._event("response.created", response=snapshot) + self._event(
            "response.in_progress", response=snapshot
        )

    def _idx(self) -> int:
        return len(self._output)

    def _begin(self, item: dict) -> bytes:
        out = self._end()
        self._open, self._text = item, ""
        out += self._event("response.output_item.added", output_index=self._idx(), item=item)
        if item["type"] == "message":
            part = {"type": "output_text", "text": "", "annotations": []}
            out += self._event(
                "response.content_part.added", item_id=item["id"], output_index=self._idx(), content_index=0, part=part
            )
        return out

    def _end(self) -> bytes:
        item = self._open
        if item is None:
            return b""
        self._open = None
        common = {"item_id": item["id"], "output_index": self._idx()}
        if item["type"] == "message":
            part = {"type": "output_text", "text": self._text, "annotations": []}
            out = self._event("response.output_text.done", **common, content_index=0, text=self._text, logprobs=[])
            out += self._event("response.content_part.done", **common, content_index=0, part=part)
            done = _message_item(item["id"], self._text)
        elif item["type"] == "reasoning":
            out = self._event("response.reasoning_text.done", **common, content_index=0, text=self._text)
            done = _reasoning_item(item["id"], self._text)
        else:
            out = self._event("response.function_call_arguments.done", **common, arguments=self._text)
            done = _call_item(item["id"], item["call_id"], item["name"], self._text)
        out += self._event("response.output_item.done", output_index=self._idx(), item=done)
        self._output.append(done)
        return out

    def events(self, events: list[Event]) -> bytes:
        """Frames for a batch of parser events."""
        out = b""
        for ev in events:
            if isinstance(ev, ReasoningDelta) and ev.text:
                if self._open is None or self._open["type"] != "reasoning":
                    out += self._begin(
                        {"type": "reasoning", "id": f"rs_{self.id}_{self._idx()}", "summary": [], "content": []}
                    )
                self._text += ev.text
                out += self._event(
                    "response.reasoning_text.delta",
                    item_id=self._open["id"],
                    output_index=self._idx(),
                    content_index=0,
                    delta=ev.text,
                )
            elif isinstance(ev, ContentDelta) and ev.text:
                if self._open is None or self._open["type"] != "message":
                    out += self._begin(_message_item(f"msg_{self.id}_{self._idx()}", "", "in_progress"))
                self._text += ev.text
                out += self._event(
                    "response.output_text.delta",
                    item_id=self._open["id"],
                    output_index=self._idx(),
                    content_index=0,
                    delta=ev.text,
                    logprobs=[],
                )
            elif isinstance(ev, ToolCallStart):
                out += self._begin(_call_item(f"fc_{self.id}_{self._idx()}", ev.id, ev.name, "", "in_progress"))
            elif isinstance(ev, ToolCallDelta) and ev.arguments and self._open is not None:
                self._text += ev.arguments
                out += self._event(
                    "response.function_call_arguments.delta",
                    item_id=self._open["id"],
                    output_index=self._idx(),
                    delta=ev.arguments,
                )
            elif isinstance(ev, ToolCallEnd):
                out += self._end()
        return out

    def finish(self, result: ChatResult) -> bytes:
        """Close the open item and send ``response.completed`` (or ``response.incomplete``)."""
        out = self._end()
        final = _response_object(result, self.id, self.model, self.created, self._output, self.tool_choice, self.tools)
        kind = "response.completed" if final["status"] == "completed" else "response.incomplete"
        return out + self._event(kind, response=final)


def error_frame(err: RequestError) -> bytes:
    """An ``error`` event mid-stream."""
    return sse_frame(
        {"type": "error", "code": None, "message": err.message, "param": err.param, "sequence_number": 0}, "error"
    )


def conversation_to_responses_input(conv: Conversation) -> list[dict]:
    """The conversation as a Responses ``input`` list (inverse of parsing)."""
    items: list[dict] = []
    for msg in conv.messages:
        if msg.role == "tool":
            items.append({"type": "function_call_output", "call_id": msg.tool_call_id, "output": msg.content})
            continue
        if msg.role == "assistant" and msg.reasoning is not None:
            items.append(
                {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": msg.reasoning}]}
            )
        if msg.role != "assistant" or msg.content or not msg.tool_calls:
            kind = "output_text" if msg.role == "assistant" else "input_text"
            items.append({"type": "message", "role": msg.role, "content": [{"type": kind, "text": msg.content}]})
        for call in msg.tool_calls:
            items.append({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments})
    return items


def response_json(obj: dict) -> str:
    """Serialise a response object."""
    return json.dumps(obj, ensure_ascii=False)
