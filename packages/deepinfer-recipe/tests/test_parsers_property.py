# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Every parser gives the same merged events however its input is chunked.

Each case is hand-written model output with the intended result written next to it
(ground truth from the format specs in recipe.md §1.2, not from our encoder); the text
is fed whole, split at every position, one character at a time, and in random chunks.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepinfer_recipe import ParsedOutput, make_output_parser
from deepinfer_recipe.testing import check_chunking_invariance, parse_chunks

D = "｜DSML｜"
EOS = "<｜end▁of▁sentence｜>"


def _dsml(block: str, invoke: str, param: str) -> str:
    return (
        "I should submit.\n</think>Submitting now.\n\n"
        f"<{D}{block}>\n"
        f'<{D}{invoke} name="submit">\n'
        f'<{D}{param} name="shipping address" string="true">1 Main St\n北京市 "Apt" 5</{D}{param}>\n'
        f'<{D}{param} name=" string= mode " string="true">a < b > c</{D}{param}>\n'
        f'<{D}{param} name="count" string="false">3</{D}{param}>\n'
        f'<{D}{param} name="" string="true"></{D}{param}>\n'
        f'<{D}{param} name="options" string="false">{{"gift": true, "tags": ["x", "配送"]}}</{D}{param}>\n'
        f"</{D}{invoke}>\n"
        f'<{D}{invoke} name="ping">\n'
        f"</{D}{invoke}>\n"
        f"</{D}{block}>{EOS}"
    )


SUBMIT_ARGS = {
    "shipping address": '1 Main St\n北京市 "Apt" 5',
    " string= mode ": "a < b > c",
    "count": 3,
    "": "",
    "options": {"gift": True, "tags": ["x", "配送"]},
}

CASES = {
    "dsml_v32": (
        "deepseek_v32",
        True,
        _dsml("function_calls", "invoke", "parameter"),
        "I should submit.",
        "Submitting now.",
        [("submit", SUBMIT_ARGS), ("ping", {})],
    ),
    "dsml_v4": (
        "deepseek_v4",
        True,
        _dsml("tool_calls", "invoke", "parameter"),
        "I should submit.",
        "Submitting now.",
        [("submit", SUBMIT_ARGS), ("ping", {})],
    ),
    "dsml_v41": (
        "deepseek_v41",
        True,
        _dsml(" calls", " invoke", " parameter"),
        "I should submit.",
        "Submitting now.",
        [("submit", SUBMIT_ARGS), ("ping", {})],
    ),
    "deepseek_v3": (
        "deepseek_v3",
        False,
        "Let me look.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
        '```json\n{"city": "Paris", "unit": "°C"}\n```<｜tool▁call▁end｜>\n'
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>noop\n```json\n{}\n```<｜tool▁call▁end｜>"
        f"<｜tool▁calls▁end｜>{EOS}",
        "",
        "Let me look.",
        [("get_weather", {"city": "Paris", "unit": "°C"}), ("noop", {})],
    ),
    "deepseek_v31": (
        "deepseek_v31",
        True,
        "Need two calls.\n\n</think>On it.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>a<｜tool▁sep｜>"
        '{"x": [1, "y"], "s": "}"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>b<｜tool▁sep｜>{}<｜tool▁call▁end｜>'
        f"<｜tool▁calls▁end｜>{EOS}",
        "Need two calls.",
        "On it.",
        [("a", {"x": [1, "y"], "s": "}"}), ("b", {})],
    ),
    "hermes": (
        "qwen3",
        False,
        "<think>\nplan the call\n</think>\n\nLet me check.\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris", "n": {"a": [1, 2]}}}\n</tool_call>\n'
        '<tool_call>\n{"arguments": {}, "name": "noop"}\n</tool_call><|im_end|>',
        "plan the call",
        "Let me check.",
        [("get_weather", {"city": "Paris", "n": {"a": [1, 2]}}), ("noop", {})],
    ),
    "plain_reasoning": (
        "plain",
        False,
        "<think>\nfirst\n\nsecond\n</think>\n\nThe answer\nis 42.\n",
        "first\n\nsecond",
        "The answer\nis 42.\n",
        [],
    ),
}


def _factory(fmt: str, thinking: bool, stop=()):
    return lambda: make_output_parser(fmt, thinking=thinking, stop=stop, call_id=lambda i: f"call_{i}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_chunking_invariance_and_result(case):
    fmt, thinking, text, reasoning, content, calls = CASES[case]
    events = check_chunking_invariance(_factory(fmt, thinking), text)
    out = ParsedOutput()
    out.add(events)
    assert out.reasoning == reasoning
    assert out.content == content
    assert [(c.name, json.loads(c.arguments)) for c in out.tool_calls] == calls
    assert [c.id for c in out.tool_calls] == [f"call_{i}" for i in range(len(calls))]
    assert not out.issues
    assert D not in out.content and "<tool_call>" not in out.content


def test_stop_strings_chunking_invariance():
    """Stop strings end the answer; they are not matched inside reasoning."""
    text = "<think>\nSTOP is fine here\n</think>Hello wor STOP world! tail"
    events = check_chunking_invariance(_factory("plain", False, stop=("STOP", "world!")), text)
    out = ParsedOutput()
    out.add(events)
    assert out.reasoning == "STOP is fine here"
    assert out.content == "Hello wor "
    assert out.stop == "STOP"


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(sorted(CASES)), cuts=st.lists(st.integers(0, 10_000), max_size=12))
def test_random_chunkings(case, cuts):
    fmt, thinking, text, *_ = CASES[case]
    points = sorted({c % (len(text) + 1) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    assert parse_chunks(_factory(fmt, thinking), chunks) == parse_chunks(_factory(fmt, thinking), [text])


PIECES = [
    "<think>",
    "</think>",
    f"<{D}tool_calls>",
    f"</{D}tool_calls>",
    f'<{D}invoke name="f">',
    f"</{D}invoke>",
    f'<{D}parameter name="k" string="true">',
    f'<{D}parameter name="n" string="false">',
    f"</{D}parameter>",
    "<tool_call>",
    "</tool_call>",
    '{"name": "g", "arguments": {"a": 1}}',
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁calls▁end｜>",
    EOS,
    "a",
    "b",
    "\n",
    "<",
    "｜",
    "DSML",
    "1",
    "[",
    "]",
    '"',
    " ",
]


@settings(max_examples=300, deadline=None)
@given(
    fmt=st.sampled_from(["deepseek_v4", "deepseek_v31", "deepseek_v3", "qwen3", "plain"]),
    thinking=st.booleans(),
    parts=st.lists(st.sampled_from(PIECES), max_size=25),
    stops=st.lists(st.sampled_from(["a", "ab", "b\n", "DSML", "<", "1]"]), max_size=2),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
)
def test_fuzzed_markup_is_chunking_invariant(fmt, thinking, parts, stops, cuts):
    """Random mixes of markers, marker fragments and stop strings: any chunking agrees."""
    text = "".join(parts)
    make = _factory(fmt, thinking, stop=tuple(stops))
    whole = parse_chunks(make, [text])
    assert parse_chunks(make, list(text)) == whole
    points = sorted({c % (len(text) + 1) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    assert parse_chunks(make, chunks) == whole
