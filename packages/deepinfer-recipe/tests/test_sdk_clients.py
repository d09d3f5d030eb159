# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The official ``openai`` and ``anthropic`` SDKs parse our full and streamed responses.

Each SDK talks to an in-process stub transport that runs the real request through our
request parser, feeds a canned model output through the DeepSeek-V4 output parser in
small chunks, and answers with our JSON or SSE bytes.
"""

from __future__ import annotations

import json

import anthropic
import httpx2
import openai
import pytest

from deepinfer_recipe import (
    ChatCompletionStreamer,
    ChatResult,
    MessagesStreamer,
    ParsedOutput,
    RequestError,
    ResponsesStreamer,
    Usage,
    chat_completion_response,
    make_output_parser,
    messages_response,
    parse_chat_completions_request,
    parse_messages_request,
    parse_responses_request,
    responses_response,
)

D = "｜DSML｜"
OUTPUT = (
    "The user wants weather.\n</think>Let me check both cities.\n\n"
    f"<{D}tool_calls>\n"
    f'<{D}invoke name="get_weather">\n<{D}parameter name="city" string="true">Paris</{D}parameter>\n'
    f'<{D}parameter name="days" string="false">2</{D}parameter>\n</{D}invoke>\n'
    f'<{D}invoke name="get_weather">\n'
    f'<{D}parameter name="city" string="true">Roma "centro"</{D}parameter>\n</{D}invoke>\n'
    f"</{D}tool_calls><｜end▁of▁sentence｜>"
)
EXPECTED_CALLS = [
    ("call_0", "get_weather", {"city": "Paris", "days": 2}),
    ("call_1", "get_weather", {"city": 'Roma "centro"'}),
]
USAGE = Usage(prompt_tokens=31, completion_tokens=57, cached_tokens=8, reasoning_tokens=6)
TOOLS_OPENAI = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}
]


def _run_model(thinking: bool):
    """Parse OUTPUT in 7-char chunks; return (event batches, final result)."""
    parser = make_output_parser("deepseek_v4", thinking=thinking, call_id=lambda i: f"call_{i}")
    batches = [parser.feed(OUTPUT[i : i + 7]) for i in range(0, len(OUTPUT), 7)] + [parser.finish()]
    parsed = ParsedOutput()
    for b in batches:
        parsed.add(b)
    return batches, ChatResult.from_parsed(parsed, "stop", USAGE)


def _handler(request: httpx2.Request) -> httpx2.Response:
    path = request.url.path
    try:
        if path.endswith("/chat/completions"):
            req = parse_chat_completions_request(request.content)
        elif path.endswith("/responses"):
            req = parse_responses_request(request.content)
        else:
            req = parse_messages_request(request.content)
    except RequestError as err:
        body = err.anthropic_body() if path.endswith("/messages") else err.openai_body()
        return httpx2.Response(err.status, json=body)
    batches, result = _run_model(req.conversation.thinking)
    sse = {"content-type": "text/event-stream"}
    if path.endswith("/chat/completions"):
        if not req.stream:
            return httpx2.Response(
                200, json=chat_completion_response([result], id="chatcmpl-1", model=req.model, created=1)
            )
        s = ChatCompletionStreamer(id="chatcmpl-1", model=req.model, created=1, include_usage=req.include_usage)
        body = s.start() + b"".join(s.events(b) for b in batches) + s.finish(result)
        return httpx2.Response(200, headers=sse, content=body)
    if path.endswith("/responses"):
        kw = {
            "id": "resp_1",
            "model": req.model,
            "created": 1,
            "tool_choice": req.tool_choice,
            "tools": req.conversation.tools,
        }
        if not req.stream:
            return httpx2.Response(200, json=responses_response(result, **kw))
        s = ResponsesStreamer(**kw)
        body = s.start() + b"".join(s.events(b) for b in batches) + s.finish(result)
        return httpx2.Response(200, headers=sse, content=body)
    if not req.stream:
        return httpx2.Response(200, json=messages_response(result, id="msg_1", model=req.model))
    s = MessagesStreamer(
        id="msg_1", model=req.model, prompt_tokens=USAGE.prompt_tokens, cached_tokens=USAGE.cached_tokens
    )
    body = s.start() + b"".join(s.events(b) for b in batches) + s.finish(result)
    return httpx2.Response(200, headers=sse, content=body)


def _http() -> httpx2.Client:
    return httpx2.Client(transport=httpx2.MockTransport(_handler))


@pytest.fixture
def oai():
    return openai.OpenAI(api_key="test", base_url="http://stub/v1", http_client=_http(), max_retries=0)


@pytest.fixture
def claude():
    return anthropic.Anthropic(api_key="test", base_url="http://stub", http_client=_http(), max_retries=0)


MESSAGES = [{"role": "user", "content": "Weather in Paris and Rome?"}]


def _calls_of(tool_calls):
    return [(c.id, c.function.name, json.loads(c.function.arguments)) for c in tool_calls]


def test_openai_chat_full_response(oai):
    r = oai.chat.completions.create(
        model="deepinfer", messages=MESSAGES, tools=TOOLS_OPENAI, extra_body={"thinking": {"type": "enabled"}}
    )
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me check both cities."
    assert choice.message.model_extra["reasoning_content"] == "The user wants weather."
    assert _calls_of(choice.message.tool_calls) == EXPECTED_CALLS
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens) == (31, 57, 88)
    assert r.usage.prompt_tokens_details.cached_tokens == 8


def test_openai_chat_stream_accumulates_tool_calls(oai):
    with oai.chat.completions.stream(
        model="deepinfer",
        messages=MESSAGES,
        tools=TOOLS_OPENAI,
        stream_options={"include_usage": True},
        extra_body={"thinking": {"type": "enabled"}},
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert "tool_calls.function.arguments.delta" in kinds
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me check both cities."
    assert _calls_of(choice.message.tool_calls) == EXPECTED_CALLS
    assert final.usage.total_tokens == 88


def test_openai_chat_raw_stream_chunks(oai):
    chunks = list(
        oai.chat.completions.create(
            model="deepinfer",
            messages=MESSAGES,
            tools=TOOLS_OPENAI,
            stream=True,
            stream_options={"include_usage": True},
            extra_body={"thinking": {"type": "enabled"}},
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 57
    firsts = [tc for c in chunks[:-1] for tc in (c.choices[0].delta.tool_calls or []) if tc.id]
    assert [(tc.index, tc.id, tc.function.name) for tc in firsts] == [
        (0, "call_0", "get_weather"),
        (1, "call_1", "get_weather"),
    ]
    reasoning = "".join(c.choices[0].delta.model_extra.get("reasoning_content", "") or "" for c in chunks[:-1])
    assert reasoning == "The user wants weather."
    assert chunks[-2].choices[0].finish_reason == "tool_calls"


def test_openai_responses_full_and_stream(oai):
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}]
    full = oai.responses.create(model="deepinfer", input="Weather?", tools=tools, reasoning={"effort": "high"})
    calls = [(o.call_id, o.name, json.loads(o.arguments)) for o in full.output if o.type == "function_call"]
    assert calls == EXPECTED_CALLS
    assert full.output_text == "Let me check both cities."
    assert [o.type for o in full.output][0] == "reasoning"
    with oai.responses.stream(model="deepinfer", input="Weather?", tools=tools, reasoning={"effort": "high"}) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.function_call_arguments.delta" in kinds and "response.reasoning_text.delta" in kinds
    assert [
        (o.call_id, o.name, json.loads(o.arguments)) for o in final.output if o.type == "function_call"
    ] == EXPECTED_CALLS
    assert final.output_text == "Let me check both cities."
    assert final.usage.output_tokens == 57


def test_anthropic_messages_full_response(claude):
    m = claude.messages.create(
        model="deepinfer",
        max_tokens=100,
        messages=MESSAGES,
        thinking={"type": "enabled", "budget_tokens": 1024},
        tools=[{"name": "get_weather", "input_schema": {"type": "object", "properties": {}}}],
    )
    assert [b.type for b in m.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert m.content[0].thinking == "The user wants weather."
    assert [(b.id, b.name, b.input) for b in m.content[2:]] == EXPECTED_CALLS
    assert m.stop_reason == "tool_use"
    assert (m.usage.input_tokens, m.usage.cache_read_input_tokens, m.usage.output_tokens) == (23, 8, 57)


def test_anthropic_messages_stream(claude):
    with claude.messages.stream(
        model="deepinfer",
        max_tokens=100,
        messages=MESSAGES,
        thinking={"type": "enabled", "budget_tokens": 1024},
        tools=[{"name": "get_weather", "input_schema": {"type": "object", "properties": {}}}],
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Let me check both cities."
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert final.content[0].thinking == "The user wants weather."
    assert [(b.id, b.name, b.input) for b in final.content[2:]] == EXPECTED_CALLS
    assert final.stop_reason == "tool_use" and final.usage.output_tokens == 57


def test_sdk_errors_use_each_protocol_shape(oai, claude):
    with pytest.raises(openai.BadRequestError) as err:
        oai.chat.completions.create(model="m", messages=[{"role": "wizard", "content": "hi"}])
    assert err.value.param == "messages[0].role" and err.value.type == "invalid_request_error"
    with pytest.raises(anthropic.BadRequestError) as err:
        claude.messages.create(model="m", max_tokens=5, messages=[{"role": "system", "content": "hi"}])
    assert err.value.body["error"]["type"] == "invalid_request_error"
    assert "messages[0].role" in err.value.body["error"]["message"]
