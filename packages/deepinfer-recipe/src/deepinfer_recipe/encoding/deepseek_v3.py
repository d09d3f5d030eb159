# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""DeepSeek V3 and V3.1 chat formats.

Both follow the ``chat_template`` shipped in the models' ``tokenizer_config.json``:
system prompts (and developer turns) are joined with blank lines right after BOS; user
turns are ``<｜User｜>text``; assistant turns end with EOS; tool results are wrapped in
``<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>``.

V3: assistant turns open with ``<｜Assistant｜>``; a run of tool results is enclosed in
``<｜tool▁outputs▁begin｜>…<｜tool▁outputs▁end｜>`` (results separated by ``\\n``) and the
reply after it has no ``<｜Assistant｜>``; calls are
``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\nARGS\\n```<｜tool▁call▁end｜>``
separated by ``\\n``. Deliberate differences from the original V3 template, which has
state bugs: the block end ``<｜tool▁calls▁end｜><｜end▁of▁sentence｜>`` is written once
after the last call (the template writes it after every call but the first, so a single
call is never closed), and each tool-result run opens its own ``<｜tool▁outputs▁begin｜>``.
For two calls in the first tool turn the two agree exactly (tested).

V3.1: assistant turns after a user open with ``<｜Assistant｜></think>`` (history reasoning
is dropped); calls are ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>``
chained without separators; results follow each other without wrappers; the generation
header is ``<｜Assistant｜><think>`` (thinking) or ``<｜Assistant｜></think>``, and after tool
results nothing is appended (the model continues its turn). Tools are described in the
system prompt using the block documented on the DeepSeek-V3.1 model card.
"""

from __future__ import annotations

import json

from deepinfer_recipe.conversation import Conversation, Message, ToolSpec
from deepinfer_recipe.encoding import deepseek_tokens as T
from deepinfer_recipe.encoding.prompt import Prompt, PromptBuilder


def _system_prompt(conv: Conversation, b: PromptBuilder) -> None:
    first = True
    for msg in conv.messages:
        if msg.role in ("system", "developer"):
            if not first:
                b.control("\n\n")
            b.content(msg.content)
            first = False


def encode_deepseek_v3(conv: Conversation, *, add_generation_prompt: bool = True, add_bos: bool = True) -> Prompt:
    """Render a conversation in the DeepSeek-V3 (V3 / V3-0324 / R1 history) format.

    Reasoning in history is not rendered; ``conv.tools`` are not rendered (the V3
    template has no tool section: describe tools in the system prompt).

    Args:
        conv: The conversation.
        add_generation_prompt: Append ``<｜Assistant｜>`` after a final user turn.
        add_bos: Start with BOS.

    Returns:
        The prompt segments.
    """
    b = PromptBuilder()
    if add_bos:
        b.control(T.BOS)
    _system_prompt(conv, b)
    in_tools = False
    for msg in conv.messages:
        if msg.role == "user":
            b.control(T.USER).content(msg.content)
            in_tools = False
        elif msg.role == "tool":
            if not in_tools:
                b.control(T.TOOL_OUTPUTS_BEGIN + T.TOOL_OUTPUT_BEGIN)
            else:
                b.control("\n" + T.TOOL_OUTPUT_BEGIN)
            b.content(msg.content).control(T.TOOL_OUTPUT_END)
            in_tools = True
        elif msg.role == "assistant":
            b.control(T.TOOL_OUTPUTS_END if in_tools else T.ASSISTANT)
            in_tools = False
            b.content(msg.content)
            if msg.tool_calls:
                b.control(T.TOOL_CALLS_BEGIN)
                for i, call in enumerate(msg.tool_calls):
                    b.control(("\n" if i else "") + T.TOOL_CALL_BEGIN + "function" + T.TOOL_SEP)
                    b.content(call.name).control("\n```json\n").content(call.arguments)
                    b.control("\n```" + T.TOOL_CALL_END)
                b.control(T.TOOL_CALLS_END)
            b.control(T.EOS)
    if in_tools:
        b.control(T.TOOL_OUTPUTS_END)
    elif add_generation_prompt:
        b.control(T.ASSISTANT)
    return b.build()


def _v31_tools_block(tools: tuple[ToolSpec, ...], b: PromptBuilder) -> None:
    b.control("## Tools\nYou have access to the following tools:\n")
    for tool in tools:
        b.control("\n### ").content(tool.name).control("\nDescription: ").content(tool.description)
        b.control("\n\nParameters: ").content(json.dumps(tool.parameters, ensure_ascii=False))
        b.control("\n")
    b.control(
        "\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n"
        f"{T.TOOL_CALLS_BEGIN}{T.TOOL_CALL_BEGIN}tool_call_name{T.TOOL_SEP}tool_call_arguments"
        f"{T.TOOL_CALL_END}{{{{additional_tool_calls}}}}{T.TOOL_CALLS_END}\n\n"
        "Where:\n\n"
        "- `tool_call_name` must be an exact match to one of the available tools\n"
        "- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n"
        "- For multiple tool calls, chain them directly without separators or spaces\n"
    )


def encode_deepseek_v31(conv: Conversation, *, add_generation_prompt: bool = True, add_bos: bool = True) -> Prompt:
    """Render a conversation in the DeepSeek-V3.1 format.

    Args:
        conv: The conversation (``conv.thinking`` selects the generation header).
        add_generation_prompt: Append the assistant header after a final user turn.
        add_bos: Start with BOS.

    Returns:
        The prompt segments.
    """
    b = PromptBuilder()
    if add_bos:
        b.control(T.BOS)
    _system_prompt(conv, b)
    if conv.tools:
        if any(m.role in ("system", "developer") for m in conv.messages):
            b.control("\n\n")
        _v31_tools_block(conv.tools, b)
    after_user = False
    for msg in conv.messages:
        if msg.role == "user":
            b.control(T.USER).content(msg.content)
            after_user = True
        elif msg.role == "tool":
            b.control(T.TOOL_OUTPUT_BEGIN).content(msg.content).control(T.TOOL_OUTPUT_END)
            after_user = False
        elif msg.role == "assistant":
            if after_user:
                b.control(T.ASSISTANT + T.THINK_END)
            after_user = False
            _v31_assistant(msg, b)
    if add_generation_prompt and after_user:
        b.control(T.ASSISTANT + (T.THINK_START if conv.thinking else T.THINK_END))
    return b.build()


def _v31_assistant(msg: Message, b: PromptBuilder) -> None:
    b.content(msg.content)
    if msg.tool_calls:
        b.control(T.TOOL_CALLS_BEGIN)
        for call in msg.tool_calls:
            b.control(T.TOOL_CALL_BEGIN).content(call.name).control(T.TOOL_SEP)
            b.content(call.arguments).control(T.TOOL_CALL_END)
        b.control(T.TOOL_CALLS_END)
    b.control(T.EOS)
