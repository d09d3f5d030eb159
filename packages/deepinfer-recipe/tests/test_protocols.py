# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Request parsing, round trips and bad-input errors for the three wire protocols."""

from __future__ import annotations

import json

import pytest

from deepinfer_recipe import (
    ChatCompletionStreamer,
    ChatResult,
    Conversation,
    Message,
    RequestError,
    ToolCall,
    ToolSpec,
    Usage,
    parse_chat_completions_request,
    parse_messages_request,
    parse_responses_request,
)
from deepinfer_recipe.protocols.anthropic_messages import conversation_to_anthropic
from deepinfer_recipe.protocols.openai_chat import conversation_to_openai_messages
from deepinfer_recipe.protocols.openai_responses import conversation_to_responses_input

CONV = Conversation(
    (
        Message("system", "Be brief."),
        Message("user", "Weather in Paris? 北京"),
        Message("assistant", "Checking.", reasoning="use tool", tool_calls=(ToolCall("c1", "w", '{"city": "Paris"}'),)),
        Message("tool", "sunny", tool_call_id="c1"),
        Message("assistant", "Sunny."),
        Message("user", "Thanks"),
    ),
    tools=(ToolSpec("w", "weather", {"type": "object", "properties": {"city": {"type": "string"}}}),),
)


def test_chat_completions_round_trip():
    body = {
        "model": "m",
        "messages": conversation_to_openai_messages(CONV),
        "tools": [{"type": "function", "function": t.function_dict()} for t in CONV.tools],
        "max_tokens": 64,
        "stop": ["\n\n"],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tool_choice": {"type": "function", "function": {"name": "w"}},
    }
    req = parse_chat_completions_request(json.dumps(body).encode())
    assert req.conversation == CONV
    assert req.options.max_tokens == 64 and req.options.stop == ("\n\n",)
    assert req.stream and req.include_usage and req.tool_choice.name == "w"


def test_messages_round_trip():
    body = {"model": "m", "max_tokens": 10, **conversation_to_anthropic(CONV)}
    body["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in CONV.tools]
    req = parse_messages_request(body)
    assert req.conversation.messages == CONV.messages
    assert req.conversation.tools == CONV.tools


def test_responses_round_trip():
    body = {"model": "m", "input": conversation_to_responses_input(CONV)}
    body["tools"] = [{"type": "function", **t.function_dict()} for t in CONV.tools]
    req = parse_responses_request(body)
    assert req.conversation.messages == CONV.messages


GOOD_CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
GOOD_MSGS = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
GOOD_RESP = {"model": "m", "input": "hi"}

CHAT_BAD = [
    ({**GOOD_CHAT, "messages": "hi"}, "messages"),
    ({**GOOD_CHAT, "messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
    ({**GOOD_CHAT, "messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ({**GOOD_CHAT, "temperature": "hot"}, "temperature"),
    ({**GOOD_CHAT, "max_tokens": 0}, "max_tokens"),
    ({**GOOD_CHAT, "n": True}, "n"),
    (
        {
            **GOOD_CHAT,
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}],
                }
            ],
        },
        "messages[0].tool_calls[0].id",
    ),
    ({**GOOD_CHAT, "messages": [{"role": "tool", "content": "r"}]}, "messages[0].tool_call_id"),
    (
        {
            **GOOD_CHAT,
            "messages": [
                {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{bad"}}]}
            ],
        },
        "messages[0].tool_calls[0].function.arguments",
    ),
    ({**GOOD_CHAT, "messages": [{"role": "tool", "content": "r", "tool_call_id": "nope"}]}, "messages"),
    ({**GOOD_CHAT, "stop": ["a"] * 17}, "stop"),
    (
        {**GOOD_CHAT, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
        "messages[0].content[0].type",
    ),
]
MSGS_BAD = [
    ({k: v for k, v in GOOD_MSGS.items() if k != "max_tokens"}, "max_tokens"),
    ({**GOOD_MSGS, "messages": [{"role": "system", "content": "x"}]}, "messages[0].role"),
    (
        {**GOOD_MSGS, "messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]}]},
        "messages[0].content[0].id",
    ),
    (
        {
            **GOOD_MSGS,
            "messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": "x"}]}
            ],
        },
        "messages[0].content[0].input",
    ),
    ({**GOOD_MSGS, "temperature": 1.5}, "temperature"),
    ({**GOOD_MSGS, "tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools[0].type"),
]
RESP_BAD = [
    ({"model": "m"}, "input"),
    ({**GOOD_RESP, "input": [{"type": "message", "role": "robot", "content": "x"}]}, "input[0].role"),
    ({**GOOD_RESP, "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "input[0].call_id"),
    ({**GOOD_RESP, "max_output_tokens": -1}, "max_output_tokens"),
]


@pytest.mark.parametrize("body,param", CHAT_BAD)
def test_chat_completions_bad_input(body, param):
    with pytest.raises(RequestError) as err:
        parse_chat_completions_request(body)
    wire = err.value.openai_body()["error"]
    assert wire["type"] == "invalid_request_error" and wire["param"] == param and param in wire["message"]
    assert err.value.status == 400


@pytest.mark.parametrize("body,param", MSGS_BAD)
def test_messages_bad_input(body, param):
    with pytest.raises(RequestError) as err:
        parse_messages_request(body)
    wire = err.value.anthropic_body()
    assert wire["type"] == "error" and wire["error"]["type"] == "invalid_request_error"
    assert param in wire["error"]["message"]


@pytest.mark.parametrize("body,param", RESP_BAD)
def test_responses_bad_input(body, param):
    with pytest.raises(RequestError) as err:
        parse_responses_request(body)
    assert err.value.openai_body()["error"]["param"] == param


@pytest.mark.parametrize("parse", [parse_chat_completions_request, parse_messages_request, parse_responses_request])
def test_non_utf8_and_non_json_bodies(parse):
    for raw in (b'{"model": "m\xff\xfe"}', b"{not json", b"[1, 2]"):
        with pytest.raises(RequestError) as err:
            parse(raw)
        assert err.value.param == "body"


def test_stream_chunks_shape_with_include_usage():
    from deepinfer_recipe import ToolCallDelta, ToolCallStart

    s = ChatCompletionStreamer(id="chatcmpl-9", model="m", created=7, include_usage=True)
    events = [
        ToolCallStart(0, "call_a", "f"),
        ToolCallDelta(0, '{"x": '),
        ToolCallStart(1, "call_b", "g"),
        ToolCallDelta(1, "{}"),
        ToolCallDelta(0, "1}"),
    ]
    result = ChatResult(
        tool_calls=(ToolCall("call_a", "f", '{"x": 1}'), ToolCall("call_b", "g", "{}")),
        finish_reason="tool_calls",
        usage=Usage(3, 4),
    )
    raw = (s.start() + s.events(events) + s.finish(result)).decode()
    frames = [f[len("data: ") :] for f in raw.split("\n\n") if f]
    assert frames[-1] == "[DONE]"
    chunks = [json.loads(f) for f in frames[:-1]]
    assert all(c["id"] == "chatcmpl-9" and c["object"] == "chat.completion.chunk" and "usage" in c for c in chunks)
    assert all(c["usage"] is None for c in chunks[:-1]) and chunks[-1]["usage"]["total_tokens"] == 7
    assert chunks[-1]["choices"] == [] and chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    deltas = [c["choices"][0]["delta"].get("tool_calls") for c in chunks[1:-2]]
    assert [d[0]["index"] for d in deltas] == [0, 0, 1, 1, 0]
    assert "id" in deltas[0][0] and "id" not in deltas[1][0] and "name" not in deltas[1][0]["function"]
