# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Golden encodings of DeepSeek V3.1, V3.2, V4 and V4.1 (no official template is in reach).

The golden strings are written by hand from the format description in recipe.md §1.2-1.3
(and the V3.1 model card / V4 release-encoder rules it summarises): thinking on/off,
multi-turn, tools, tool results. Token ids are checked against the real DeepSeek-V3
tokenizer encoding the golden string whole (DSML markup is plain text there). Round trips
parse the encoded assistant turn back with the format's output parser.
"""

from __future__ import annotations

import pytest

from deepinfer_recipe import (
    Conversation,
    Message,
    ParsedOutput,
    ToolCall,
    ToolSpec,
    encode_chat,
    make_output_parser,
)

BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
U, A, S = "<｜User｜>", "<｜Assistant｜>", "<｜System｜>"
D = "｜DSML｜"

HELLO = (
    Message("user", "hello"),
    Message("assistant", "Hello! I am DeepSeek.", reasoning="greet back"),
    Message("user", "1+1=?"),
)
CALL = ToolCall("c1", "get_weather", '{"city": "Paris", "days": 2}')
TOOL = ToolSpec("get_weather", "Get weather", {"type": "object", "properties": {"city": {"type": "string"}}})
TOOL_JSON = (
    '{"name": "get_weather", "description": "Get weather", '
    '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}'
)
TOOL_FLOW = (
    Message("system", "Be brief."),
    Message("user", "Weather in Paris?"),
    Message("assistant", "", reasoning="need the tool", tool_calls=(CALL,)),
    Message("tool", "sunny", tool_call_id="c1"),
)


def _v4_tools_block(block: str, invoke: str, param: str) -> str:
    return (
        "\n\n## Tools\n\nYou have access to a set of tools to help answer the user's question. "
        f'You can invoke tools by writing a "<{D}{block}>" block like the following:\n\n'
        f'<{D}{block}>\n<{D}{invoke} name="$TOOL_NAME">\n'
        f'<{D}{param} name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{D}{param}>\n'
        f'...\n</{D}{invoke}>\n<{D}{invoke} name="$TOOL_NAME2">\n...\n</{D}{invoke}>\n</{D}{block}>\n\n'
        'String parameters should be specified as is and set `string="true"`. For all other types '
        '(numbers, booleans, arrays, objects), pass the value in JSON format and set `string="false"`.\n\n'
        "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning "
        "inside <think>...</think> BEFORE any tool calls or final response.\n\n"
        "Otherwise, output directly after </think> with tool calls or final response.\n\n"
        f"### Available Tool Schemas\n\n{TOOL_JSON}\n\n"
        "You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n"
    )


def _dsml_call(block: str, invoke: str, param: str) -> str:
    return (
        f'\n\n<{D}{block}>\n<{D}{invoke} name="get_weather">\n'
        f'<{D}{param} name="city" string="true">Paris</{D}{param}>\n'
        f'<{D}{param} name="days" string="false">2</{D}{param}>\n'
        f"</{D}{invoke}>\n</{D}{block}>"
    )


GOLDEN = {
    # recipe.md §1.3 example, verbatim: thinking mode drops the earlier reasoning.
    ("deepseek_v32", "hello_thinking"): (
        Conversation(HELLO, thinking=True),
        f"{BOS}{U}hello{A}</think>Hello! I am DeepSeek.{EOS}{U}1+1=?{A}<think>",
    ),
    ("deepseek_v4", "hello_thinking"): (
        Conversation(HELLO, thinking=True),
        f"{BOS}{U}hello{A}</think>Hello! I am DeepSeek.{EOS}{U}1+1=?{A}<think>",
    ),
    ("deepseek_v4", "hello_chat"): (
        Conversation(HELLO),
        f"{BOS}{U}hello{A}</think>Hello! I am DeepSeek.{EOS}{U}1+1=?{A}</think>",
    ),
    ("deepseek_v41", "hello_thinking"): (
        Conversation(HELLO, thinking=True),
        f"{BOS}{S}Reasoning Effort: 50 (range 1-100, the higher the value, the more thorough the reasoning)\n\n"
        f"{U}hello{A}</think>Hello! I am DeepSeek.{EOS}{U}1+1=?{A}<think>",
    ),
    ("deepseek_v41", "hello_chat_system"): (
        Conversation((Message("system", "Be kind."), *HELLO)),
        f"{BOS}{S}Be kind.{U}hello{A}</think>Hello! I am DeepSeek.{EOS}{U}1+1=?{A}</think>",
    ),
    # With tools on offer, reasoning is kept and every header opens thinking.
    ("deepseek_v4", "tools_thinking"): (
        Conversation(TOOL_FLOW, tools=(TOOL,), thinking=True),
        f"{BOS}Be brief."
        + _v4_tools_block("tool_calls", "invoke", "parameter")
        + f"{U}Weather in Paris?{A}<think>need the tool</think>"
        + _dsml_call("tool_calls", "invoke", "parameter")
        + f"{EOS}{U}<tool_result>sunny</tool_result>{A}<think>",
    ),
    ("deepseek_v41", "tools_chat"): (
        Conversation(TOOL_FLOW, tools=(TOOL,)),
        f"{BOS}{S}Be brief."
        + _v4_tools_block(" calls", " invoke", " parameter")
        + f"{U}Weather in Paris?{A}</think>"
        + _dsml_call(" calls", " invoke", " parameter")
        + f"{EOS}{U}<tool_result>sunny</tool_result>{A}</think>",
    ),
    ("deepseek_v32", "tools_chat"): (
        Conversation(TOOL_FLOW, tools=(TOOL,)),
        f"{BOS}Be brief."
        + _v4_tools_block("function_calls", "invoke", "parameter")
        + f"{U}Weather in Paris?{A}</think>"
        + _dsml_call("function_calls", "invoke", "parameter")
        + f"{EOS}{U}\n<result>sunny</result>{A}</think>",
    ),
    # V3.1: history reasoning dropped, calls chained, results unwrapped, no header after results.
    ("deepseek_v31", "tools_thinking"): (
        Conversation(TOOL_FLOW, thinking=True),
        f"{BOS}Be brief.{U}Weather in Paris?{A}</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather"
        '<｜tool▁sep｜>{"city": "Paris", "days": 2}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
        f"{EOS}<｜tool▁output▁begin｜>sunny<｜tool▁output▁end｜>",
    ),
    ("deepseek_v31", "hello_thinking"): (
        Conversation(HELLO, thinking=True),
        f"{BOS}{U}hello{A}</think>Hello! I am DeepSeek.{EOS}{U}1+1=?{A}<think>",
    ),
}


@pytest.mark.parametrize("key", sorted(GOLDEN), ids=lambda k: f"{k[0]}-{k[1]}")
def test_golden_text_and_ids(key, deepseek_v3_tok):
    conv, expected = GOLDEN[key]
    prompt = encode_chat(conv, key[0])
    assert prompt.text == expected
    assert deepseek_v3_tok.encode(prompt) == deepseek_v3_tok.encode_with_specials(expected)


def test_results_follow_call_order_and_merge_into_one_user_turn():
    calls = (ToolCall("a", "f", "{}"), ToolCall("b", "g", "{}"))
    conv = Conversation(
        (
            Message("user", "go"),
            Message("assistant", "", tool_calls=calls),
            Message("tool", "from g", tool_call_id="b"),
            Message("tool", "from f", tool_call_id="a"),
            Message("user", "and then?"),
        )
    )
    text = encode_chat(conv, "deepseek_v4").text
    assert text.endswith(
        f"{U}<tool_result>from f</tool_result>\n\n<tool_result>from g</tool_result>\n\nand then?{A}</think>"
    )


def test_reasoning_effort_rules():
    conv = Conversation((Message("user", "q"),), thinking=True, reasoning_effort="max")
    assert encode_chat(conv, "deepseek_v4").text.startswith(BOS + "Reasoning Effort: Absolute maximum")
    v41 = Conversation((Message("user", "q"),), thinking=True, reasoning_effort=80)
    assert encode_chat(v41, "deepseek_v41").text.startswith(f"{BOS}{S}Reasoning Effort: 80 (range 1-100")
    chat = Conversation((Message("user", "q"),), thinking=False, reasoning_effort="max")
    assert encode_chat(chat, "deepseek_v41").text == f"{BOS}{U}q{A}</think>"
    with pytest.raises(ValueError, match="reasoning_effort"):
        encode_chat(Conversation((Message("user", "q"),), reasoning_effort=101), "deepseek_v41")
    with pytest.raises(ValueError, match="reasoning_effort"):
        encode_chat(Conversation((Message("user", "q"),), reasoning_effort="low"), "deepseek_v4")
    with pytest.raises(ValueError, match="format"):
        encode_chat(conv, "deepseek_v9")


ASSISTANT_TURN = Message(
    "assistant",
    "Let me check 北京.",
    reasoning="The user wants weather.\nUse the tool.",
    tool_calls=(
        ToolCall("call_0", "get_weather", '{"city": "Paris", "days": 2, "opts": {"u": ["c", null]}}'),
        ToolCall("call_1", "noop", "{}"),
    ),
)


@pytest.mark.parametrize(
    "fmt,thinking",
    [
        ("deepseek_v31", False),
        ("deepseek_v32", True),
        ("deepseek_v4", True),
        ("deepseek_v41", True),
        ("deepseek_v4", False),
    ],
)
def test_round_trip_parse_of_encoded_assistant_turn(fmt, thinking):
    user = Message("user", "Weather?")
    tools = (TOOL, ToolSpec("noop"))
    prefix = encode_chat(Conversation((user,), tools=tools, thinking=thinking), fmt).text
    full = encode_chat(Conversation((user, ASSISTANT_TURN), tools=tools, thinking=thinking), fmt).text
    assert full.startswith(prefix)
    parser = make_output_parser(fmt, thinking=thinking, call_id=lambda i: f"call_{i}")
    out = ParsedOutput()
    out.add(parser.feed(full[len(prefix) :]) + parser.finish())
    assert not out.issues
    keeps_reasoning = thinking and fmt != "deepseek_v31"
    assert out.reasoning == (ASSISTANT_TURN.reasoning if keeps_reasoning else "")
    assert out.content == ASSISTANT_TURN.content
    assert [(c.id, c.name, c.arguments_dict()) for c in out.tool_calls] == [
        (c.id, c.name, c.arguments_dict()) for c in ASSISTANT_TURN.tool_calls
    ]
