# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Named regression tests for the known parser / streaming failures of recipe.md §4.

Each test is named after its row number in that table. Expected values are written by
hand from the failure description (the correct behaviour), not produced by our code.
"""

from __future__ import annotations

import json

from deepinfer_recipe import (
    ChatCompletionStreamer,
    ChatResult,
    ContentDelta,
    IncrementalDetokenizer,
    MessagesStreamer,
    ParsedOutput,
    ParseIssue,
    ReasoningDelta,
    ToolCallDelta,
    ToolCallStart,
    ToolChoice,
    chat_completion_response,
    make_output_parser,
)
from deepinfer_recipe.testing import parse_chunks

D = "｜DSML｜"


def _parser(fmt="deepseek_v4", thinking=False, **kw):
    return make_output_parser(fmt, thinking=thinking, call_id=lambda i: f"call_{i}", **kw)


def _parsed(events) -> ParsedOutput:
    out = ParsedOutput()
    out.add(events)
    return out


def _invoke(name: str, params: list[tuple[str, str, str]]) -> str:
    body = "\n".join(f'<{D}parameter name="{k}" string="{s}">{v}</{D}parameter>' for k, s, v in params)
    return f'<{D}invoke name="{name}">\n{body}\n</{D}invoke>'


TWO_CALLS = (
    f"\n\n<{D}tool_calls>\n"
    + _invoke("get_weather", [("city", "true", "Paris")])
    + "\n"
    + _invoke("get_time", [("tz", "true", "Europe/Paris"), ("utc", "false", "false")])
    + f"\n</{D}tool_calls>"
)


def test_case01_dsml_two_invokes_cut_inside_first_invoke_header():
    start = TWO_CALLS.index(f"<{D}invoke")
    end = TWO_CALLS.index(">", start) + 1
    for cut in range(start + 1, end):
        out = _parsed(parse_chunks(_parser, [TWO_CALLS[:cut], TWO_CALLS[cut:]]))
        got = [(c.name, json.loads(c.arguments)) for c in out.tool_calls]
        assert got == [("get_weather", {"city": "Paris"}), ("get_time", {"tz": "Europe/Paris", "utc": False})], cut
        assert out.content == ""


def test_case02_v31_begin_and_end_markers_in_one_delta():
    one_delta = '<｜tool▁call▁begin｜>f<｜tool▁sep｜>{"a":1}<｜tool▁call▁end｜>'
    chunks = ["Sure.", "<｜tool▁calls▁begin｜>", one_delta, "<｜tool▁calls▁end｜>"]
    out = _parsed(parse_chunks(lambda: _parser("deepseek_v31"), chunks))
    assert [(c.name, json.loads(c.arguments)) for c in out.tool_calls] == [("f", {"a": 1})]
    everything = _parsed(parse_chunks(lambda: _parser("deepseek_v31"), ["".join(chunks)]))
    assert everything.tool_calls == out.tool_calls and out.content == "Sure."


def _count_deltas_before_close(value: str) -> tuple[int, str]:
    text = f"<{D}tool_calls>\n" + _invoke("write", [("body", "true", value)]) + f"\n</{D}tool_calls>"
    close = text.index(f"</{D}parameter>")
    parser = _parser()
    deltas, events = 0, []
    for i, ch in enumerate(text):
        new = parser.feed(ch)
        events += new
        if i < close:
            deltas += sum(1 for e in new if isinstance(e, ToolCallDelta))
    events += parser.finish()
    return deltas, json.loads(_parsed(events).tool_calls[0].arguments)["body"]


def test_case03_dsml_string_argument_is_streamed_not_buffered():
    value = ("lorem ipsum <b>dolor</b> sit amet\n" * 60)[:2048]
    deltas, body = _count_deltas_before_close(value)
    assert body == value
    assert deltas > 100  # one fragment per character minus the held-back tag prefixes


def test_case04_value_without_gt_streams_incrementally():
    value = "x" * 2048
    deltas, body = _count_deltas_before_close(value)
    assert body == value
    assert deltas >= 2000


def test_case06_string_false_value_split_and_malformed_values():
    text = f"<{D}tool_calls>\n" + _invoke("m", [("grid", "false", "[[1,2],[3]]")]) + f"\n</{D}tool_calls>"
    cut = text.index("[3") + 2
    out = _parsed(parse_chunks(_parser, [text[:cut], text[cut:]]))
    assert json.loads(out.tool_calls[0].arguments) == {"grid": [[1, 2], [3]]}
    # Every fragment only ever extends the arguments: fragments concatenate to the final text.
    events = parse_chunks(_parser, list(text))
    assert "".join(e.arguments for e in events if isinstance(e, ToolCallDelta)) == out.tool_calls[0].arguments

    bad = f"<{D}tool_calls>\n" + _invoke("m", [("grid", "false", "[[1,2],[3")]) + f"\n</{D}tool_calls>"
    out = _parsed(parse_chunks(_parser, [bad]))
    assert out.tool_calls == [] and out.has_incomplete_calls
    assert any(i.kind == "malformed_tool_call" for i in out.issues)
    assert D not in out.content and out.content == ""

    truncated = bad[: bad.index("[3") + 2]
    out = _parsed(parse_chunks(_parser, [truncated]))
    assert out.tool_calls == [] and out.has_incomplete_calls
    assert any(i.kind == "truncated" for i in out.issues)


def test_case07_parameter_named_arguments_is_not_unwrapped():
    text = f"<{D}tool_calls>\n" + _invoke("read", [("arguments", "false", '{"path":"/a"}')]) + f"\n</{D}tool_calls>"
    out = _parsed(parse_chunks(_parser, [text]))
    assert json.loads(out.tool_calls[0].arguments) == {"arguments": {"path": "/a"}}


def test_case09_think_end_inside_one_delta_gives_separate_chunks():
    parser = _parser(thinking=True)
    events = parser.feed("Let me think") + parser.feed(" thought.</think>Answer") + parser.finish()
    assert events == [ReasoningDelta("Let me think"), ReasoningDelta(" thought."), ContentDelta("Answer")]
    streamer = ChatCompletionStreamer(id="c", model="m", created=0)
    frames = [json.loads(f[6:]) for f in streamer.events(events).decode().split("\n\n") if f]
    for frame in frames:
        delta = frame["choices"][0]["delta"]
        assert not ("content" in delta and "reasoning_content" in delta)
    assert "".join(f["choices"][0]["delta"].get("reasoning_content", "") for f in frames) == "Let me think thought."


def test_case10_chat_mode_stray_think_end_never_reaches_content():
    """Policy (as deepseek-recipe): a stray ``</think>`` in chat mode is dropped and reported.

    The text before it stays content: it was already streamed and cannot be recalled.
    """
    out = _parsed(parse_chunks(lambda: _parser(thinking=False), ["reasoning about it</think>", "Answer"]))
    assert "</think>" not in out.content
    assert out.content == "reasoning about itAnswer"
    assert ParseIssue("extra_end_of_thinking", "</think>") in out.issues


def test_case12_tool_call_inside_thinking_is_parsed():
    text = "let me call" + TWO_CALLS
    out = _parsed(parse_chunks(lambda: _parser(thinking=True), [text]))
    assert out.reasoning == "let me call"
    assert [c.name for c in out.tool_calls] == ["get_weather", "get_time"]
    v31 = (
        'calling<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{"a": 2}'
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    )
    out = _parsed(parse_chunks(lambda: _parser("deepseek_v31", thinking=True), [v31]))
    assert out.reasoning == "calling" and [c.name for c in out.tool_calls] == ["f"]


def test_case13_length_inside_tool_call_reports_length():
    text = f"<{D}tool_calls>\n" + _invoke("write", [("body", "true", "a long value")])
    cut = text[: text.index("long")]
    out = _parsed(parse_chunks(_parser, [cut]))
    result = ChatResult.from_parsed(out, "length")
    assert result.finish_reason == "length" and result.tool_calls == ()
    body = chat_completion_response([result], id="x", model="m", created=0)
    assert body["choices"][0]["finish_reason"] == "length"


def test_case14_finish_reason_same_in_stream_and_non_stream():
    events = parse_chunks(_parser, [TWO_CALLS])
    result = ChatResult.from_parsed(_parsed(events), "stop")
    for choice, expected in [
        (ToolChoice("auto"), "tool_calls"),
        (ToolChoice("required"), "tool_calls"),
        (ToolChoice("named", "get_weather"), "stop"),
    ]:
        full = chat_completion_response([result], id="x", model="m", created=0, tool_choice=choice)
        streamer = ChatCompletionStreamer(id="x", model="m", created=0, tool_choice=choice)
        frames = [f for f in streamer.finish(result).decode().split("\n\n") if f and "[DONE]" not in f]
        streamed = json.loads(frames[-1][6:])["choices"][0]["finish_reason"]
        assert full["choices"][0]["finish_reason"] == streamed == expected


def test_case16_opening_marker_split_across_chunks():
    text = TWO_CALLS.lstrip("\n")
    cut = text.index("ML｜")
    assert text[:cut].endswith("<｜DS")
    out = _parsed(parse_chunks(_parser, ["Hi.\n\n" + text[:cut], text[cut:]]))
    assert out.content == "Hi." and len(out.tool_calls) == 2


def test_case18_genuine_replacement_char_is_flushed(qwen3_tok):
    text = "ok \ufffd then more text 😀 and 北京" * 3
    ids = qwen3_tok.encode_plain(text)
    detok = IncrementalDetokenizer(qwen3_tok.decode)
    pieces, max_window = [], 0
    for i, token in enumerate(ids):
        pieces.append(detok.push([token]))
        max_window = max(max_window, detok.window)
        if i == len(ids) // 2:
            streamed_half = "".join(pieces)
    pieces.append(detok.flush())
    assert "".join(pieces) == qwen3_tok.decode(ids) == text
    assert "\ufffd then more" in streamed_half  # text after the genuine U+FFFD was released before the end
    assert max_window <= 6


def test_case20_messages_stream_thinking_text_and_tool_use():
    parser = _parser(thinking=True)
    events = (
        parser.feed("I will check." + "</think>Checking." + TWO_CALLS[:80])
        + parser.feed(TWO_CALLS[80:])
        + parser.finish()
    )
    streamer = MessagesStreamer(id="msg_1", model="m")
    raw = (streamer.start() + streamer.events(events)).decode()
    frames = [json.loads(block.split("data: ", 1)[1]) for block in raw.split("\n\n") if block]
    open_types: dict[int, str] = {}
    seen_deltas = []
    for f in frames:
        if f["type"] == "content_block_start":
            open_types[f["index"]] = f["content_block"]["type"]
        elif f["type"] == "content_block_delta":
            kind = {"thinking_delta": "thinking", "text_delta": "text", "input_json_delta": "tool_use"}[
                f["delta"]["type"]
            ]
            assert open_types[f["index"]] == kind
            seen_deltas.append(f["delta"]["type"])
        elif f["type"] == "content_block_stop":
            open_types.pop(f["index"])
    assert {"thinking_delta", "text_delta", "input_json_delta"} <= set(seen_deltas)
    assert seen_deltas.index("thinking_delta") < seen_deltas.index("text_delta") < seen_deltas.index("input_json_delta")
    assert any(isinstance(e, ToolCallStart) for e in events)
