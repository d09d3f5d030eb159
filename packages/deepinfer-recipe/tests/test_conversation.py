# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""Validation of the internal conversation model: bad input names the field."""

from __future__ import annotations

import pytest

from deepinfer_recipe import (
    ChatResult,
    Conversation,
    Message,
    ParsedOutput,
    ParserConfig,
    ToolCall,
    ToolChoice,
    ToolSpec,
)


@pytest.mark.parametrize(
    "build,field",
    [
        (lambda: Message("wizard", "x"), "role"),
        (lambda: Message("user", 5), "content"),
        (lambda: Message("tool", "x"), "tool_call_id"),
        (lambda: Message("user", "x", tool_calls=(ToolCall("a", "f"),)), "tool_calls"),
        (lambda: ToolCall("", "f"), "tool_call.id"),
        (lambda: ToolCall("a", "f", "[1]"), "tool_call.arguments"),
        (lambda: ToolCall("a", "f", "{oops"), "tool_call.arguments"),
        (lambda: ToolSpec(""), "tool.name"),
        (lambda: Conversation(()), "messages"),
        (lambda: Conversation((Message("tool", "r", tool_call_id="x"),)), "messages[0].tool_call_id"),
        (lambda: ToolChoice("sometimes"), "tool_choice"),
        (lambda: ToolChoice("named"), "tool_choice.name"),
        (lambda: ParserConfig(reasoning="maybe"), "reasoning"),
        (lambda: ParserConfig(tools="xml"), "tools"),
        (lambda: ChatResult.from_parsed(ParsedOutput(), "exploded"), "engine_finish"),
    ],
)
def test_bad_values_name_the_field(build, field):
    with pytest.raises(ValueError) as err:
        build()
    assert str(err.value).startswith(field)
